"""A Universal Robots arm (UR5e kinematics) through ``ur_robot_driver`` (``backend: ur``).

The driver is ros2_control, so this is the ros2_control arm backend
(:class:`~.backend.Ros2ControlArm`: the deadman, the hold, the interpolated stream to a
forward position or velocity controller or one point per target to the scaled joint
trajectory controller, the damped-least-squares IK on the arm's own MuJoCo model) with the UR's
joints, kinematics and limits, and the driver's own state read from its topics
(:mod:`.ur_topics`):

* The robot moves only while its External Control program runs and its speed scaling is
  above 0: :meth:`enable` is refused otherwise, naming which.
* The program stopping (``robot_program_running`` false) or the speed scaling falling to 0
  (a protective stop, a pause, the e-stop) after they were seen running is a stop the
  robot made on its own: the backend holds and latches (``ESTOPPED``, the reason naming
  what the driver showed), cleared only by :meth:`connect` again, as every backend's
  latch. On the robot the arm has already stopped; the latch keeps the host from
  streaming into a program the operator restarts.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any, ClassVar

from sensor_msgs.msg import JointState
from std_msgs.msg import Bool, Float64, Float64MultiArray
from trajectory_msgs.msg import JointTrajectory

from sim2real.hardware.backend import HardwareError, Phase
from sim2real.hardware.preflight import Item
from sim2real.hardware.ros2_control import topics as T
from sim2real.hardware.ros2_control import ur_topics as UT
from sim2real.hardware.ros2_control.backend import Ros2ControlArm
from sim2real.hardware.ros2_control.kinematics import ArmKinematics, ur5e_chain
from sim2real.hardware.ros2_control.options import Ros2ControlArmOptions
from sim2real.sim.arm import ur5e as U
from sim2real.sim.core.errors import ConfigError
from sim2real.sim.core.schema import Positive

FRANKA_ONLY = ("arm_id", "gripper_node", "width_without_gripper", "gripper_state_rate_hz", "gripper_state_timeout")
"""Options of the Franka's backend that ur_robot_driver has nothing for: refused when set."""


@dataclass
class UrArmOptions(Ros2ControlArmOptions):
    """The ros2_control arm's options for ur_robot_driver (one stream, a forward position
    or the scaled trajectory controller, no gripper), and the driver's own."""

    robot_label: ClassVar[str] = "UR (ur_robot_driver)"
    topology: T.Topology = "merged"
    """Always ``merged``: one ``joint_states`` stream."""
    gripper: bool = False
    """Always false (a UR's tool is not the driver's)."""
    namespace: str = ""
    """The driver's namespace: the root, as ur_control.launch.py runs it (then ``domain_id``
    must name the robot's own DDS domain, apart from the deployment graph's /joint_states)."""
    arm_state_rate_hz: Positive = UT.STATE_RATE
    """Nominal ``joint_states`` rate: 500 Hz (RTDE on an e-Series)."""
    status_timeout: Positive = 0.5
    """s: the speed scaling (100 Hz) older than this at enable refuses it (50 periods)."""
    controller: str = "forward_position_controller"
    """The motion controller the driver runs (``initial_joint_controller``):
    ``forward_position_controller`` streams positions the robot follows at once, whatever
    the speed slider; ``forward_velocity_controller`` streams joint velocities (the
    interpolated targets' own plus a pull onto them), zero on every hold: it keeps its
    last velocity forever, so a host that dies mid-motion leaves the arm moving until the
    robot's safety limits stop it; ``scaled_joint_trajectory_controller`` (the launch
    file's default) takes one trajectory point per target and slows with the speed scaling."""

    def validate(self) -> None:
        defaults = Ros2ControlArmOptions()
        for name in FRANKA_ONLY:
            if getattr(self, name) != getattr(defaults, name):
                raise ConfigError(name, "a Franka option: ur_robot_driver has no such setting")
        if self.controller not in UT.CONTROLLERS:
            raise ConfigError("controller", f"{self.controller!r}: one of {', '.join(UT.CONTROLLERS)}")
        if self.topology != "merged" or self.gripper:
            raise ConfigError("topology", "ur_robot_driver has one joint_states stream and no gripper")
        parts = self.namespace.strip("/").split("/")
        if not self.namespace.strip("/"):
            if self.domain_id is None:
                raise ConfigError("namespace", "the root namespace needs domain_id naming the robot's own DDS "
                                  "domain: the driver's /joint_states would meet the deployment graph's")
        elif not all(p.isidentifier() for p in parts):
            raise ConfigError("namespace", f"must be a ROS namespace, got {self.namespace!r}")


