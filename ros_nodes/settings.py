"""Every node's ROS parameters, as typed dataclasses with a docstring per field.

One place declares them (:class:`~sim2real.ros_nodes.base.ManagedNode` turns each field
into a ROS parameter with a ``ParameterDescriptor``: description, type, range), one
loader checks them (:mod:`sim2real.sim.core.schema`), and the configuration reference
in the docs is generated from them. The safety filter adds its robot's safety limits
(:data:`sim2real.policies.safety.PARAMS`).

Kept free of rclpy and of the nodes' own imports, so the parameter names of the whole
graph are known without starting a node (see :func:`graph_parameter_names`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Literal

from sim2real.policies.teleop.operator import DEAD_MAN_TIMEOUT
from sim2real.robot_names import ROBOT_NAMES
from sim2real.sim.core.schema import Bounds, NonNegative, NonNegativeInt, OneOf, Positive, PositiveInt

Robot = Annotated[str, OneOf(ROBOT_NAMES)]
"""A registered robot's name (``sim2real.sim.ROBOTS``)."""
Port = Annotated[int, Bounds(ge=0, le=65535)]
JpegQuality = Annotated[int, Bounds(ge=1, le=100)]
ImageSide = Annotated[int, Bounds(ge=0, le=8192)]


@dataclass
class NodeSettings:
    autostart: bool = True
    """Configure and activate at start (``false``: wait for a lifecycle manager)."""


@dataclass
class StateReaderSettings(NodeSettings):
    """What every node that reads the robot's state streams shares."""

    stamp_tolerance: Annotated[float, Bounds(gt=0.0, le=10.0)] = 0.5
    """s: a state message whose header stamp differs from this node's clock by more is
    refused (stale, from the future, or unstamped). Covers delivery on a loaded machine
    and the clock offset between two synchronised computers; the freshness watchdogs
    time what is accepted by its arrival."""


@dataclass
class DriverSettings(NodeSettings):
    """What every node that drives a robot (simulated or real) shares."""

    command_deadline: NonNegative = 0.0
    """s, QoS deadline of the ``command`` subscription (0: none); a miss is counted."""
    command_publisher: str = "safety_filter"
    """The filter node whose ``command`` writer the driver binds to when enabled; every
    other writer's commands are refused, and a new filter needs a new enable."""


@dataclass
class SimBridgeSettings(DriverSettings):
    robot: Robot = "arm"
    """Robot class simulated."""
    task: str = ""
    """Registered task whose scene and targets are simulated (empty: the robot's default)."""
    action_mode: str = ""
    """The task's action mode the commands are in (empty: the robot's driver mode)."""
    task_options: str = "{}"
    """Task constructor options as a JSON object."""
    dr: str = "none"
    """Randomization of the simulated robot: ``none``, ``train``, ``heldout``, or a YAML
    file of field values over the training preset (fixed values make a robot with
    hidden parameters, for ``sim2real sysid``)."""
    seed: NonNegativeInt = 0
    """Seed of the simulated episodes (targets, randomization)."""
    real_time_factor: Annotated[float, Bounds(ge=0.001, le=1000.0)] = 1.0
    """Simulated seconds per wall-clock second."""
    command_timeout: Positive = 0.5
    """s without a command before the simulated driver stops the robot (its last resort)."""
    image_rate: NonNegative = 0.0
    """Hz of each camera's images (0: no camera). Rendered for live views: no shadows,
    reflections or multisampling."""
    image_width: PositiveInt = 160
    """Pixels."""
    image_height: PositiveInt = 120
    """Pixels."""
    camera: str = ""
    """MuJoCo camera published on ``camera/image_raw`` when ``cameras`` is empty (empty:
    the task's render camera)."""
    cameras: str = ""
    """Comma-separated MuJoCo cameras (e.g. ``front,wrist``), each published on
    ``<camera>/image_raw`` (rgb8) and ``<camera>/image_raw/compressed`` (JPEG) at
    ``image_rate`` (empty: the one ``camera`` on ``camera/image_raw``). A stream nobody
    subscribes is not rendered."""
    jpeg_quality: JpegQuality = 80
    """JPEG quality of the ``compressed`` images (1-100)."""
    publish_mission: bool = True
    """Publish the mission target on ``goal`` (and ``cmd_vel`` where the task has one; with
    false the sim bridge subscribes ``cmd_vel`` instead)."""


