"""The contract between a robot task and the simulation engine.

A task is written *batch-first*: every method that runs on the control path
receives arrays with a leading batch dimension ``B`` (the number of
environments). The same task code therefore serves the single Gymnasium env
(``B == 1``, stepped with ``mj_step``) and the batched vector env (``B == N``,
stepped for all environments at once through ``mujoco.rollout`` worker threads,
with no Python round trip per physics step).

Anything a task reads on the control path must be derivable from the physics
*state* (``qpos``, ``qvel``, ``act``, mocap poses) or from ``sensordata``:
the batched backend never materialises an ``MjData`` per environment. Positions
of sites and bodies therefore come from ``framepos``/``framequat`` sensors
declared in the model, contact forces from ``touch``/``force`` sensors.

Timing convention: like ``mj_step`` itself, ``sensordata`` after a physics step
holds values computed at the *start* of the last physics step (one physics
step, 1-5 ms, older than ``qpos``/``qvel``). Tasks treat sensors accordingly.
"""

from __future__ import annotations

import abc
import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import mujoco
import numpy as np

from sim2real.sim.core.errors import ConfigError
from sim2real.sim.core.history import ObservationHistory
from sim2real.sim.core.layout import SignedPermutation
from sim2real.sim.core.randomization import DomainRandomization


@dataclass
class PhysicsBatch:
    """Views on the physics state of ``B`` environments after the latest step.

    The arrays are views into the engine's buffers: read them, never keep them
    across steps, and only write through :meth:`Task.reset_env` (resets) or the
    engine's perturbation hooks.
    """

    qpos: np.ndarray
    """Generalised positions, ``[B, nq]``."""
    qvel: np.ndarray
    """Generalised velocities, ``[B, nv]``."""
    act: np.ndarray
    """Actuator activations (e.g. first-order motor states), ``[B, na]``."""
    sensordata: np.ndarray
    """Sensor readings, ``[B, nsensordata]`` (see module docstring for timing)."""
    mocap_pos: np.ndarray
    """Mocap body positions, ``[B, nmocap, 3]``."""
    mocap_quat: np.ndarray
    """Mocap body orientations (w, x, y, z), ``[B, nmocap, 4]``."""
    time: np.ndarray
    """Simulation time of each environment in seconds, ``[B]``."""
    last_action: np.ndarray
    """The action the policy sent at the latest control step, clipped to [-1, 1]
    but *before* the randomized actuation latency, ``[B, A]`` (zeros after reset).
    Observations and action-rate penalties use this, not the delayed action."""

    @property
    def batch_size(self) -> int:
        return self.qpos.shape[0]


BatchRng = np.random.Generator | Sequence[np.random.Generator]
"""Random draws inside episodes: the engine's one stream for the whole batch (training),
or one generator per environment, its episode's own (paired evaluation: an episode's
draws then do not depend on which other environments share its batch)."""


def draw_rows(rng: BatchRng, env_ids: np.ndarray, draw: Callable[[np.random.Generator, int], np.ndarray]) -> np.ndarray:
    """``draw(generator, n)`` gives ``n`` rows; rows for ``env_ids``: one call on a shared
    stream, or one row from each environment's own generator."""
    if isinstance(rng, np.random.Generator):
        return draw(rng, len(env_ids))
    rows = [draw(rng[int(i)], 1)[0] for i in env_ids]
    return np.stack(rows) if rows else draw(np.random.default_rng(0), 0)


@dataclass
class StepResult:
    """What a task reports after each control step, per environment."""

    reward: np.ndarray
    """Scalar reward, ``[B]``."""
    terminated: np.ndarray
    """True where the episode ended in a terminal state (fall, crash, goal reached
    when the task ends on success). Time limits are *not* termination: the
    engine sets ``truncated`` from :attr:`Task.episode_seconds`."""
    success: np.ndarray
    """True where the episode would count as solved if it ended at this step,
    ``[B]`` bool. The engine reports the value at the episode's last step as
    ``info["is_success"]`` (the Stable-Baselines3 convention); tasks whose success
    depends on history (e.g. "within 10 cm for the last 5 s") keep per-env
    counters that :meth:`Task.reset_env` clears."""
    metrics: dict[str, np.ndarray]
    """Task metrics, each ``[B]`` (e.g. ``ee_distance``, ``vel_tracking_error``)."""


