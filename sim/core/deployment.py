"""What deploying a robot needs to know of it, in one place per robot.

Each robot package has a ``deployment.py`` with one :class:`RobotDeployment` subclass:
its default task and action mode, the joints and streams its driver publishes, which
observation blocks those streams determine, how a measurement is written back into the
simulator's state (so the task's own ``observe`` rebuilds the policy's observation), and
which mode its driver runs for a policy's action mode. The deployment and hardware
layers ask the robot's :class:`RobotDeployment`; they never branch on its name.

No ROS here: :class:`Measurements` is plain numpy, filled by the ROS 2 nodes from topics,
by the sim bridge from MuJoCo and by tests directly.
"""

from __future__ import annotations

import abc
import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Generic, TypeVar

import mujoco
import numpy as np

from sim2real.sim.core.commands import CommandLayout
from sim2real.sim.core.errors import ConfigError
from sim2real.sim.core.task import PhysicsBatch, Task


@dataclass
class Measurements:
    """The latest value and arrival time (node clock, s) of every state stream."""

    joint_pos: np.ndarray | None = None
    joint_vel: np.ndarray | None = None
    joint_effort: np.ndarray | None = None
    base_pos: np.ndarray | None = None
    base_quat: np.ndarray | None = None
    """(w, x, y, z), body to world."""
    base_lin_vel: np.ndarray | None = None
    """World frame."""
    base_ang_vel: np.ndarray | None = None
    """Body frame."""
    specific_force: np.ndarray | None = None
    """The IMU's accelerometer (body frame, m/s^2), where the robot has one."""
    ee_pos: np.ndarray | None = None
    ee_quat: np.ndarray | None = None
    ee_pos_desired: np.ndarray | None = None
    ee_quat_desired: np.ndarray | None = None
    goal: np.ndarray | None = None
    cmd_vel: np.ndarray | None = None
    """(vx, vy, yaw rate)."""
    path: np.ndarray | None = None
    """``[K, 3]`` the planner's waypoints (x, y in the odometry frame, then the height the
    robot may have there: a quadruped's trunk, a drone's altitude); the last is the goal."""
    ranges: np.ndarray | None = None
    """The robot's rangefinders (m), in the order its task names them."""
    course: dict[str, Any] | None = None
    """A course's description (JSON-ready, :meth:`Task.course`) for the tasks whose
    observation reads it (a drone's gates)."""
    stamps: dict[str, float] = field(default_factory=dict)
    """topic -> arrival time of its latest valid message."""


@dataclass(frozen=True)
class ClearanceGrid:
    """A map as a planner reads it: cell centres ``xs`` by ``ys`` (m, the odometry frame)
    and each cell's distance to the nearest obstacle (m)."""

    xs: np.ndarray
    ys: np.ndarray
    clearance: np.ndarray
    """``[len(xs), len(ys)]``."""


@dataclass(frozen=True)
class OperatorAxis:
    """One axis a person drives the robot along (a key pair, a stick)."""

    name: str
    """The element of the robot's command it drives (``vx``, ``yaw_rate``, ``gripper``)."""
    unit: str
    limit: float
    """Largest magnitude an operator may command (the console scales a full stick to it)."""
    keys: tuple[str, str] = ("", "")
    """Keyboard keys (``KeyboardEvent.code``) for the positive and negative direction."""


@dataclass(frozen=True)
class OperatorSpace:
    """How a person commands the robot: the natural space, not the motor commands.

    ``channel`` says where the command enters the deployment graph, always before the
    safety filter: ``teleop_command`` (the filter's command mux, highest priority; the
    command's other elements hold), ``cmd_vel`` (the velocity command the policy
    tracks) or ``goal`` (the position setpoint the policy holds, moved at the
    commanded velocity). Whatever the channel, the motion command reaching the robot is
    the safety filter's output.
    """

    channel: str
    axes: tuple[OperatorAxis, ...]
    hold: tuple[float, ...]
    """The command of a person holding still (zero velocities, the gripper's current
    width is kept by the console)."""

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(a.name for a in self.axes)

    @property
    def limits(self) -> np.ndarray:
        return np.array([a.limit for a in self.axes])


TaskT = TypeVar("TaskT", bound=Task)

StateWriter = Callable[[PhysicsBatch, Measurements], None]
"""Writes measurements into a one-environment physics batch of a task's model."""
StateReader = Callable[[mujoco.MjData, PhysicsBatch], Measurements]
"""Reads what the robot's driver would publish from a simulated robot's data (and the
engine's one-environment physics batch, for sensors and setpoints)."""


