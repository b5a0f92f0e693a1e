"""Options of the ros2_control arm backend (``hardware_bridge``'s ``backend_options``)."""

from __future__ import annotations

from dataclasses import dataclass

from sim2real.sim.arm import constants as C
from sim2real.sim.core.errors import ConfigError
from sim2real.sim.core.schema import Positive


@dataclass
class Ros2ControlArmOptions:
    arm_id: str = "panda"
    """franka_ros2's ``arm_id``: the joint name prefix (``panda``, ``fr3``)."""
    namespace: str = "franka"
    """The robot's ros2_control namespace (franka_ros2 launched with ``namespace:=franka``;
    never the root, where the deployment graph's own ``joint_states`` lives)."""
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
        if not self.namespace.strip("/") or not all(p.isidentifier() for p in parts):
            raise ConfigError("namespace", f"must be a non-root ROS namespace, got {self.namespace!r}")
        if not self.arm_id.isidentifier():
            raise ConfigError("arm_id", f"must be a ROS name prefix, got {self.arm_id!r}")
