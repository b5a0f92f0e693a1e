"""Options of the ros2_control arm backend (``hardware_bridge``'s ``backend_options``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, ClassVar

from sim2real.hardware.ros2_control import topics as T
from sim2real.sim.arm import constants as C
from sim2real.sim.core.errors import ConfigError
from sim2real.sim.core.schema import Bounds, Positive


@dataclass
class Ros2ControlArmOptions:
    robot_label: ClassVar[str] = "ros2_control arm"
    """How an unknown option's error names the backend."""

    topology: T.Topology = "franka_ros2"
    """What the robot publishes and subscribes (:mod:`.topics`): ``franka_ros2``, franka_bringup's
    franka.launch.py (the arm on ``franka/joint_states``, the gripper on
    ``franka_gripper/joint_states``, each at its own rate; commands to a
    joint_trajectory_controller); ``merged``, one 9-joint ``joint_states`` and forward
    position controllers (this project's first emulator)."""
    arm_id: str = "panda"
    """franka_ros2's ``arm_id`` / ``robot_type``: the joint name prefix (``panda``, ``fr3``)."""
    namespace: str = "franka"
    """The robot's ros2_control namespace (franka.launch.py's ``namespace:=franka``). The
    root (``""``) is allowed for ``franka_ros2`` on a DDS domain of the robot's own
    (``domain_id``): there joint_state_publisher's ``/joint_states`` would meet the
    deployment graph's."""
    gripper: bool = True
    """A Franka Hand with ``franka_gripper`` running (franka.launch.py's ``load_gripper``).
    False: no finger stream is read and no width is sent; the fingers read
    ``width_without_gripper``."""
    gripper_node: str = "franka_gripper"
    """franka_gripper_node's name, whose ``joint_states`` carry the fingers: ``franka_gripper``
    (franka_ros2 1.x on); ``<arm_id>_gripper`` (``panda_gripper``) in the 0.1 releases."""
    width_without_gripper: Annotated[float, Bounds(0.0, C.GRIP_WIDTH_MAX)] = C.FINGER_STROKE
    """m: the width the state reports without a gripper, what the policy observes: the
    simulated hand's start width (0.04; reported closed, 0, the shipped ArmReach policy's
    gripper input sits at |z| 5.7, at the edge of its training distribution)."""
    arm_state_rate_hz: Positive = T.BROADCASTER_RATE
    """Nominal rate of the arm's joint states: the broadcaster's ``update_rate`` in our
    controller file (250 Hz); 1000 with franka_bringup's own controllers.yaml."""
    read_rate_hz: Positive = T.BROADCASTER_RATE
    """The most arm states per second the backend reads; the rest are skipped on arrival,
    before any work. franka_ros2 publishes 1 kHz; reading every message (Python: decode,
    kinematics, the bridge's callbacks) took a process's GIL from its command path (the
    deadman held an arm commanded at 20 Hz from a normal-priority thread). The policy runs
    at 20 Hz; the pre-flight check judges the stream at ``min(arm_state_rate_hz, this)``."""
    gripper_state_rate_hz: Positive = T.GRIPPER_STATE_RATE
    """Nominal rate of ``franka_gripper/joint_states`` (its ``state_publish_rate``)."""
    gripper_state_timeout: Positive = 0.5
    """s: finger states older than this make the whole state stale (the arm is held):
    7 periods at 15 Hz."""
    domain_id: int | None = None
    """DDS domain of the robot's ROS 2 graph (None: ``$ROS_DOMAIN_ID``)."""
    command_rate_hz: Positive = 200.0
    """Rate the joint targets between two policy commands are streamed at: each command's
    step is interpolated over one control period. A real Franka refuses joint position
    jumps (its motion-generator discontinuity reflexes), and a streamed target gives the
    robot's controller a velocity to track (the emulator measures 0.005 rad median
    tracking error streamed, 0.1 rad without velocity feed-forward)."""
    command_timeout: Positive = 0.125
    """Deadman: seconds without :meth:`command` while enabled before the arm is held.
    2.5 control periods: one late command is tolerated, and the hold is out within 3
    periods of the last command (ros2_control's forward controllers never time out)."""
    state_timeout: Positive = 0.05
    """Joint states older than this are stale: no command is computed from them and an
    enabled arm is held (one control period: 12 frames at 250 Hz, 50 at franka's 1 kHz;
    the largest gap measured here under load is 8 ms)."""
    controller_wait: Positive = 2.0
    """Seconds :meth:`enable` waits for a fresh joint state and for the position
    controller's subscription to appear (a controller that is not loaded and active has none)."""
    control_dt: Positive = C.CONTROL_DT
    """The period a command's velocities are integrated over (the policy's period)."""

    def validate(self) -> None:
        parts = self.namespace.strip("/").split("/")
        root = not self.namespace.strip("/")
        if (root and self.topology == "merged") or (not root and not all(p.isidentifier() for p in parts)):
            raise ConfigError("namespace", f"must be a non-root ROS namespace, got {self.namespace!r}")
        if root and self.domain_id is None:
            raise ConfigError("namespace", "must be a non-root ROS namespace unless domain_id names the robot's "
                              "own DDS domain: franka's /joint_states (30 Hz) would meet the deployment graph's")
        if self.topology == "merged" and not self.gripper:
            raise ConfigError("gripper", "the merged topology carries the fingers in joint_states: "
                              "a gripperless arm runs with topology franka_ros2")
        if not self.gripper_node.isidentifier():
            raise ConfigError("gripper_node", f"must be a ROS node name, got {self.gripper_node!r}")
        if self.gripper_state_timeout * self.gripper_state_rate_hz < 2.0:
            raise ConfigError("gripper_state_timeout", "must span at least 2 periods of the gripper's stream")
        if not self.arm_id.isidentifier():
            raise ConfigError("arm_id", f"must be a ROS name prefix, got {self.arm_id!r}")
