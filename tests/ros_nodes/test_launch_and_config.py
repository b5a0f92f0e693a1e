"""Launch files and parameter files, checked without a ROS 2 launch installation:
the launch files parse and declare what a real ``ros2 launch`` needs; every key in
config/<robot>.yaml is a parameter the node declares, with the declared type, and
rclpy accepts the files as ``--params-file``."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
import yaml
from documented_pairings import documented_pairings
from ros_harness import unique_domain_id

from sim2real.robot_names import ROBOT_NAMES
from sim2real.ros_nodes import policy, recorder, safety_filter, sim_bridge

ROOT = Path(__file__).resolve().parents[2]
ROBOTS = tuple(ROBOT_NAMES)  # every registered robot: each has its config and launch file


def declared(node: str, robot: str) -> dict:
    """Every parameter the node declares for ``robot``, with its default in its ROS type."""
    from sim2real.policies.safety import PARAMS
    from sim2real.ros_nodes.parameters import ros_value
    from sim2real.ros_nodes.settings import NODE_SETTINGS
    from sim2real.sim.core.schema import fields_of

    classes = [NODE_SETTINGS[node]] + ([PARAMS[robot]] if node == "safety_filter" else [])
    return {"use_sim_time": False, **{f.name: ros_value(f, f.default) for c in classes for f in fields_of(c)}}


def calls(tree: ast.AST, name: str) -> list[ast.Call]:
    return [n for n in ast.walk(tree) if isinstance(n, ast.Call) and getattr(n.func, "id", None) == name]


@pytest.mark.parametrize("robot", ROBOTS)
def test_launch_file_declares_backend_policy_and_the_nodes(robot: str) -> None:
    from sim2real.ros_nodes.launch_description import arguments, discovery_range, has_hardware_bridge

    tree = ast.parse((ROOT / "launch" / f"{robot}.launch.py").read_text())
    (func,) = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "generate_launch_description"]
    assert ast.unparse(func.body[-1]) == "return generate(ROBOT)"
    (robot_const,) = [n.value for n in tree.body if isinstance(n, ast.Assign)
                      and isinstance(n.targets[0], ast.Name) and n.targets[0].id == "ROBOT"]
    assert ast.literal_eval(robot_const) == robot
    args = {a.name: a for a in arguments(robot)}
    assert set(args) - {"planner", "backend_options", "hardware_backend"} == {"backend", "policy", "record",
                                                                            "discovery", "console", "action_mode"}
    assert ("planner" in args) == (robot in ("quadruped", "drone", "x500"))  # the robots with path-following policies
    assert ("backend_options" in args) == has_hardware_bridge(robot)  # how to reach a robot we drive
    assert ("hardware_backend" in args) == has_hardware_bridge(robot)  # and by which of its protocols
    assert args["backend"].default == "sim" and args["backend"].choices == ("sim", "real")
    assert args["discovery"].default == "auto"
    # DDS stays on this machine for a simulated robot unless asked otherwise.
    assert discovery_range("auto", "sim") == "LOCALHOST" and discovery_range("auto", "real") == "SUBNET"
    assert discovery_range("OFF", "real") == "OFF"


def test_the_launch_builder_makes_required_nodes_from_the_launch_packages() -> None:
    """What `generate` builds with launch/launch_ros (read, as they are not installable here):
    one Node per selected graph node, started as `sim2real deploy --node NAME`, each ending
    the launch on exit through `exit_outcome` (a failure raises: launch then exits 1)."""
    source = (ROOT / "ros_nodes" / "launch_description.py").read_text()
    tree = ast.parse(source)
    (node_call,) = calls(tree, "Node")
    kw = {k.arg: k.value for k in node_call.keywords}
    assert ast.literal_eval(kw["package"]) == "sim2real" and ast.literal_eval(kw["executable"]) == "sim2real"
    assert ast.unparse(kw["arguments"]) == "['deploy', '--node', name, '--']"
    (exit_handler,) = calls(tree, "OnProcessExit")
    assert {k.arg for k in exit_handler.keywords} == {"target_action", "on_exit"}
    assert "exit_outcome(name, event.returncode" in source
    assert "SetEnvironmentVariable(\"ROS_AUTOMATIC_DISCOVERY_RANGE\"" in source


def test_every_graph_node_starts_from_the_launch_command_line() -> None:
    """`planner:=true` ran `sim2real deploy --node planner`, which the command line refused:
    its node names are the graph's (ros_nodes/graph.py NODE_MODULES), not a second list."""
    from sim2real.cli import build_parser
    from sim2real.commands import deploy
    from sim2real.ros_nodes.graph import NODE_MODULES

    for name in NODE_MODULES:
        args = build_parser().parse_args(["deploy", "--node", name, "--", "--ros-args"])
        assert args.node == name
    assert not hasattr(deploy, "NODES")  # one list of nodes: the graph's


