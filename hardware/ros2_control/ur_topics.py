"""What a Universal Robots arm under ``ur_robot_driver`` (ROS 2) presents, as
``ur_control.launch.py`` starts it, shared by the ``ur`` backend and its emulator. Names
are relative to the driver's namespace (the root by default, as the launch file runs it).

* ``joint_states`` (sensor_msgs/JointState): ``joint_state_broadcaster``, the six joints
  (``shoulder_pan_joint`` ... ``wrist_3_joint``) once per controller-manager update, which
  follows the robot's RTDE stream: 500 Hz on an e-Series.
* ``forward_position_controller/commands`` (std_msgs/Float64MultiArray, six positions):
  streaming (``initial_joint_controller:=forward_position_controller``). Like every forward
  controller it holds its last command; unlike ``scaled_joint_trajectory_controller`` it
  is not slowed by the speed scaling.
* ``forward_velocity_controller/commands`` (std_msgs/Float64MultiArray, six velocities in
  rad/s): streaming velocities (``initial_joint_controller:=forward_velocity_controller``).
  It too holds its last command, *forever*: a host that stops sending leaves the arm moving
  at that velocity until the robot's own safety limits stop it (a protective stop at a
  joint position limit), so the backend sends zero on every hold and waits for it to be
  acknowledged when it closes.
* ``scaled_joint_trajectory_controller/joint_trajectory`` (trajectory_msgs/JointTrajectory):
  moves (``initial_joint_controller:=scaled_joint_trajectory_controller``, the launch
  file's default). Its time runs at the speed scaling: at 50 % a trajectory takes twice
  its ``time_from_start``; at 0 (paused, stopped) it stands still.
* ``speed_scaling_state_broadcaster/speed_scaling`` (std_msgs/Float64): the speed slider
  times the robot's own scaling, in percent (the broadcaster multiplies the factor by 100),
  at its ``state_publish_rate`` (100 Hz). 0 while the robot is paused or stopped.
* ``io_and_status_controller/robot_program_running`` (std_msgs/Bool): whether the External
  Control program runs on the robot; published on change, transient local (a late
  subscriber gets the current value). The driver's ``controller_stopper`` deactivates the
  motion controllers while it is false.
* ``dashboard_client/play``, ``stop``, ``unlock_protective_stop`` (std_srvs/Trigger): the
  dashboard server's commands. The driver's ``robot_mode`` and ``safety_mode`` topics and
  its other dashboard services carry ``ur_dashboard_msgs`` types, which have no Python
  wheel (none on PyPI): the backend reads the protective stop as the driver shows it with
  std_msgs, the program stopping and the speed scaling falling to 0.
"""

from __future__ import annotations

from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy

from sim2real.hardware.ros2_control.topics import CommandInterface

JOINT_STATES = "joint_states"
POSITION_COMMANDS = "forward_position_controller/commands"
VELOCITY_COMMANDS = "forward_velocity_controller/commands"
SCALED_TRAJECTORY = "scaled_joint_trajectory_controller/joint_trajectory"
CONTROLLERS: dict[str, tuple[CommandInterface, str]] = {
    "forward_position_controller": ("position", POSITION_COMMANDS),
    "forward_velocity_controller": ("velocity", VELOCITY_COMMANDS),
    "scaled_joint_trajectory_controller": ("trajectory", SCALED_TRAJECTORY),
}
"""The motion controllers the ``ur`` backend commands through (``controller`` option):
what each takes and on which topic."""
SPEED_SCALING = "speed_scaling_state_broadcaster/speed_scaling"
PROGRAM_RUNNING = "io_and_status_controller/robot_program_running"
PLAY = "dashboard_client/play"
STOP = "dashboard_client/stop"
UNLOCK_PROTECTIVE_STOP = "dashboard_client/unlock_protective_stop"

STATE_RATE = 500.0
"""Hz of ``joint_states`` on an e-Series (RTDE at 500 Hz, the controller manager with it)."""
SPEED_SCALING_RATE = 100.0
"""Hz of the speed scaling (the broadcaster's default ``state_publish_rate``)."""


def latched_qos() -> QoSProfile:
    """``io_and_status_controller``'s status topics: the system defaults made transient
    local (reliable, keep last 10)."""
    return QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=10, reliability=ReliabilityPolicy.RELIABLE,
                      durability=DurabilityPolicy.TRANSIENT_LOCAL)
