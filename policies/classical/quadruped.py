"""Classical quadruped controllers that speak the tasks' observation/action interface.

* :class:`StandController` - a PD stand: holds the default pose, standing up
  smoothly from wherever the joints are at reset (e.g. a crouch).
* :class:`TrotGait` - an open-loop trot generator, a reference motion and a
  sanity check for the servo model (not a tracking controller).

Both read joint positions from the observation block named ``joint_pos``
(relative to the default pose) and return actions in [-1, 1], mapped by the task
to ``q_target = q_default + action_scale * action``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from sim2real.sim.core.errors import ConfigError
from sim2real.sim.core.layout import layout_slices
from sim2real.sim.core.task import Task
from sim2real.sim.quadruped import constants as c
from sim2real.sim.quadruped.base import QuadrupedTask
from sim2real.sim.quadruped.constants import static_knee_offset
from sim2real.sim.quadruped.gait import TrotReference, leg_ik

__all__ = ["StandController", "TrotGait", "leg_ik"]


def _block(layout: Sequence[tuple[str, int]], name: str) -> slice:
    slices = layout_slices(layout)
    if name in slices:
        return slices[name]
    raise ValueError(f"observation layout has no {name!r} block: {[b for b, _ in layout]}")


class StandController:
    """PD stand with smooth stand-up.

    The servos are PD loops inside the simulator; this controller only moves their
    targets. At the first :meth:`act` after :meth:`reset` it records the joint
    positions and blends the desired pose to the default one over
    ``stand_up_seconds`` with a smoothstep (zero velocity at both ends). Once
    standing, the plain command would be the default pose, i.e. zero action; under
    the robot's weight the Kp-35 servos then sag about 0.3 rad and 6 cm, so by
    default the controller adds the static knee torque as a feed-forward target
    offset (:func:`~sim2real.sim.quadruped.constants.static_knee_offset`) and a proportional outer loop on the joint
    error (``outer_gain``). No integral term: with four feet on the ground the
    default joint angles are not exactly reachable after a foot slips, and an
    integrator would wind up against friction.

    Args:
        observation_layout: The task's ``observation_layout()``.
        num_envs: Batch size of the observations passed to :meth:`act`.
        action_scale: The task's ``action_scale`` (rad per unit action).
        control_dt: The task's control period (s).
        stand_up_seconds: Duration of the blend from the initial pose.
        gravity_compensation: Add the static knee offsets.
        outer_gain: Proportional gain on the joint error (0: plain servo targets).
    """

    def __init__(
        self,
        observation_layout: Sequence[tuple[str, int]],
        num_envs: int = 1,
        action_scale: float = c.ACTION_SCALE,
        control_dt: float = c.CONTROL_DT,
        stand_up_seconds: float = 1.0,
        gravity_compensation: bool = True,
        outer_gain: float = 0.5,
    ) -> None:
        if action_scale <= 0 or control_dt <= 0 or stand_up_seconds <= 0 or outer_gain < 0:
            raise ValueError("action_scale, control_dt, stand_up_seconds must be positive and outer_gain >= 0")
        self.joint_pos = _block(observation_layout, "joint_pos")
        self.num_envs = num_envs
        self.action_scale = action_scale
        self.dt = control_dt
        self.stand_up_seconds = stand_up_seconds
        self.offset = static_knee_offset() if gravity_compensation else np.zeros(c.NUM_JOINTS)
        self.outer_gain = outer_gain
        self.start = np.zeros((num_envs, c.NUM_JOINTS))
        self.elapsed = np.zeros(num_envs)
        self._fresh = np.ones(num_envs, dtype=bool)

    def reset(self, env_ids: Sequence[int] | np.ndarray | None = None) -> None:
        """Start over (stand up again from the next observed pose) for ``env_ids`` (default all)."""
        ids = slice(None) if env_ids is None else np.asarray(env_ids)
        self._fresh[ids] = True
        self.elapsed[ids] = 0.0

    def act(self, obs: np.ndarray) -> np.ndarray:
        """Actions ``[B, 12]`` for observations ``[B, O]``."""
        obs = np.atleast_2d(obs)
        if obs.shape[0] != self.num_envs:
            raise ValueError(f"expected {self.num_envs} observations, got {obs.shape[0]}")
        q = obs[:, self.joint_pos]  # relative to the default pose
        self.start[self._fresh] = q[self._fresh]
        self._fresh[:] = False
        s = np.clip(self.elapsed / self.stand_up_seconds, 0.0, 1.0)[:, None]
        blend = s * s * (3.0 - 2.0 * s)
        desired = self.start * (1.0 - blend)
        # The load (and so the needed offset) grows as the legs take the weight.
        command = desired + blend * self.offset + self.outer_gain * (desired - q)
        self.elapsed += self.dt
        return np.clip(command / self.action_scale, -1.0, 1.0)


class TrotGait:
    """Open-loop trot: diagonal leg pairs (FR+RL, FL+RR) swing in antiphase.

    The trot reference of the ``gait_residual`` action mode
    (:class:`~sim2real.sim.quadruped.gait.TrotReference`) at full amplitude for a fixed
    forward speed, with the plain standing knee offset: in stance each foot slides back
    by ``speed / (2 * frequency)`` at the default stance height, in swing it returns
    on an arc ``step_height`` high. A reference motion with no feedback; it walks
    roughly straight on flat ground.
    """

    def __init__(
        self,
        num_envs: int = 1,
        speed: float = 0.4,
        frequency_hz: float = 2.5,
        step_height: float = 0.07,
        action_scale: float = c.ACTION_SCALE,
        control_dt: float = c.CONTROL_DT,
    ) -> None:
        if frequency_hz <= 0 or not 0 <= step_height <= 0.12:
            raise ValueError("frequency_hz must be positive and step_height in [0, 0.12] m")
        self.num_envs = num_envs
        self.action_scale = action_scale
        self.dt = control_dt
        self.reference = TrotReference(num_envs, frequency_hz, step_height, knee_load_shift=0.0)
        self.command = np.tile([speed, 0.0, 0.0], (num_envs, 1))
        self.reset()

    def reset(self, env_ids: Sequence[int] | np.ndarray | None = None) -> None:
        ids = np.arange(self.num_envs) if env_ids is None else np.asarray(env_ids)
        self.reference.reset(ids, 0.0)
        self.reference.amplitude[ids] = 1.0  # stepping from the first action

    def act(self, obs: np.ndarray) -> np.ndarray:
        """Actions ``[B, 12]``; the observation is only used for its batch size."""
        offsets = self.reference.joint_offsets(self.command)
        self.reference.advance(self.dt, np.ones(self.num_envs, dtype=bool))
        return np.clip(offsets / self.action_scale, -1.0, 1.0)


def controller_for(task: Task, num_envs: int = 1) -> StandController:
    """The quadruped's classical controller for ``task``: the PD stand, with the task's
    action scale and control period.

    Raises:
        ConfigError: a mode other than ``joint_pos`` (in ``gait_residual`` a zero action
            is the trot, not a stand).
    """
    if not isinstance(task, QuadrupedTask) or task.action_mode != "joint_pos":
        raise ConfigError("action_mode", f"the quadruped's stand controller acts in joint_pos, not "
                                         f"{task.robot} {task.action_mode!r}")
    return StandController(task.observation_layout(), num_envs=num_envs, action_scale=task.action_scale,
                           control_dt=float(task.control_dt))


TEACHER = "QuadrupedVelocityTeacher"
"""The shipped privileged teacher (``policies/baselines/``): the quadruped's oracle."""