@dataclass
class HardwareBridgeSettings(DriverSettings):
    robot: Robot = "arm"
    """Robot class driven."""
    action_mode: str = ""
    """Command space the filtered commands are in (empty: the robot's driver mode)."""
    backend: str = ""
    """Registered backend speaking the robot's protocol (empty: the robot's own:
    ``ros2_control``, ``ur``, ``unitree_go2``, ``crazyflie``, ``px4``; or another the robot
    lists, ``px4`` for the drone; docs/hardware.md)."""
    backend_options: str = "{}"
    """The backend's connection options as a JSON object (its URI, network interface,
    DDS domain, controller names: docs/hardware.md per robot)."""
    connect_timeout: Positive = 5.0
    """s to wait for the robot's first state before configure fails."""
    command_timeout_periods: Annotated[float, Bounds(ge=1.0, le=50.0)] = 3.0
    """Control periods without a fresh filtered command after which the bridge puts the
    robot in its safe state (the vendors' interfaces keep the last command forever)."""
    auto_enable: bool = False
    """Enable the robot as soon as the pre-flight check passes (false: wait for the
    ``~/enable`` service, a person's explicit go)."""
    preflight_seconds: Annotated[float, Bounds(ge=0.2, le=60.0)] = 2.0
    """s of live state the pre-flight check reads before it may pass."""
    state_publish_rate: NonNegative = 0.0
    """Hz at most the robot's state is republished on ROS (0: every state the robot sends;
    a Go2's 500 Hz is more than a Python graph needs at a 50 Hz policy)."""


@dataclass
class PolicySettings(StateReaderSettings):
    robot: Robot = "arm"
    """Robot class the policy commands."""
    policy: str = "classical"
    """``classical`` (the robot's classical controller) or the path of an exported policy."""
    task: str = ""
    """Task whose observation the policy reads (an exported policy names its own)."""
    action_mode: str = ""
    """Action mode of the commands (empty: the policy's or the robot's)."""
    task_options: str = "{}"
    """Task constructor options as a JSON object."""
    control_rate: NonNegative = 0.0
    """Hz (0: the task's control rate)."""
    max_state_age_periods: Annotated[float, Bounds(ge=0.5, le=100.0)] = 2.0
    """A state older than this many periods is not acted on."""
    align_to_state: bool = True
    """Act as soon as a fresh state arrives within the period (false: on the timer)."""
    operator_hold: Annotated[float, Bounds(gt=0.0, le=5.0)] = 0.25
    """s an operator's ``operator_cmd_vel`` or ``operator_goal`` (the correction console)
    overrides the mission's ``cmd_vel`` or ``goal`` after its last message."""


@dataclass
class SafetyFilterSettings(StateReaderSettings):
    robot: Robot = "arm"
    """Robot class guarded; fixed when the node starts (it decides the safety parameters)."""
    action_mode: str = ""
    """Action mode of the commands (empty: the robot's driver mode)."""
    action_scale: NonNegative = 0.0
    """Scale of normalized joint-target commands (0: the robot's)."""
    command_deadline: NonNegative = 0.0
    """s, QoS deadline of the ``command`` publisher (0: none)."""
    publish_on: Literal["state", "command", "both"] = "both"
    """When a filtered command is sent: on each state message, on each command, or both."""
    diagnostics_rate: Annotated[float, Bounds(gt=0.0, le=1000.0)] = 10.0
    """Hz of ``diagnostics``."""
    latency_deadline: Positive = 0.002
    """s: state-in to command-out latencies above it are counted as misses."""
    policy_hold: Positive = 0.5
    """s the policy keeps control after its last valid command (the mux's rule)."""
    twist_hold: Positive = 0.5
    """s a ``command_twist`` source keeps control after its last valid command."""
    teleop_hold: Positive = 0.5
    """s a ``teleop_command`` source keeps control after its last valid command."""
    latch_file: str = ""
    """Where latches persist (empty: a per-node file in the user's state folder)."""


DEFAULT_TOPICS = ["joint_states", "odom", "ee_pose", "raw_command", "command", "diagnostics", "/parameter_events"]
"""Recorded unless ``topics`` is set; ``/parameter_events`` holds every parameter change
(a safety limit tightened while running, with its node and value)."""


@dataclass
class RecorderSettings(NodeSettings):
    topics: list[str] = field(default_factory=lambda: list(DEFAULT_TOPICS))
    """Topics recorded (types of the graph's own topics are known; others are looked up)."""
    output: str = "bags/deploy"
    """Folder of the MCAP rosbag2 (must not exist)."""
    flush_period: Annotated[float, Bounds(gt=0.0, le=60.0)] = 1.0
    """s between complete MCAP chunks on disk (what a crash can lose at most)."""


