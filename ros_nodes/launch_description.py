# launch and launch_ros come with a ROS 2 installation (there are no PyPI wheels), so
# the type checker cannot resolve them here; only generate() imports them.
# pyright: reportMissingImports=false
"""The deployment graph as a ROS 2 launch description, shared by every
``launch/<robot>.launch.py`` (each file is its robot's name and one call).

The graph is data here (:func:`arguments`, :func:`nodes`), so it is tested without a
ROS 2 installation; :func:`generate` turns it into ``launch``/``launch_ros`` actions
and imports them only when a launch file runs. Which nodes a robot has comes from its
``config/<robot>.yaml`` (a ``hardware_bridge`` section means ``backend:=real`` starts
our driver; otherwise the robot's own driver provides the topics).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class LaunchArgument:
    name: str
    default: str
    description: str
    choices: tuple[str, ...] = ()


@dataclass(frozen=True)
class LaunchNode:
    name: str
    when: tuple[str, str] | None = None
    """``(launch argument, value)`` that starts the node (``None``: always)."""
    unless: tuple[str, str] | None = None
    """``(launch argument, value)`` that keeps the node from starting."""
    overrides: dict[str, str] = field(default_factory=dict)
    """Node parameter -> launch argument whose value it takes."""


DISCOVERY = ("auto", "LOCALHOST", "SUBNET", "SYSTEM_DEFAULT", "OFF")


def _config(robot: str) -> Path:
    from sim2real.ros_nodes.graph import config_dir

    return config_dir() / f"{robot}.yaml"


def has_hardware_bridge(robot: str) -> bool:
    """The robot speaks a sim2real wire protocol: ``backend:=real`` starts our driver."""
    from sim2real.ros_nodes.graph import sections

    return "hardware_bridge" in sections(_config(robot))


def has_planner(robot: str) -> bool:
    """The robot has path-following policies: ``planner:=true`` starts its planner."""
    from sim2real.ros_nodes.graph import sections

    return "planner" in sections(_config(robot))


def arguments(robot: str) -> list[LaunchArgument]:
    real = ("start the hardware bridge to the robot" if has_hardware_bridge(robot)
            else "the robot's driver provides the topics")
    planner = ([LaunchArgument("planner", "false", "plan a path to the goal on `plan` (nav_msgs/Path) from `map` or "
                                                   "the simulated `course`, for path-following policies",
                               ("true", "false"))] if has_planner(robot) else [])
    return [
        *planner,
        LaunchArgument("backend", "sim", f"sim: start the MuJoCo sim bridge; real: {real}", ("sim", "real")),
        LaunchArgument("policy", "classical", "exported policy (policy.onnx, its .json or folder), 'classical', or "
                                              "'external': no policy node, another program publishes raw_command "
                                              "(sim2real hil actor --env ros)"),
        LaunchArgument("record", "false", "record an MCAP rosbag2", ("true", "false")),
        LaunchArgument("console", "false", "serve the correction console (its URL and token are printed)",
                       ("true", "false")),
        LaunchArgument("discovery", "auto", "DDS discovery range; auto: LOCALHOST for backend:=sim, SUBNET for "
                                            "real (then secure the graph with SROS2, docs/deployment.md)", DISCOVERY),
    ]


def nodes(robot: str) -> list[LaunchNode]:
    out = [LaunchNode("sim_bridge", ("backend", "sim"))]
    if has_hardware_bridge(robot):
        out.append(LaunchNode("hardware_bridge", ("backend", "real")))
    if has_planner(robot):
        out.append(LaunchNode("planner", ("planner", "true")))
    return [*out, LaunchNode("safety_filter"),
            LaunchNode("policy", unless=("policy", "external"), overrides={"policy": "policy"}),
            LaunchNode("recorder", ("record", "true")), LaunchNode("console", ("console", "true"))]


def discovery_range(discovery: str, backend: str) -> str:
    """``ROS_AUTOMATIC_DISCOVERY_RANGE`` for the nodes: ``auto`` keeps a simulated robot's
    DDS traffic on this machine and lets a real one reach its driver."""
    if discovery != "auto":
        return discovery
    return "LOCALHOST" if backend == "sim" else "SUBNET"


def generate(robot: str) -> Any:
    """The ``LaunchDescription`` of ``robot``'s graph (needs ``launch`` and ``launch_ros``)."""
    from launch.actions import DeclareLaunchArgument, OpaqueFunction, SetEnvironmentVariable, Shutdown
    from launch.conditions import LaunchConfigurationEquals, LaunchConfigurationNotEquals
    from launch.launch_description import LaunchDescription
    from launch.substitutions import LaunchConfiguration
    from launch_ros.actions import Node

    config = str(_config(robot))

    def discovery(context: Any) -> list[Any]:
        value = discovery_range(LaunchConfiguration("discovery").perform(context),
                                LaunchConfiguration("backend").perform(context))
        return [SetEnvironmentVariable("ROS_AUTOMATIC_DISCOVERY_RANGE", value)]

    actions: list[Any] = [DeclareLaunchArgument(a.name, default_value=a.default, description=a.description,
                                                **({"choices": list(a.choices)} if a.choices else {}))
                          for a in arguments(robot)]
    actions.append(OpaqueFunction(function=discovery))
    for n in nodes(robot):
        actions.append(Node(
            package="sim2real", executable="sim2real", name=n.name, arguments=["deploy", "--node", n.name, "--"],
            parameters=[config, *({k: LaunchConfiguration(v)} for k, v in n.overrides.items())],
            output="screen", emulate_tty=True,
            condition=(LaunchConfigurationEquals(*n.when) if n.when else
                       LaunchConfigurationNotEquals(*n.unless) if n.unless else None),
            # Any node ending ends the launch: a node that cannot load its policy exits
            # non-zero with one error line, and the rest must not run on without it.
            on_exit=Shutdown(reason=f"{n.name} exited"),
        ))
    return LaunchDescription(actions)
