"""The tracking table of a quadruped velocity policy in a foreign MJCF of the robot, our
model's rows beside it: ``sim2real sim2sim POLICY --model FOREIGN.xml``.

Both models run the policy exactly as the ROS 2 policy node runs it on a robot: the
model's joint states and odometry become :class:`Measurements`, the deployment's
observation builder (``ros_nodes.robots.ObservationBuilder``, passed in by the caller:
this layer may not import the ROS layer) rebuilds the observation from them, and the
action becomes joint targets through the task's ``deploy_command`` and the robot's
command space (:mod:`sim2real.policies.safety.spaces`). The targets go to each model's
own actuators (:class:`~sim2real.sim.quadruped.foreign.ForeignQuadruped`). Our model runs
through the same path, so the rows differ only by the model. Episode ``i`` of a command
starts from the same perturbation in both models (one generator per command and episode).

With a :class:`~sim2real.sim.quadruped.lowstate.LowstateConfig` the policy's
``base_lin_vel`` is not the simulator's truth but the robot's own estimate: the Go2
backend's leg odometry fed each physics step with the lowstate a Go2 sends (IMU, joints,
foot forces, with their noise and latency; :class:`~sim2real.sim.quadruped.lowstate.EstimatorInTheLoop`),
and each row reports the estimate's error against the truth.
"""

from __future__ import annotations

import collections
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

import mujoco
import numpy as np

from sim2real.policies.safety.spaces import command_space
from sim2real.policies.studies.tracking import GRID, Grid, TrackingRow
from sim2real.sim.core.deployment import Measurements
from sim2real.sim.core.errors import ConfigError
from sim2real.sim.core.task import Task
from sim2real.sim.quadruped import constants as C
from sim2real.sim.quadruped.base import MOVING_THRESHOLD, QuadrupedTask
from sim2real.sim.quadruped.estimator import EstimatorConfig
from sim2real.sim.quadruped.foreign import KNEES, ForeignQuadruped
from sim2real.sim.quadruped.frames import rotation_matrices
from sim2real.sim.quadruped.gait_metrics import SwingPeaks, cost_of_transport
from sim2real.sim.quadruped.lowstate import EstimatorInTheLoop, LowstateConfig


class ObservationSource(Protocol):
    """Measurements -> the policy's observation (the policy node's ``ObservationBuilder``)."""

    task: Task

    def missing(self, m: Measurements) -> list[str]: ...

    def build(self, m: Measurements, last_action: np.ndarray) -> np.ndarray: ...


@dataclass
class ModelTrackingRow(TrackingRow):
    model: str
    """Which model the row ran in (``ours`` or the foreign model's name)."""
    trunk_height_m: float
    """Mean height of the trunk's origin above the floor over the measured half."""
    foot_clearance_m: float | None
    """Mean peak height of a foot's lowest point over its swings (None: no swing)."""
    torque_rms_nm: float
    """RMS joint torque over joints and the measured half (N m)."""
    knee_torque_rms_max_nm: float
    """The largest of the four knees' RMS torques (N m)."""
    cost_of_transport: float | None = None
    """Mechanical power over ``m g v`` (None: no planar speed commanded, or every episode fell)."""
    stalled: int = 0
    """Episodes without a fall that reached less than half the command along its largest
    axis (a policy that never starts a turn from a stand, say)."""
    estimate_error_m_s: float | None = None
    """RMS over the measured half of the horizontal error of the estimated base velocity the
    policy observed (m/s; None: it observed the truth)."""


@dataclass
class EpisodeSums:
    """One episode's sums over its measured (second) half."""

    fell: bool = False
    steps: int = 0
    """Control steps measured."""
    velocity: np.ndarray = field(default_factory=lambda: np.zeros(3))
    """Body-frame vx, vy and yaw rate."""
    height: float = 0.0
    power: float = 0.0
    speed: float = 0.0
    """Horizontal speed (m/s)."""
    slip: float = 0.0
    torque_sq: np.ndarray = field(default_factory=lambda: np.zeros(C.NUM_JOINTS))
    swing_sum: float = 0.0
    """Sum of each swing's peak foot height (m)."""
    swings: int = 0
    estimate_sq: float | None = None
    """Sum of the squared horizontal error of the estimated base velocity (None: the truth)."""