class TeacherOracle:
    """A privileged teacher as an oracle: it reads the present observation and the
    simulator's privileged state (friction, payload, CoM, motor strength, true
    velocity, contacts), in a task run under the controller options it was trained with
    (its action scale, trot reference, servo gains; no history), whatever the studied
    policy's are: under another policy's trot reference or action scale a teacher is no
    oracle (measured: 66 % where it scores 91 %)."""

    privileged_inputs = True

    def __init__(self, teacher: Any) -> None:
        self.teacher = teacher
        own = teacher.metadata.get("task_options") or {}
        self.own_options = {k: v for k, v in own.items() if k in QuadrupedTask.CONTROLLER_OPTIONS}

    def options_for(self, task_options: dict[str, Any]) -> dict[str, Any]:
        """The task options this oracle runs under in a study with ``task_options``: the
        study's episode (commands, terrain, sensing), the teacher's controller options."""
        episode = {k: v for k, v in task_options.items() if k not in QuadrupedTask.CONTROLLER_OPTIONS}
        return {**episode, **self.own_options}

    def __call__(self, inputs: np.ndarray) -> np.ndarray:
        return self.teacher(inputs)


def oracle_for(task: Task, num_envs: int = 1) -> tuple[TeacherOracle, str] | None:
    """The shipped teacher where it reads ``task``'s observation under its own controller
    options (QuadrupedVelocity: the same blocks), else None."""
    from sim2real.policies import BASELINES_DIR
    from sim2real.policies.deploy import OnnxPolicy

    folder = BASELINES_DIR / TEACHER
    if not isinstance(task, QuadrupedTask) or not (folder / "policy.onnx").is_file():
        return None
    oracle = TeacherOracle(OnnxPolicy(folder))
    try:
        own = type(task)(num_envs=1, action_mode=task.action_mode, **oracle.own_options)
    except ConfigError:
        return None
    layout = [(str(n), int(s)) for n, s in own.observation_layout()]
    privileged = [("privileged." + n, int(s)) for n, s in own.privileged_layout()]
    if oracle.teacher.observation_layout != layout + privileged or oracle.teacher.action_mode != task.action_mode:
        return None
    return oracle, oracle.teacher.action_mode
