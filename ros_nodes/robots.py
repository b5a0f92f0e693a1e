"""What the deployment layer knows per robot: its default task, the joints on
``joint_states``, which state topics it publishes, and how a policy observation is
rebuilt from those topics.

The observation is *not* recomputed here: :class:`ObservationBuilder` writes the
measurements into a one-environment :class:`~sim2real.sim.core.task.PhysicsBatch`
and calls the task's own ``observe`` (the code the policy was trained on), so the
deployed observation cannot drift from the simulated one.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass, field
from typing import Any

import mujoco
import numpy as np

from sim2real.sim.arm import constants as ARM
from sim2real.sim.arm.base import ArmTask
from sim2real.sim.core.errors import ConfigError
from sim2real.sim.core.registry import REGISTRY
from sim2real.sim.core.task import PhysicsBatch, Task
from sim2real.sim.drone.base import DroneTask
from sim2real.sim.quadruped import constants as QUAD
from sim2real.sim.quadruped.base import QuadrupedTask
from sim2real.sim.quadruped.velocity import Velocity


@dataclass(frozen=True)
class RobotInfo:
    task: str
    """Default task (registry name)."""
    action_mode: str
    joints: tuple[str, ...]
    """Names published on ``joint_states`` (the arm adds its two fingers)."""
    floating_base: bool
    """Publishes ``odom`` and ``imu``."""
    has_ee: bool
    """Publishes ``ee_pose`` and ``ee_pose_desired``."""
    guarded_joints: int = -1
    """How many of ``joints`` (the first ones) the safety filter's joint limits cover
    (-1: all; the arm's fingers are bounded by the gripper command instead)."""

    @property
    def safety_joints(self) -> int:
        return len(self.joints) if self.guarded_joints < 0 else self.guarded_joints


ROBOTS: dict[str, RobotInfo] = {
    "arm": RobotInfo("ArmReach", "ee_delta", (*ARM.ARM_JOINTS, "finger_left", "finger_right"), False, True,
                     guarded_joints=len(ARM.ARM_JOINTS)),
    "quadruped": RobotInfo("QuadrupedVelocity", "joint_pos", QUAD.JOINT_NAMES, True, False),
    "drone": RobotInfo("DroneHover", "ctbr", (), True, False),
}


def robot_info(robot: str) -> RobotInfo:
    if robot not in ROBOTS:
        raise ConfigError("robot", f"unknown robot {robot!r}; choose one of {sorted(ROBOTS)}")
    return ROBOTS[robot]


QUADRUPED_DRIVER_SCALE = 2.0
"""Rad of servo target per unit action in the simulated quadruped driver: the largest
scale the task allows, so any target within +-2 rad of the default pose (then the joint
limits) passes unchanged, as a real driver accepts any target within its limits."""


def driver_mode(robot: str, action_mode: str, options: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The action mode and task options of the robot's driver (the sim bridge) for a
    policy trained in ``action_mode`` with ``options``: the driver executes the
    filtered commands, not the policy's actions. A quadruped's policy in
    ``gait_residual`` mode publishes joint targets with the gait already added, a
    drone's in ``ctbr_residual`` mode CTBR commands with the PID already added."""
    options = dict(options)
    if robot == "quadruped":
        options["action_scale"] = QUADRUPED_DRIVER_SCALE
        return "joint_pos", options
    if robot == "drone" and action_mode == "ctbr_residual":
        return "ctbr", options
    return action_mode, options


TASK_CLASSES: dict[str, type[Task]] = {"arm": ArmTask, "quadruped": QuadrupedTask, "drone": DroneTask}
"""The task base class of each robot: what :class:`ObservationBuilder` writes into."""

_DEPLOY_MODELS: weakref.WeakKeyDictionary[Task, mujoco.MjModel] = weakref.WeakKeyDictionary()
"""The model :func:`make_task` built for each task it made (forgotten with the task)."""


def make_task(task: str, action_mode: str, options: dict[str, Any] | None = None) -> Task:
    """One-environment task instance with its model built (sizes, sensor slices);
    :func:`deploy_model` returns that model."""
    task_cls = REGISTRY.get(task)
    instance = task_cls(num_envs=1, action_mode=action_mode, **(options or {}))
    _DEPLOY_MODELS[instance] = instance.build_model()
    return instance


def deploy_model(task: Task) -> mujoco.MjModel:
    """The model :func:`make_task` built for ``task`` (a task's model is built once).

    Raises:
        RuntimeError: ``task`` was not made by :func:`make_task`.
    """
    model = _DEPLOY_MODELS.get(task)
    if model is None:
        raise RuntimeError(f"{task.robot}/{task.name}: make the task with make_task(), which builds its model")
    return model


@dataclass
class Measurements:
    """The latest value and arrival time (node clock, s) of every state topic."""

    joint_pos: np.ndarray | None = None
    joint_vel: np.ndarray | None = None
    joint_effort: np.ndarray | None = None
    base_pos: np.ndarray | None = None
    base_quat: np.ndarray | None = None
    base_lin_vel: np.ndarray | None = None
    """World frame."""
    base_ang_vel: np.ndarray | None = None
    """Body frame."""
    ee_pos: np.ndarray | None = None
    ee_quat: np.ndarray | None = None
    ee_pos_desired: np.ndarray | None = None
    ee_quat_desired: np.ndarray | None = None
    goal: np.ndarray | None = None
    cmd_vel: np.ndarray | None = None
    """(vx, vy, yaw rate)."""
    stamps: dict[str, float] = field(default_factory=dict)
    """topic -> arrival time of its latest valid message."""


def required_topics(robot: str, task: Task) -> list[str]:
    """State topics the observation of ``task`` needs (freshness is checked on these)."""
    info = robot_info(robot)
    topics = ["joint_states"] if info.joints else []
    if info.floating_base:
        topics.append("odom")
    if info.has_ee:
        topics += ["ee_pose", "ee_pose_desired"]
    return topics


ROS_OBSERVABLE: dict[str, frozenset[str]] = {
    "arm": frozenset({"joint_pos", "joint_vel", "ee_pos", "ee_rot6d", "gripper_width", "setpoint_offset",
                      "target_rel_ee", "last_action"}),
    "quadruped": frozenset({"base_lin_vel", "base_ang_vel", "projected_gravity", "command", "joint_pos",
                            "joint_vel", "last_action", "gait_clock", "history"}),
    "drone": frozenset({"pos_error", "lin_vel", "rot_mat", "body_rates", "last_action"}),
}
"""Observation blocks the state topics (joint_states, odom, ee poses, goal, cmd_vel) and
the node's own state (last action, gait clock, the history of what it observed) determine. Blocks of other tasks (a
maze layout, a cube's pose, the waypoint after the current one) have no topic yet."""


class ObservationBuilder:
    """Measurements -> the task's observation, through ``task.observe``.

    Raises:
        ConfigError: the task's observation has blocks no topic provides; a policy
            fed zeros there would act on an observation it never saw in training.
    """

    def __init__(self, robot: str, task: Task, last_action_size: int) -> None:
        if not isinstance(task, TASK_CLASSES[robot]):
            raise ConfigError("task", f"{task.robot}/{task.name} is not a {robot} task")
        unknown = [b for b, _ in task.observation_layout() if b not in ROS_OBSERVABLE[robot]]
        if unknown:
            raise ConfigError(
                "policy",
                f"{task.robot}/{task.name}: observation blocks {unknown} have no ROS 2 source yet "
                f"(rebuildable: {sorted(ROS_OBSERVABLE[robot])}); this policy cannot be deployed as is",
            )
        self.robot = robot
        self.task = task
        model = deploy_model(task)
        self.model = model
        self.layout = task.observation_layout()
        self.obs_size = sum(n for _, n in self.layout)
        self.phys = PhysicsBatch(
            qpos=np.zeros((1, model.nq)), qvel=np.zeros((1, model.nv)), act=np.zeros((1, model.na)),
            sensordata=np.zeros((1, model.nsensordata)), mocap_pos=np.zeros((1, model.nmocap, 3)),
            mocap_quat=np.tile([1.0, 0, 0, 0], (1, model.nmocap, 1)), time=np.zeros(1),
            last_action=np.zeros((1, last_action_size)),
        )
        self._tick = 0
        self._sensor = {model.sensor(i).name: slice(model.sensor_adr[i], model.sensor_adr[i] + model.sensor_dim[i])
                        for i in range(model.nsensor)}
        self._target_mocap = self._mocap("target")

    def _mocap(self, body: str) -> int | None:
        bid = mujoco.mj_name2id(self.model, mujoco.mjtObj.mjOBJ_BODY, body)
        return None if bid < 0 or self.model.body_mocapid[bid] < 0 else int(self.model.body_mocapid[bid])

    def missing(self, m: Measurements) -> list[str]:
        """Measurements the observation needs but has not received."""
        need = {"arm": ["joint_pos", "joint_vel", "ee_pos", "ee_quat", "ee_pos_desired", "ee_quat_desired"],
                "quadruped": ["joint_pos", "joint_vel", "base_pos", "base_quat", "base_lin_vel", "base_ang_vel"],
                "drone": ["base_pos", "base_quat", "base_lin_vel", "base_ang_vel"]}[self.robot]
        names = {b for b, _ in self.layout}
        if self.robot in ("arm", "drone") and ({"target_rel_ee", "pos_error"} & names):
            need.append("goal")
        if "command" in names:
            need.append("cmd_vel")
        return [n for n in need if getattr(m, n) is None]

    def restart(self) -> None:
        """Start over as at an episode's start: the observation history (if the task
        keeps one) is forgotten, so a re-activated node does not act on a history
        from before its pause."""
        if self.task.history is not None:
            self.task.history.restart()

    def build(self, m: Measurements, last_action: np.ndarray) -> np.ndarray:
        """The observation ``[O]`` (call :meth:`missing` first)."""
        p = self.phys
        self._tick += 1
        p.time[0] = self._tick  # a fresh time: tasks cache derived state per time stamp
        p.last_action[0] = last_action
        getattr(self, f"_fill_{self.robot}")(m)
        obs = self.task.observe(p)
        self.task.record_observation(obs, p)
        return np.asarray(obs[0], dtype=np.float64)

    def _fill_arm(self, m: Measurements) -> None:
        p, t = self.phys, self.task
        assert isinstance(t, ArmTask)  # checked in __init__
        p.qpos[0, :9] = m.joint_pos
        p.qvel[0, :9] = m.joint_vel
        p.sensordata[0, self._sensor["ee_pos"]] = m.ee_pos
        p.sensordata[0, self._sensor["ee_quat"]] = m.ee_quat
        if self._target_mocap is not None and m.goal is not None:
            p.mocap_pos[0, self._target_mocap] = m.goal
        mapper = t.mapper
        mapper.setpoint_pos[0] = m.ee_pos_desired
        mapper.setpoint_quat[0] = m.ee_quat_desired

    def _fill_quadruped(self, m: Measurements) -> None:
        p, t = self.phys, self.task
        assert isinstance(t, QuadrupedTask)  # checked in __init__
        p.qpos[0, 0:3], p.qpos[0, 3:7], p.qpos[0, 7:19] = m.base_pos, m.base_quat, m.joint_pos
        p.qvel[0, 0:3], p.qvel[0, 3:6], p.qvel[0, 6:18] = m.base_lin_vel, m.base_ang_vel, m.joint_vel
        t.last_action[0] = p.last_action[0]
        if m.cmd_vel is not None and isinstance(t, Velocity):  # the tasks that follow a velocity command
            t.command[0] = m.cmd_vel

    def _fill_drone(self, m: Measurements) -> None:
        p, t = self.phys, self.task
        assert isinstance(t, DroneTask)  # checked in __init__
        p.qpos[0, 0:3], p.qpos[0, 3:7] = m.base_pos, m.base_quat
        p.qvel[0, 0:3], p.qvel[0, 3:6] = m.base_lin_vel, m.base_ang_vel
        if m.goal is not None:
            t.target[0] = m.goal