def run_episode(policy: Any, robot: ForeignQuadruped, source: ObservationSource, command: np.ndarray,
                seconds: float, rng: np.random.Generator, lowstate: LowstateConfig | None = None,
                estimator: EstimatorConfig | None = None, latency_steps: int = 0) -> EpisodeSums:
    """One episode of the policy node's loop, ``command`` held; sums over the second half.
    With ``lowstate``, the policy observes the robot's estimated base velocity. With
    ``latency_steps``, the motors get the action of that many control steps ago (zeros
    before the first), as the training randomization's ``latency_steps`` delays it."""
    task = source.task
    if not isinstance(task, QuadrupedTask):
        raise ConfigError("policy", f"{task.robot}/{task.name} is not a quadruped task")
    space = command_space("quadruped", policy.action_mode, getattr(task, "action_scale", None))
    data = mujoco.MjData(robot.model)
    robot.reset(data, rng, task.init_joint_noise, task.init_velocity_noise)
    last = np.zeros(policy.action_size)
    delayed = collections.deque([np.zeros(policy.action_size)] * latency_steps)
    steps, ep, swings = int(round(seconds / policy.control_dt)), EpisodeSums(), SwingPeaks(1)
    onboard = None if lowstate is None else EstimatorInTheLoop(robot, lowstate, estimator, rng)
    if onboard is not None:
        onboard.start(data)
        ep.estimate_sq = 0.0
    m = robot.measure(data)
    for k in range(steps):
        m.cmd_vel = command
        missing = source.missing(m)
        if missing:
            raise ConfigError("policy", f"its observation needs {missing}, which a bare model does not provide")
        seen = m if onboard is None else replace(m, base_lin_vel=onboard.velocity)
        obs = source.build(seen, last)
        action = np.asarray(policy(obs.astype(np.float32)), dtype=np.float64).reshape(-1)
        last = np.clip(np.nan_to_num(action), -1.0, 1.0)
        delayed.append(action)
        robot.step_control(data, task.deploy_command(delayed.popleft(), obs, space.action_to_command),
                           None if onboard is None else onboard.physics_step)
        m = robot.measure(data)
        if robot.fallen(data, m):
            ep.fell = True
            break
        measuring = k >= steps // 2
        height, contact, speed = robot.foot_state(data)
        swings.update(height[None], contact[None], measuring)
        if not measuring:
            continue
        assert m.base_quat is not None and m.base_lin_vel is not None and m.base_ang_vel is not None
        assert m.base_pos is not None and m.joint_effort is not None and m.joint_vel is not None
        body_vel = rotation_matrices(m.base_quat[None])[0].T @ m.base_lin_vel
        ep.velocity += np.r_[body_vel[:2], m.base_ang_vel[2]]
        ep.height += float(m.base_pos[2])
        ep.power += float(np.abs(m.joint_effort * m.joint_vel).sum())
        ep.speed += float(np.hypot(*m.base_lin_vel[:2]))
        ep.slip += float((speed * contact).sum() / max(int(contact.sum()), 1))
        ep.torque_sq += m.joint_effort**2
        if onboard is not None and ep.estimate_sq is not None:
            ep.estimate_sq += float(np.sum((onboard.velocity[:2] - m.base_lin_vel[:2]) ** 2))
        ep.steps += 1
    ep.swing_sum, ep.swings = float(swings.total[0]), int(swings.count[0])
    return ep


