# launch and launch_ros come with a ROS 2 installation (there are no PyPI wheels), so
# the type checker cannot resolve them here; only generate() imports them.
# pyright: reportMissingImports=false
"""The deployment graph as a ROS 2 launch description, shared by every
``launch/<robot>.launch.py`` (each file is its robot's name and one call).

The graph is data here (:func:`arguments`, :func:`launch_graph`, :func:`exit_outcome`),
so it is tested without a ROS 2 installation; :func:`generate` turns it into
``launch``/``launch_ros`` actions and imports them only when a launch file runs. A
launch run starts the nodes ``sim2real deploy`` would start for the same choices, with
the same parameters (``config/<robot>.yaml`` and what the policy needs); a
``hardware_bridge`` section in the config means ``backend:=real`` starts our driver,
otherwise the robot's own driver provides the topics.

How a launch run ends (docs/deployment.md, "Launch behaviour"): any node ending ends
the launch; a node ending with a non-zero code (it could not start: a missing policy,
a missing extra) makes ``ros2 launch`` exit non-zero with that node's last line as the
reason. Nodes end with the launch process however it ends (each asks the kernel for
SIGTERM when its parent dies: :mod:`sim2real.ros_nodes.process_life`).
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class LaunchArgument:
    name: str
    default: str
    description: str
    choices: tuple[str, ...] = ()


DISCOVERY = ("auto", "LOCALHOST", "SUBNET", "SYSTEM_DEFAULT", "OFF")


def _config(robot: str) -> Path:
    from sim2real.ros_nodes.graph import config_dir

    return config_dir() / f"{robot}.yaml"


def has_hardware_bridge(robot: str) -> bool:
    """The robot speaks a sim2real wire protocol: ``backend:=real`` starts our driver."""
    from sim2real.ros_nodes.graph import sections

    return "hardware_bridge" in sections(_config(robot))


def has_planner(robot: str) -> bool:
    """The robot has path-following policies: a planner can give them their path."""
    from sim2real.ros_nodes.graph import sections

    return "planner" in sections(_config(robot))


def arguments(robot: str) -> list[LaunchArgument]:
    from sim2real.policies.shipped import default_policy

    real = ("start the hardware bridge to the robot" if has_hardware_bridge(robot)
            else "the robot's driver provides the topics")
    bridge = ([LaunchArgument("backend_options", "", "backend:=real: how to reach the robot, JSON on top of the "
                                                     "config's (e.g. '{\"interface\": \"lo\"}' for its emulator "
                                                     "on this machine); empty: the config's, the robot's own defaults"),
               LaunchArgument("hardware_backend", "", "backend:=real: the robot's protocol, a backend registered in "
                                                      "sim2real.hardware.backend.BACKENDS for this robot (e.g. px4 "
                                                      "for a PX4 drone); empty: the config's, the robot's own")]
              if has_hardware_bridge(robot) else [])
    planner = ([LaunchArgument("planner", "auto", "auto: plan a path to the goal on `plan` (nav_msgs/Path) from "
                                                  "`map` or the simulated `course` when the policy follows one; "
                                                  "true/false: always/never", ("auto", "true", "false"))]
               if has_planner(robot) else [])
    return [
        *planner,
        LaunchArgument("backend", "sim", f"sim: start the MuJoCo sim bridge; real: {real}", ("sim", "real")),
        *bridge,
        LaunchArgument("policy", default_policy(robot), "a shipped policy's name (sim2real deploy's default too), an "
                                                        "exported policy (policy.onnx, its .json or folder), "
                                                        "'classical', or 'external': no policy node, another program "
                                                        "publishes raw_command (sim2real hil actor --env ros)"),
        LaunchArgument("action_mode", "", "the command space of a classical or external policy, for every node "
                                          "that reads commands (the drones: ctbr or velocity); empty: the "
                                          "config's; an exported policy's is its own"),
        LaunchArgument("record", "false", "record an MCAP rosbag2 (into the recorder's `output` of the config)",
                       ("true", "false")),
        LaunchArgument("console", "false", "serve the correction console (its URL and token are printed)",
                       ("true", "false")),
        LaunchArgument("discovery", "auto", "DDS discovery range; auto: LOCALHOST for backend:=sim, SUBNET for "
                                            "real (then secure the graph with SROS2, docs/deployment.md)", DISCOVERY),
    ]


def defaults(robot: str) -> dict[str, str]:
    """Every launch argument of ``robot`` at its default value."""
    return {a.name: a.default for a in arguments(robot)}


@dataclass(frozen=True)
class LaunchGraph:
    """One launch run's graph."""

    nodes: list[str]
    """The nodes it starts, robot first (:data:`~sim2real.ros_nodes.graph.START_ORDER`)."""
    parameters: dict[str, dict[str, Any]]
    """What each node gets beyond ``config/<robot>.yaml`` (nodes with nothing more absent)."""