@dataclass
class CameraSettings(NodeSettings):
    """A camera (V4L2 device, video file or network stream) read with OpenCV."""

    source: str = "0"
    """Device index (``0``: the first camera, ``/dev/video0``), video file path, or stream
    URL (``rtsp://``, ``http://``). A source that cannot be opened fails configure."""
    name: str = "camera"
    """Topic namespace and ``frame_id``: images on ``<name>/image_raw`` and
    ``<name>/image_raw/compressed``."""
    width: ImageSide = 0
    """Pixels the images are resized to (0, with ``height`` 0: the source's own size)."""
    height: ImageSide = 0
    """Pixels the images are resized to (0, with ``width`` 0: the source's own size)."""
    rate: Annotated[float, Bounds(gt=0.0, le=240.0)] = 15.0
    """Hz at which the newest frame is published (a frame is never published twice; a
    video file is read one frame per period)."""
    jpeg_quality: JpegQuality = 80
    """JPEG quality of ``<name>/image_raw/compressed`` (1-100)."""
    publish_raw: bool = True
    """Publish ``<name>/image_raw`` (sensor_msgs/Image, rgb8)."""
    publish_compressed: bool = True
    """Publish ``<name>/image_raw/compressed`` (sensor_msgs/CompressedImage, jpeg)."""
    loop: bool = False
    """A video file starts again at its end (false: it ends, and the end is reported)."""
    reconnect_seconds: Annotated[float, Bounds(gt=0.0, le=3600.0)] = 2.0
    """s between attempts to reopen a device or stream that stopped delivering frames;
    also how long a live source may send nothing before it counts as stopped."""


@dataclass
class ConsoleSettings(StateReaderSettings):
    """The correction console attached to the graph (a web page; docs/console.md)."""

    robot: Robot = "arm"
    """Robot class commanded (its operator space: docs/console.md)."""
    action_mode: str = ""
    """Action mode of the safety filter's commands (empty: the robot's driver mode)."""
    port: Port = 8765
    """TCP port of the web page (0: any free port; the URL is printed)."""
    bind: str = "127.0.0.1"
    """Address served on. Anything but loopback lets other machines reach the robot's
    controls (the token still guards them) and prints a warning."""
    cameras: str = ""
    """Comma-separated camera names shown (``<cam>/image_raw/compressed``)."""
    blend_seconds: Annotated[float, Bounds(ge=0.0, le=5.0)] = 0.4
    """s over which a takeover blends from the policy's command into the operator's."""
    timeout: Annotated[float, Bounds(gt=0.0, le=2.0)] = DEAD_MAN_TIMEOUT
    """s without a command from the operator's page during a takeover before the robot holds."""
    publish_rate: Annotated[float, Bounds(ge=5.0, le=500.0)] = 50.0
    """Hz of the operator's commands while the person (or the hold) is in control."""
    safety_filter: str = "safety_filter"
    """The safety filter node whose ``~/trip_estop`` and ``~/reset`` the e-stop button calls."""
    spacemouse: bool = False
    """A SpaceMouse on this machine is an operator input too (hold its left button)."""


@dataclass
class PlannerSettings(NodeSettings):
    """The hierarchy's upper level: a path from the robot to its goal (docs/deployment.md)."""

    robot: Robot = "quadruped"
    """Robot planned for (its planner: clearance, heights)."""
    spacing: Annotated[float, Bounds(ge=0.1, le=2.0)] = 0.4
    """m between waypoints along the path (the follower's training spacing)."""
    occupied_threshold: Annotated[int, Bounds(ge=1, le=100)] = 50
    """``map`` cells at or above this occupancy are obstacles; unknown cells (-1) are too."""


NODE_SETTINGS: dict[str, type[NodeSettings]] = {
    "sim_bridge": SimBridgeSettings,
    "hardware_bridge": HardwareBridgeSettings,
    "policy": PolicySettings,
    "safety_filter": SafetyFilterSettings,
    "recorder": RecorderSettings,
    "camera": CameraSettings,
    "console": ConsoleSettings,
    "planner": PlannerSettings,
}
"""Node name -> its settings."""


def graph_parameter_names() -> set[str]:
    """Every parameter some node of the graph declares (the safety limits of every robot
    included): an override outside this set is a typo, not another node's setting."""
    import dataclasses

    from sim2real.policies.safety import PARAMS

    classes = [*NODE_SETTINGS.values(), *PARAMS.values()]
    return {f.name for cls in classes for f in dataclasses.fields(cls)}