class UrArm(Ros2ControlArm):
    """A UR5e under ur_robot_driver (``backend: ur``)."""

    protocol = ("ROS 2 ur_robot_driver (ros2_control): joint_state_broadcaster, forward_position_controller, "
                "forward_velocity_controller or scaled_joint_trajectory_controller, speed_scaling_state_broadcaster, "
                "io_and_status_controller")
    state_rate = UT.STATE_RATE
    options_class = UrArmOptions

    def _configure_robot(self) -> None:
        self.arm_names = U.JOINTS
        self.finger_names = ()
        self.names = U.JOINTS
        self.dof = len(U.JOINTS)
        self._delta_max = U.VELOCITY_LIMIT * self.opt.control_dt
        self._fk = ArmKinematics(chain=ur5e_chain())  # the executor thread's
        self._ik = ArmKinematics(chain=ur5e_chain())  # command()'s
        self._q_cmd = U.HOME_QPOS.copy()
        self._posture = U.HOME_QPOS.copy()
        self._program_running: bool | None = None
        """The latest robot_program_running (None: not heard yet)."""
        self._speed_scaling: tuple[float, float] | None = None
        """Arrival (monotonic s) and value (percent) of the latest speed scaling."""
        self.driver_stops: list[str] = []
        """Why the driver stopped the robot, each time (the latch's reasons)."""
        self.command_interface, self.command_topic = UT.CONTROLLERS[self.opt.controller]

    def _make_endpoints(self, node: Any) -> None:
        kind = JointTrajectory if self.command_interface == "trajectory" else Float64MultiArray
        self._pub_q = node.create_publisher(kind, self.command_topic, T.controller_qos())
        node.create_subscription(JointState, UT.JOINT_STATES, self._on_joint_states, T.state_qos())
        node.create_subscription(Float64, UT.SPEED_SCALING, self._on_speed_scaling, T.controller_qos())
        node.create_subscription(Bool, UT.PROGRAM_RUNNING, self._on_program_running, UT.latched_qos())

    # -- the driver's state (the executor thread) ----------------------------------------
    def _on_program_running(self, msg: Bool) -> None:
        with self._control:
            was, self._program_running = self._program_running, bool(msg.data)
            if was and not self._program_running:
                self._driver_stop("the robot program stopped (robot_program_running false)")

    def _on_speed_scaling(self, msg: Float64) -> None:
        value = float(msg.data)
        if not math.isfinite(value):  # fails closed: read as a stop
            self._counts["speed_scaling_invalid"] = self._counts.get("speed_scaling_invalid", 0) + 1
            value = 0.0
        with self._control:
            was = self._speed_scaling
            self._speed_scaling = (time.monotonic(), value)
            if value <= 0.0 and was is not None and was[1] > 0.0:
                self._driver_stop("speed scaling fell to 0 % (protective stop, pause or e-stop)")

    def _driver_stop(self, reason: str) -> None:
        """Hold and latch (under ``_control``): the robot stopped on its own."""
        self._counts["driver_stops"] = self._counts.get("driver_stops", 0) + 1
        self.driver_stops.append(reason)
        if self._phase in (Phase.ENABLED, Phase.CONNECTED):
            self.estop(f"ur_robot_driver: {reason}; connect() again once the robot runs")

    def enable(self) -> None:
        # The driver's status comes on topics of its own, which may arrive after the first
        # joint state connect() waited for: heard within controller_wait, as a fresh state is.
        end = time.monotonic() + self.opt.controller_wait
        while (self._program_running is None or self._speed_scaling is None) and time.monotonic() < end:
            time.sleep(0.01)
        super().enable()

    def _still_connected(self) -> None:
        """Besides every backend's rule: the program runs and the speed scaling, fresh, is above 0."""
        super()._still_connected()
        if not self._program_running:
            heard = "not heard" if self._program_running is None else "false"
            raise HardwareError(f"cannot enable: the robot program is not running (robot_program_running {heard}): "
                                "start External Control on the pendant (play) or call dashboard_client/play")
        scaling = self._speed_scaling
        if scaling is None or time.monotonic() - scaling[0] > self.opt.status_timeout:
            raise HardwareError(f"cannot enable: no speed scaling within {self.opt.status_timeout:g} s "
                                f"({UT.SPEED_SCALING}: is speed_scaling_state_broadcaster active?)")
        if scaling[1] <= 0.0:
            raise HardwareError("cannot enable: speed scaling is 0 % (the robot is paused or stopped)")

    def driver_state(self) -> dict[str, Any]:
        """What the driver shows: program running, speed scaling, whether the motion
        controller subscribes (loaded: whether it is *active* the controller
        manager's service would tell, whose types have no Python wheel)."""
        scaling = self._speed_scaling
        ros = self._ros
        return {"program_running": self._program_running,
                "speed_scaling_percent": None if scaling is None else round(scaling[1], 1),
                "speed_scaling_age_s": None if scaling is None else round(time.monotonic() - scaling[0], 3),
                "controller": self.opt.controller,
                "controller_subscribed": bool(ros is not None and self._pub_q.get_subscription_count() > 0),
                "driver_stops": list(self.driver_stops)}

    def detail(self) -> dict[str, Any]:
        return {**super().detail(), "driver": self.driver_state()}

    def driver_items(self) -> list[Item]:
        """The program running, the speed scaling and the controller the backend commands."""
        driver = self.driver_state()
        running, scaling = driver["program_running"], driver["speed_scaling_percent"]
        items = [Item("program running", "PASS" if running else "FAIL", str(running), "True",
                      "" if running else "start External Control on the pendant (play) or call dashboard_client/play")]
        if scaling is None or scaling <= 0.0:
            items.append(Item("speed scaling", "FAIL", "none" if scaling is None else f"{scaling:g} %", "> 0 %",
                              "the robot is paused or stopped (or speed_scaling_state_broadcaster is not active)"))
        else:
            items.append(Item("speed scaling", "PASS" if scaling >= 100.0 else "WARN", f"{scaling:g} %", "100 %",
                              "" if scaling >= 100.0 else "the speed slider or a reduced mode slows the robot"))
        subscribed, controller = driver["controller_subscribed"], driver["controller"]
        items.append(Item("motion controller", "PASS" if subscribed else "FAIL",
                          "subscribed" if subscribed else "no subscriber", f"{controller} loaded",
                          "" if subscribed else f"initial_joint_controller:={controller} (docs/hardware.md)"))
        return items