def launch_graph(robot: str, args: dict[str, str], domain: int) -> LaunchGraph:
    """The nodes and parameters of one launch run: ``sim2real deploy``'s own rule
    (:func:`~sim2real.ros_nodes.deployment.graph_parameters`) for these launch arguments,
    so both start the same graph. The policy's metadata sets the simulated task, the
    command layout of the filter and the bridges, and whether the planner runs (``auto``);
    a simulated robot gets a latch file of this run only (a crash in simulation never
    latches the next run), a real robot keeps its own under ``$ROS_HOME`` across runs.

    Raises:
        ConfigError: a policy that cannot run on this robot, a malformed config (before
            any node starts).
    """
    from sim2real.ros_nodes.deployment import DeployOptions, graph_parameters
    from sim2real.ros_nodes.graph import START_ORDER, load_config

    args = {**defaults(robot), **args}
    base = load_config(_config(robot), domain)
    record = str(base.get("recorder", {}).get("output") or "bags/deploy") if args["record"] == "true" else ""
    reach = {"hardware_bridge": {k: args[v] for k, v in (("backend_options", "backend_options"),
                                                         ("backend", "hardware_backend")) if args.get(v)}}
    reach = reach if reach["hardware_bridge"] else {}
    merged, started = graph_parameters(DeployOptions(robot=robot, backend=args["backend"], policy=args["policy"],
                                                     record=record, console=args["console"] == "true",
                                                     domain_id=domain, overrides=reach,
                                                     action_mode=args["action_mode"]))
    if args.get("planner") == "true" and "planner" not in started:
        started.append("planner")
    elif args.get("planner") == "false" and "planner" in started:
        started.remove("planner")
    extra: dict[str, dict[str, Any]] = {}
    for name in started:
        given = base.get(name, {})
        values = {k: v for k, v in merged.get(name, {}).items() if k not in given or given[k] != v}
        if values:
            extra[name] = values
    return LaunchGraph(nodes=[n for n in START_ORDER if n in started], parameters=extra)


def discovery_range(discovery: str, backend: str) -> str:
    """``ROS_AUTOMATIC_DISCOVERY_RANGE`` for the nodes: ``auto`` keeps a simulated robot's
    DDS traffic on this machine and lets a real one reach its driver."""
    if discovery != "auto":
        return discovery
    return "LOCALHOST" if backend == "sim" else "SUBNET"


class NodeFailed(RuntimeError):
    """A node of the graph ended with a non-zero code: the launch ends non-zero with it."""


def exit_outcome(name: str, returncode: int, last_line: str) -> str:
    """The reason the launch shuts down when node ``name`` exits (any node ending ends
    the launch: the rest must not run on without it).

    Raises:
        NodeFailed: the node failed (non-zero code): its name, code and last line.
    """
    if returncode == 0:
        return f"{name} exited"
    code = f"code {returncode}"
    if returncode < 0:
        with contextlib.suppress(ValueError):  # a number no signal has
            code += f" ({signal.Signals(-returncode).name})"
    raise NodeFailed(f"{name} exited with {code}: {last_line or 'no output'}")