class RobotDeployment(abc.ABC, Generic[TaskT]):
    """One robot as a deployment sees it (class attributes; one instance per robot)."""

    name: ClassVar[str]
    """The robot's name (``arm``, ``quadruped``, ``drone``): a task's ``robot``."""
    task: ClassVar[str]
    """Default task (registry name)."""
    action_mode: ClassVar[str]
    """Default action mode of that task."""
    task_class: type[TaskT]
    """The robot's task base class: every task it deploys is one."""
    joints: ClassVar[tuple[str, ...]] = ()
    """Names published on ``joint_states`` (empty: no joint stream)."""
    guarded_joints: ClassVar[int] = -1
    """How many of ``joints`` (the first ones) the safety filter's joint limits cover
    (-1: all)."""
    floating_base: ClassVar[bool] = False
    """Publishes ``odom`` and ``imu``."""
    has_ee: ClassVar[bool] = False
    """Publishes ``ee_pose`` and ``ee_pose_desired``."""
    rangefinders: ClassVar[tuple[str, ...]] = ()
    """Rangefinders publishing ``ranges/<name>`` (sensor_msgs/Range), in the order of the
    ``ranges`` measurement; the ``ranges`` stream of the tasks that read them."""
    range_max: ClassVar[float] = 0.0
    """Their largest reading (m): farther, or no return, reads as this."""
    measured: ClassVar[tuple[str, ...]]
    """:class:`Measurements` fields every observation of this robot is rebuilt from."""
    observable: ClassVar[frozenset[str]]
    """Observation blocks that :meth:`state_writer` plus the node's own state (last
    action, gait clock, observation history) determine; a policy whose observation
    has other blocks cannot be deployed (``tests/sim/test_deployment.py`` checks each
    claim against the simulator for every registered task)."""
    block_inputs: ClassVar[Mapping[str, str]] = {}
    """Observation block -> the mission input it needs (``goal``, ``cmd_vel``, ``path``,
    ``ranges``, ``course``)."""
    driver_modes: ClassVar[Mapping[str, str]] = {}
    """Policy action mode -> the mode the driver executes, where they differ (reference
    modes publish commands with the reference already added)."""
    driver_options: ClassVar[Mapping[str, Any]] = {}
    """Task options the driver overrides."""
    operator: ClassVar[OperatorSpace]
    """How a person (the correction console, a gamepad) commands this robot."""
    rest_poses: ClassVar[Mapping[str, tuple[float, ...]]] = {}
    """Joint positions (of the first :attr:`safety_joints` joints) the robot may rest in
    before it is enabled; the pre-flight check finds swapped joints against them."""
    real_backend: ClassVar[str]
    """The backend (:mod:`sim2real.hardware.backend`) that speaks the real robot's own
    protocol; ``backend:=real`` drives it."""
    other_backends: ClassVar[tuple[str, ...]] = ()
    """Further backends that can drive this robot (chosen by the hardware bridge's
    ``backend``); no other backend may."""

    @property
    def real_backends(self) -> tuple[str, ...]:
        """Every backend that can drive the robot, its own first."""
        return (self.real_backend, *self.other_backends)

    def backend(self, name: str = "") -> str:
        """Backend ``name`` (empty: the robot's own), checked to be one that drives it.

        Raises:
            ConfigError: another robot's backend.
        """
        backend = name or self.real_backend
        if backend not in self.real_backends:
            raise ConfigError("backend", f"the {self.name} speaks {' or '.join(self.real_backends)}, not {backend}")
        return backend
    live_cameras: ClassVar[tuple[str, ...]] = ()
    """The simulated robot's cameras a person watches it through (the console's views)."""
    motors_off_without_command: ClassVar[bool] = False
    """With no fresh command the driver applies zeros (motors off) instead of the
    command of action 0 (hold the setpoint, keep the default pose)."""

    @property
    def safety_joints(self) -> int:
        return len(self.joints) if self.guarded_joints < 0 else self.guarded_joints

    def joint_ranges(self) -> tuple[np.ndarray, np.ndarray]:
        """Lower and upper limits of :attr:`joints` in the robot's model (+-inf where a
        joint has none)."""
        low, high = _joint_ranges(type(self))
        return low.copy(), high.copy()  # the cached arrays stay as read

    def state_topics(self) -> list[str]:
        """The state streams the robot's driver publishes that an observation needs."""
        topics = ["joint_states"] if self.joints else []
        if self.floating_base:
            topics.append("odom")
        if self.has_ee:
            topics += ["ee_pose", "ee_pose_desired"]
        return topics

    def plan(self, start: np.ndarray, goal: np.ndarray | None, spacing: float, course: Mapping[str, Any] | None = None,
             grid: ClearanceGrid | None = None) -> np.ndarray:
        """The path ``[K, 3]`` (x, y, allowed height) a path-following policy of this robot
        follows from ``start`` to ``goal`` (None: the course's), on a simulated course's
        description (:meth:`Task.course`) or an occupancy map's clearance.

        Raises:
            ValueError: the robot has no planner, the inputs are malformed, or no path exists.
        """
        raise ValueError(f"the {self.name} has no path planner")

    command_modes: ClassVar[tuple[str, ...]] = ()
    """The action modes :meth:`command_layout` describes (deployable through the filter)."""

    def command_layout(self, action_mode: str, action_scale: float | None = None) -> CommandLayout | None:
        """What the robot's command topic carries in ``action_mode`` (names, units, the map
        from actions), or None where the mode has no deployment command space.
        ``action_scale``: the task's own option where the robot has one (rad per unit
        action of a quadruped's joint targets)."""
        return None

    def driver_mode(self, action_mode: str, options: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
        """The action mode and task options of the robot's driver (the sim bridge, an
        emulator) for a policy trained in ``action_mode`` with ``options``: the driver
        executes the filtered commands, not the policy's actions."""
        return self.driver_modes.get(action_mode, action_mode), {**options, **self.driver_options}

    def backend_options(self, task_options: Mapping[str, Any]) -> dict[str, Any]:
        """Options of the real robot's backend that a policy trained with ``task_options``
        needs (an imported policy's servo gains); explicit backend options win over them.

        Raises:
            ValueError: the backend cannot apply what the policy needs.
        """
        return {}

    def unobservable(self, task: Task) -> list[str]:
        """Observation blocks of ``task`` that no stream provides."""
        return [b for b, _ in task.observation_layout() if b not in self.observable]

    def inputs(self, task: Task) -> Mapping[str, str]:
        """:attr:`block_inputs` for ``task`` (a robot whose tasks read their blocks from
        different inputs overrides this)."""
        return self.block_inputs

    def required(self, task: Task) -> list[str]:
        """:class:`Measurements` fields the observation of ``task`` needs."""
        names = {b for b, _ in task.observation_layout()}
        extra = [m for b, m in self.inputs(task).items() if b in names]
        return list(self.measured) + list(dict.fromkeys(extra))

    def joint_reader(self, model: mujoco.MjModel) -> Callable[[mujoco.MjData, Measurements], None]:
        """Fills the joint and floating-base streams of a measurement from MuJoCo data:
        the part every robot's reader shares."""
        ids = [mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, n) for n in self.joints]
        qadr = np.array([model.jnt_qposadr[j] for j in ids], dtype=int)
        vadr = np.array([model.jnt_dofadr[j] for j in ids], dtype=int)
        joints, base = bool(self.joints), self.floating_base

        def read(d: mujoco.MjData, out: Measurements) -> None:
            if joints:
                out.joint_pos, out.joint_vel = d.qpos[qadr].copy(), d.qvel[vadr].copy()
                out.joint_effort = d.qfrc_actuator[vadr].copy()
            if base:
                out.base_pos, out.base_quat = d.qpos[0:3].copy(), d.qpos[3:7].copy()
                out.base_lin_vel, out.base_ang_vel = d.qvel[0:3].copy(), d.qvel[3:6].copy()

        return read

    def robot_task(self, task: Task) -> TaskT:
        """``task`` as this robot's task.

        Raises:
            TypeError: a task of another robot.
        """
        if not isinstance(task, self.task_class):
            raise TypeError(f"{task.robot}/{task.name} is not a {self.name} task")
        return task

    def state_reader(self, task: Task, model: mujoco.MjModel) -> StateReader:
        """A function reading what the robot's driver publishes (and the mission inputs
        the task was given: goal, velocity command) from a simulated robot; the inverse
        of :meth:`state_writer`."""
        robot_task = self.robot_task(task)
        joints = self.joint_reader(model)

        def read(d: mujoco.MjData, p: PhysicsBatch) -> Measurements:
            out = Measurements()
            joints(d, out)
            self.read_task(robot_task, p, out)
            return out

        return read

    def read_task(self, task: TaskT, p: PhysicsBatch, out: Measurements) -> None:
        """The robot's own streams beyond joints and base (an end effector), and its
        mission inputs, into ``out``."""

    @abc.abstractmethod
    def state_writer(self, task: Task, model: mujoco.MjModel) -> StateWriter:
        """A function writing measurements into a one-environment physics batch of
        ``model`` (and the task's own state it observes, such as a commanded velocity)."""


@functools.cache
def _joint_ranges(cls: type[RobotDeployment[Any]]) -> tuple[np.ndarray, np.ndarray]:
    """:meth:`RobotDeployment.joint_ranges`, read once per robot (it builds the model)."""
    from sim2real.sim.core.registry import REGISTRY  # the registry imports every robot

    model = REGISTRY.get(cls.task)(num_envs=1, action_mode=cls.action_mode).build_model()
    low, high = np.full(len(cls.joints), -np.inf), np.full(len(cls.joints), np.inf)
    for i, name in enumerate(cls.joints):
        j = model.joint(name)
        if model.jnt_limited[j.id]:
            low[i], high[i] = model.jnt_range[j.id]
    return low, high