def test_an_unknown_node_is_refused_with_the_graphs_nodes(capsys: pytest.CaptureFixture[str]) -> None:
    from sim2real.cli import main

    assert main(["deploy", "--node", "navigator", "--", "--ros-args"]) == 2
    line = capsys.readouterr().err.strip().splitlines()[-1]
    assert "navigator" in line and "planner" in line and "safety_filter" in line


def domain() -> int:
    import os

    return int(os.environ["ROS_DOMAIN_ID"])


@pytest.mark.parametrize("robot", ROBOTS)
def test_a_simulated_robots_latch_lives_for_one_launch_run(robot: str) -> None:
    """A crash in simulation (a latch written, never reset) must not latch the next
    `ros2 launch` run; a real robot's latch persists across runs ($ROS_HOME)."""
    from sim2real.policies.safety.latch import LatchStore
    from sim2real.ros_nodes.launch_description import launch_graph

    first = launch_graph(robot, {}, domain()).parameters["safety_filter"]["latch_file"]
    LatchStore(first).save(["estop: button"])  # the run ends latched (a crash, or no reset)
    try:
        # The next run (this process again: the same file, new for the run).
        second = launch_graph(robot, {}, domain()).parameters["safety_filter"]["latch_file"]
        assert LatchStore(second).load() == []
    finally:
        Path(first).unlink(missing_ok=True)
    real = launch_graph(robot, {"backend": "real"}, domain())
    # The config's latch_file is empty: the safety filter keeps its own file under $ROS_HOME.
    assert "latch_file" not in real.parameters.get("safety_filter", {})
    assert yaml.safe_load((ROOT / "config" / f"{robot}.yaml").read_text())["safety_filter"][
        "ros__parameters"].get("latch_file", "") == ""


@pytest.mark.parametrize("robot", ROBOTS)
def test_launch_arguments_select_the_nodes(robot: str) -> None:
    from sim2real.ros_nodes.launch_description import launch_graph

    assert launch_graph(robot, {}, domain()).nodes == ["sim_bridge", "safety_filter", "policy"]
    everything = {"backend": "real", "record": "true", "console": "true", "policy": "external",
                  **({"planner": "true"} if robot != "arm" else {})}
    started = launch_graph(robot, everything, domain()).nodes
    assert started == ["hardware_bridge", "safety_filter", *(["planner"] if robot != "arm" else []),
                       "recorder", "console"]


WAYPOINTS = {"quadruped": "QuadrupedWaypoints", "drone": "DroneWaypoints"}


@pytest.mark.parametrize("robot", ["quadruped", "drone"])
def test_a_path_following_policy_gets_its_planner_task_and_command_layout(robot: str) -> None:
    """What `ros2 launch ... policy:=<path follower>` passes: the policy's task and command
    layout to the bridge and the filter, and the planner (it never acted without them)."""
    from sim2real.policies.deploy import OnnxPolicy
    from sim2real.ros_nodes.launch_description import launch_graph

    policy = ROOT / "policies" / "baselines" / WAYPOINTS[robot]
    meta = OnnxPolicy(str(policy)).metadata
    graph = launch_graph(robot, {"policy": str(policy)}, domain())
    assert graph.nodes == ["sim_bridge", "safety_filter", "planner", "policy"]
    params = graph.parameters
    assert params["sim_bridge"]["task"] == WAYPOINTS[robot]
    assert params["sim_bridge"]["action_mode"] == params["safety_filter"]["action_mode"] == meta["action_mode"]
    assert params["policy"] == {"policy": str(policy)}
    assert "planner" not in launch_graph(robot, {"policy": str(policy), "planner": "false"}, domain()).nodes