_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def last_line(text: str) -> str:
    """The last non-empty line of a node's output, without terminal colours."""
    lines = [ln.strip() for ln in _ANSI.sub("", text).splitlines() if ln.strip()]
    return lines[-1] if lines else ""


def generate(robot: str) -> Any:
    """The ``LaunchDescription`` of ``robot``'s graph (needs ``launch`` and ``launch_ros``)."""
    from launch.actions import DeclareLaunchArgument, OpaqueFunction
    from launch.launch_description import LaunchDescription

    actions: list[Any] = [DeclareLaunchArgument(a.name, default_value=a.default, description=a.description,
                                                **({"choices": list(a.choices)} if a.choices else {}))
                          for a in arguments(robot)]
    actions.append(OpaqueFunction(function=lambda context: _run_actions(robot, context)))
    return LaunchDescription(actions)


def _run_actions(robot: str, context: Any) -> list[Any]:
    """One run's actions, once its launch arguments are known: the DDS range, and each
    node of :func:`launch_graph` with its parameters and the handlers that end the
    launch with it."""
    from launch.actions import RegisterEventHandler, SetEnvironmentVariable, Shutdown
    from launch.event_handlers import OnProcessExit, OnProcessIO
    from launch_ros.actions import Node

    from sim2real.ros_nodes.graph import stop_grace

    args = {a.name: context.launch_configurations.get(a.name, a.default) for a in arguments(robot)}
    domain = int(context.environment.get("ROS_DOMAIN_ID") or os.environ.get("ROS_DOMAIN_ID") or 0)
    graph = launch_graph(robot, args, domain)
    config = str(_config(robot))
    out: list[Any] = [SetEnvironmentVariable("ROS_AUTOMATIC_DISCOVERY_RANGE",
                                             discovery_range(args["discovery"], args["backend"]))]
    for name in graph.nodes:
        extra = {k: _launch_value(v) for k, v in graph.parameters.get(name, {}).items()}
        grace = stop_grace(name, robot, str(graph.parameters.get(name, {}).get("backend", "")))
        node = Node(package="sim2real", executable="sim2real", name=name, arguments=["deploy", "--node", name, "--"],
                    parameters=[config, *([extra] if extra else [])], output="screen", emulate_tty=True,
                    sigterm_timeout=str(grace))  # a robot's bridge leaves it at rest before it is killed
        output = {"stdout": "", "stderr": ""}

        def keep(event: Any, output: dict[str, str] = output) -> None:
            line = last_line(event.text.decode(errors="replace"))
            if line:
                output["stderr" if event.from_stderr else "stdout"] = line

        def ended(event: Any, _context: Any, name: str = name, output: dict[str, str] = output) -> Any:
            # Raised from the handler, the failure reaches LaunchService.run_async, which
            # logs it, shuts the launch down and returns 1 (`ros2 launch` exits with it);
            # a Shutdown action alone would end the launch with 0.
            return Shutdown(reason=exit_outcome(name, event.returncode, output["stderr"] or output["stdout"]))

        # Registered before the node starts, so they run after the node's own handlers
        # (launch runs the newest first): its output is printed and flushed first.
        out += [RegisterEventHandler(OnProcessIO(target_action=node, on_stdout=keep, on_stderr=keep)),
                RegisterEventHandler(OnProcessExit(target_action=node, on_exit=ended)), node]
    return out


def _launch_value(value: Any) -> Any:
    """A parameter value as launch_ros passes it on: strings as strings (it would read a
    plain one as YAML: ``task_options: "{}"`` became a mapping and was refused)."""
    from launch_ros.parameter_descriptions import ParameterValue

    return ParameterValue(value, value_type=str) if isinstance(value, str) else value