class Task(abc.ABC):
    """One robot doing one task. Subclass per task; register in the robot's
    ``__init__.py``.

    Class attributes describe the task for the registry and ``sim2real list``.
    """

    robot: ClassVar[str]
    """Robot class: ``"arm"``, ``"quadruped"`` or ``"drone"``."""
    name: ClassVar[str]
    """Task name, e.g. ``"reach"``; the Gymnasium id is built from robot and name."""
    action_modes: ClassVar[tuple[str, ...]]
    """Supported action modes; the first is the default."""
    physics_dt: ClassVar[float]
    """MuJoCo timestep in seconds (written into the model)."""
    control_dt: ClassVar[float]
    """Policy period in seconds; must be a whole multiple of ``physics_dt``."""
    inner_dt: float | None = None
    """Period of an inner controller (e.g. the drone's body-rate loop) run by
    :meth:`inner_control`; ``None`` when the actuators need no inner loop. May be
    set per instance in ``__init__`` when only some action modes need it."""
    episode_seconds: ClassVar[float] = 10.0
    """Episode length; reaching it truncates (never terminates) the episode."""
    render_camera: ClassVar[str | None] = None
    """Default camera for videos and pictures."""
    dr_class: ClassVar[type[DomainRandomization]] = DomainRandomization
    """The robot's domain-randomization dataclass."""
    push_dofs: ClassVar[tuple[int, int] | None] = None
    """``qvel`` slice ``(start, stop)`` that random pushes kick (e.g. ``(0, 2)``:
    the free joint's world-frame x/y velocity); ``None``: the robot is never pushed."""
    history: ObservationHistory | None = None
    """The observation history of tasks that keep one (see :meth:`record_observation`)."""
    wants_substeps: bool = False
    """Set (per instance) when the task integrates quantities over every physics
    step, e.g. the energy a damper dissipates: the engine then calls
    :meth:`on_substeps` with the sensor readings of each physics step."""

    task_options: ClassVar[tuple[str, ...]] = ()
    """Options a task reads from :attr:`options` rather than naming them in its signature."""

    @classmethod
    def known_options(cls) -> list[str]:
        """Every option the task accepts: its classes' ``__init__`` parameters and
        :attr:`task_options`."""
        named = {p for k in cls.__mro__ if isinstance(k, type) and issubclass(k, Task)
                 for p in inspect.signature(k.__init__).parameters}
        return sorted((named - {"self", "num_envs", "action_mode", "options"}) | set(cls.task_options))

    def __init__(self, num_envs: int, action_mode: str | None = None, **options: Any) -> None:
        mode = action_mode or self.action_modes[0]
        if mode not in self.action_modes:
            raise ConfigError(
                "action_mode",
                f"{mode!r} is not supported by {self.robot}/{self.name}; choose one of {list(self.action_modes)}",
            )
        known = self.known_options()
        unknown = sorted(set(options) - set(known))
        if unknown:  # a misspelt option silently ignored would train or evaluate something else
            raise ConfigError(unknown[0], f"unknown option for {self.robot}/{self.name}; known: {known}")
        self.num_envs = num_envs
        self.action_mode = mode
        self.options = options

    # -- model -------------------------------------------------------------
    @abc.abstractmethod
    def build_model(self) -> mujoco.MjModel:
        """Compile the model for this task and action mode (called once)."""

    # -- spaces --------------------------------------------------------------
    @abc.abstractmethod
    def observation_layout(self) -> list[tuple[str, int]]:
        """Named blocks of the policy observation in order: ``[(name, size), ...]``."""

    @abc.abstractmethod
    def action_layout(self) -> list[tuple[str, int]]:
        """Named blocks of the action vector in order. Actions are in ``[-1, 1]``."""

    def privileged_layout(self) -> list[tuple[str, int]]:
        """Named blocks of the privileged (critic-only) state in ``info``."""
        return []

    def mirror(self) -> tuple[SignedPermutation, SignedPermutation]:
        """The robot's left-right mirror of (observation, action): what the same robot
        sees and should do in the situation reflected through its sagittal plane (a
        symmetric robot's policy is equivariant under it). A task without one refuses."""
        raise ConfigError("mirror", f"{self.robot}/{self.name} has no left-right mirror")

    def observation_noise(self) -> np.ndarray:
        """Per-element standard deviation of observation noise at ``scale == 1``."""
        return np.zeros(sum(n for _, n in self.observation_layout()))

    # -- episode -------------------------------------------------------------
    @abc.abstractmethod
    def reset_env(self, env_id: int, model: mujoco.MjModel, data: mujoco.MjData, rng: np.random.Generator) -> None:
        """Reset environment ``env_id``: write its initial ``qpos``/``qvel``/mocap
        into ``data`` (already ``mj_resetData``-ed for ``model``) and sample its
        task variables (targets, commands) into the task's per-env arrays. The
        engine runs ``mj_forward`` afterwards."""

    @abc.abstractmethod
    def action_to_ctrl(self, action: np.ndarray, phys: PhysicsBatch) -> np.ndarray:
        """Map clipped actions ``[B, A]`` in ``[-1, 1]`` to actuator controls ``[B, nu]``
        (held over the control period, or the setpoint of :meth:`inner_control`)."""

    def inner_control(self, setpoint: np.ndarray, phys: PhysicsBatch) -> np.ndarray:
        """Inner loop run every :attr:`inner_dt`: from the control-step setpoint to
        actuator controls. Only called when ``inner_dt`` is set."""
        return setpoint

    @abc.abstractmethod
    def observe(self, phys: PhysicsBatch) -> np.ndarray:
        """Noise-free policy observation ``[B, O]`` following :meth:`observation_layout`."""

    def record_observation(self, obs: np.ndarray, phys: PhysicsBatch) -> None:
        """The observation ``[B, O]`` the policy was given (after noise), once it is
        final; tasks with an observation history remember it. Called by the engine
        and by deployment's observation builder."""
        if self.history is not None:
            self.history.record(obs, phys.time)

    def privileged(self, phys: PhysicsBatch) -> np.ndarray:
        """Privileged state ``[B, P]`` for asymmetric critics."""
        return np.zeros((phys.batch_size, 0))

    @abc.abstractmethod
    def evaluate(self, phys: PhysicsBatch, action: np.ndarray) -> StepResult:
        """Reward, termination, success and metrics after a control step.
        ``action`` is the policy's action (as in ``phys.last_action``); the
        actuators may have received an older one under latency."""

    def on_substeps(self, sensordata: np.ndarray, dt: float) -> None:
        """Sensor readings ``[B, nstep, nsensordata]`` of every physics step just
        simulated (``dt`` each; MuJoCo's values at the start of each step, as the
        controller saw them). Called only when :attr:`wants_substeps` is set, before
        :meth:`evaluate`, possibly several times per control step (inner loops)."""

    def after_step(self, phys: PhysicsBatch, rng: BatchRng) -> None:
        """Update task variables after a control step (resample commands, advance
        waypoints). Draw with :func:`draw_rows`: ``rng`` is the engine's one stream or,
        in a paired evaluation, one generator per environment. Default: nothing."""

    def compose_action(self, action: np.ndarray, phys: PhysicsBatch) -> np.ndarray:
        """The action sent to the actuators for the policy's clipped ``action [B, A]``,
        before the randomized actuation latency. Default: the policy's action. Residual
        modes add a state-feedback reference here, so the latency delays the sum, as on
        a robot, where the policy node sends the sum."""
        return action

    def deploy_command(
        self, action: np.ndarray, obs: np.ndarray, to_command: Callable[[np.ndarray], np.ndarray]
    ) -> np.ndarray:
        """Deployment (one env, called once per control period by the policy node): the
        command for the policy's ``action [A]`` given its observation ``obs [O]``;
        ``to_command`` is the robot's affine action-to-command map. Default:
        ``to_command(action)``. Modes with a reference (the quadruped's trot, the
        drone's PID) add it here exactly as :meth:`compose_action` or
        :meth:`action_to_ctrl` do in simulation."""
        return to_command(action)

    def task_state(self, env_id: int) -> dict[str, Any]:
        """The sampled task variables of one env (targets, commands) for ``info``."""
        return {}

    def course(self, env_id: int) -> dict[str, Any] | None:
        """The map of one env's scene as its robot's planner reads it (JSON-ready; see
        :meth:`~sim2real.sim.core.deployment.RobotDeployment.plan`), for tasks whose
        policy follows a planned path; None for the others."""
        return None