@pytest.mark.parametrize("robot", ROBOTS)
def test_config_keys_are_declared_parameters_with_their_types(robot: str) -> None:
    doc = yaml.safe_load((ROOT / "config" / f"{robot}.yaml").read_text())
    assert set(doc) - {"hardware_bridge", "planner"} == {"sim_bridge", "policy", "safety_filter", "recorder", "console"}
    for node, section in doc.items():
        params = section["ros__parameters"]
        known = declared(node, robot)
        unknown = set(params) - set(known)
        assert not unknown, f"{robot}.yaml {node}: {unknown} are not declared by the node"
        for key, value in params.items():
            want = known[key]
            if isinstance(want, list):
                assert isinstance(value, list) and len(value) and all(type(v) is type(want[0]) for v in value), key
            else:
                assert type(value) is type(want), f"{robot}.yaml {node}.{key}: {type(value)} != {type(want)}"
        if "robot" in known and node != "recorder":
            assert params["robot"] == robot
    assert doc["sim_bridge"]["ros__parameters"]["command_deadline"] == \
        doc["safety_filter"]["ros__parameters"]["command_deadline"]  # a QoS deadline must match on both ends


@pytest.mark.parametrize("robot", ROBOTS)
def test_rclpy_accepts_the_config_as_params_file(robot: str) -> None:
    import rclpy
    from rclpy.context import Context

    path = ROOT / "config" / f"{robot}.yaml"
    context = Context()
    rclpy.init(context=context, domain_id=unique_domain_id(), args=["x", "--ros-args", "--params-file", str(path)])
    try:
        doc = yaml.safe_load(path.read_text())
        for cls in (sim_bridge.SimBridge, policy.PolicyNode, safety_filter.SafetyFilterNode, recorder.Recorder):
            node = cls(context=context)
            expected = doc[node.get_name()]["ros__parameters"]
            for key, value in expected.items():
                assert node.get_parameter(key).value == value
            node.destroy_node()
    finally:
        rclpy.shutdown(context=context)


@pytest.mark.parametrize("robot, at_least", [("arm", 5.0), ("quadruped", 11.0), ("drone", 15.0)])
def test_a_hardware_bridge_gets_the_time_its_robot_needs_to_come_to_rest(robot: str, at_least: float) -> None:
    """A Go2's close() lies it down and hands it back to sport mode, a Crazyflie's waits for
    the firmware's landing: launch's default 5 s before SIGKILL cut both short. The grace
    comes from the backend (one place) and reaches `ros2 launch` as `sigterm_timeout`."""
    from sim2real.ros_nodes.graph import STOP_GRACE, stop_grace

    assert stop_grace("hardware_bridge", robot) >= at_least
    assert stop_grace("policy", robot) == STOP_GRACE
    source = (ROOT / "ros_nodes" / "launch_description.py").read_text()
    assert "sigterm_timeout=str(grace)" in source


@pytest.mark.parametrize("robot", ROBOTS)
def test_the_documented_emulator_pairing_gives_the_backend_options_it_needs(robot: str) -> None:
    """docs/hardware.md pairs each robot's ``backend:=real`` with its emulator in one command
    line, and the robot's backend accepts the options that line gives it: the UR5e's
    ``backend:=real`` alone fails (``ur`` at the root needs the driver's ``domain_id``)."""
    import json

    from sim2real.hardware.backend import backend_class
    from sim2real.ros_nodes.launch_description import launch_graph
    from sim2real.sim import robot_deployment

    docs = documented_pairings()
    assert robot in docs, f"docs/hardware.md pairs {sorted(docs)} with their emulators, not the {robot}"
    args = docs[robot].launch
    assert args.get("backend") == "real"
    config = yaml.safe_load((ROOT / "config" / f"{robot}.yaml").read_text())["hardware_bridge"]["ros__parameters"]
    params = {**config, **launch_graph(robot, args, domain()).parameters.get("hardware_bridge", {})}
    info = robot_deployment(robot)
    mode = info.driver_mode(params["action_mode"] or info.action_mode, {})[0]
    backend = backend_class(params["backend"] or info.real_backend)(mode, json.loads(params["backend_options"] or "{}"))
    backend.close()


def test_the_documented_px4_pairing_starts_the_px4_backend() -> None:
    """The drone's second protocol: ``hardware_backend:=px4`` reaches the hardware bridge's
    ``backend`` parameter (before, the launch files had no way to choose it)."""
    from sim2real.hardware.backend import backend_class
    from sim2real.hardware.px4.backend import Px4Backend
    from sim2real.ros_nodes.launch_description import launch_graph

    args = documented_pairings()["drone-px4"].launch
    assert args == {"backend": "real", "hardware_backend": "px4"}
    params = launch_graph("drone", args, domain()).parameters["hardware_bridge"]
    assert params["backend"] == "px4" and backend_class(params["backend"]) is Px4Backend