def _row(name: str, command: tuple[float, float, float], model: str, episodes: list[EpisodeSums],
         mass_kg: float) -> ModelTrackingRow:
    ok = [e for e in episodes if not e.fell and e.steps]
    nan = float("nan")
    mean = (lambda f: float(np.mean([f(e) for e in ok]))) if ok else (lambda f: nan)
    achieved = np.mean([e.velocity / e.steps for e in ok], axis=0) if ok else np.full(3, nan)
    error = np.abs(achieved - np.asarray(command))
    big = int(np.argmax(np.abs(command)))
    rms = np.sqrt(np.mean([e.torque_sq / e.steps for e in ok], axis=0)) if ok else np.full(C.NUM_JOINTS, nan)
    swings = sum(e.swings for e in ok)
    moving = bool(np.any(np.abs(command) > MOVING_THRESHOLD))
    stalled = sum(1 for e in ok if moving and e.velocity[big] / e.steps / command[big] < 0.5)
    translating = bool(np.any(np.abs(command[:2]) > MOVING_THRESHOLD))  # turning in place transports nothing
    transport = (float(cost_of_transport(mean(lambda e: e.power / e.steps), mass_kg, mean(lambda e: e.speed / e.steps)))
                 if ok and translating else None)
    return ModelTrackingRow(
        name, list(command), [round(float(x), 4) for x in achieved], [round(float(x), 4) for x in error],
        None if not any(command) else float(error[big] / abs(command[big])), sum(e.fell for e in episodes),
        len(episodes), round(mean(lambda e: e.power / e.steps), 2), round(mean(lambda e: e.slip / e.steps), 4),
        model, round(mean(lambda e: e.height / e.steps), 4),
        round(sum(e.swing_sum for e in ok) / swings, 4) if swings and moving else None,
        round(float(np.sqrt(np.mean(rms**2))), 3), round(float(np.max(rms[KNEES])), 3),
        None if transport is None else round(transport, 3), stalled, _estimate_error(episodes))


def _estimate_error(episodes: list[EpisodeSums]) -> float | None:
    """RMS horizontal estimate error over every measured step of the row (falls included:
    an estimate that fails may be why), None when the policy observed the truth."""
    sums = [e for e in episodes if e.estimate_sq is not None and e.steps]
    if not sums:
        return None
    return round(math.sqrt(sum(e.estimate_sq or 0.0 for e in sums) / sum(e.steps for e in sums)), 4)


def policy_gains(policy: Any) -> tuple[np.ndarray, np.ndarray]:
    """The PD gains the policy was trained with (an imported policy's own ``servo_kp`` /
    ``servo_kd``, else our servos' Kp 35 / Kd 1), for a model with torque motors."""
    options = policy.metadata.get("task_options") or {}

    def gains(value: Any, default: float) -> np.ndarray:
        return np.broadcast_to(np.asarray(default if value is None else value, dtype=float), (C.NUM_JOINTS,)).copy()

    return gains(options.get("servo_kp"), C.KP), gains(options.get("servo_kd"), C.KV)


def our_model(policy: Any) -> ForeignQuadruped:
    """Our own Go2 model (the policy's task's flat world), driven through the same path."""
    from sim2real.sim.core.registry import REGISTRY

    task = REGISTRY.get(policy.task)(num_envs=1, action_mode=policy.action_mode,
                                     **dict(policy.metadata.get("task_options") or {}))
    kp, kd = policy_gains(policy)
    return ForeignQuadruped(task.build_model(), policy.control_dt, kp, kd, source="our model")


def foreign_tracking_table(
    policy: Any, models: Sequence[tuple[str, ForeignQuadruped]], make_source: Callable[[], ObservationSource],
    episodes: int = 5, seconds: float = 8.0, seed: int = 30_000, on_row: Callable[[str], None] = lambda _: None,
    lowstate: LowstateConfig | None = None, estimator: EstimatorConfig | None = None, grid: Grid = GRID,
    latency_steps: int = 0,
) -> list[ModelTrackingRow]:
    """Per command of ``grid`` (:data:`~sim2real.policies.studies.tracking.GRID`), one row
    per model (in ``models``' order), each over the same ``episodes`` seeded starts.

    Args:
        policy: An :class:`~sim2real.policies.deploy.OnnxPolicy` of a quadruped velocity task.
        models: (name, model) pairs, ours first by convention.
        make_source: A fresh observation builder for the policy's task (one per episode:
            an episode starts from rest, as an activated policy node does).
        lowstate, estimator: The policy observes the robot's estimated base velocity
            (:func:`run_episode`); None: the simulator's truth.
        latency_steps: Control steps between the policy's action and the motors, in
            every model (:func:`run_episode`).
    """
    rows = []
    for index, (name, command) in enumerate(grid):
        on_row(name)
        for model_name, robot in models:
            runs = [run_episode(policy, robot, make_source(), np.asarray(command, dtype=float), seconds,
                                np.random.default_rng([seed, index, i]), lowstate, estimator, latency_steps)
                    for i in range(episodes)]
            rows.append(_row(name, command, model_name, runs, robot.mass))
    return rows
