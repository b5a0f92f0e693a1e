"""Launch files and parameter files, checked without a ROS 2 launch installation:
the launch files parse and declare what a real ``ros2 launch`` needs; every key in
config/<robot>.yaml is a parameter the node declares, with the declared type, and
rclpy accepts the files as ``--params-file``."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
import yaml
from ros_harness import unique_domain_id

from sim2real.ros_nodes import policy, recorder, safety_filter, sim_bridge

ROOT = Path(__file__).resolve().parents[2]
ROBOTS = ("arm", "quadruped", "drone")


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
def test_launch_file_declares_backend_policy_and_the_four_nodes(robot: str) -> None:
    from sim2real.ros_nodes.launch_description import arguments, discovery_range, nodes

    tree = ast.parse((ROOT / "launch" / f"{robot}.launch.py").read_text())
    (func,) = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "generate_launch_description"]
    assert ast.unparse(func.body[-1]) == "return generate(ROBOT)"
    (robot_const,) = [n.value for n in tree.body if isinstance(n, ast.Assign) and n.targets[0].id == "ROBOT"]
    assert ast.literal_eval(robot_const) == robot
    args = {a.name: a for a in arguments(robot)}
    assert set(args) - {"planner"} == {"backend", "policy", "record", "discovery", "console"}
    assert ("planner" in args) == (robot in ("quadruped", "drone"))  # the robots with path-following policies
    assert args["backend"].default == "sim" and args["backend"].choices == ("sim", "real")
    assert args["discovery"].default == "auto"
    started = {n.name: n for n in nodes(robot)}
    assert set(started) - {"hardware_bridge", "planner"} == {"sim_bridge", "safety_filter", "policy", "recorder",
                                                             "console"}
    if "planner" in started:
        assert started["planner"].when == ("planner", "true")
    assert started["console"].when == ("console", "true")
    assert started["sim_bridge"].when == ("backend", "sim") and started["recorder"].when == ("record", "true")
    assert started["policy"].overrides == {"policy": "policy"}
    # DDS stays on this machine for a simulated robot unless asked otherwise.
    assert discovery_range("auto", "sim") == "LOCALHOST" and discovery_range("auto", "real") == "SUBNET"
    assert discovery_range("OFF", "real") == "OFF"


def test_the_launch_builder_makes_required_nodes_from_the_launch_packages() -> None:
    """What `generate` builds with launch/launch_ros (read, as they are not installable here):
    one Node per graph node, each shutting the launch down on exit."""
    source = (ROOT / "ros_nodes" / "launch_description.py").read_text()
    tree = ast.parse(source)
    (node_call,) = calls(tree, "Node")
    kw = {k.arg: k.value for k in node_call.keywords}
    assert ast.literal_eval(kw["package"]) == "sim2real" and ast.literal_eval(kw["executable"]) == "sim2real"
    assert kw["on_exit"].func.id == "Shutdown"  # a node that exits (cannot start) ends the launch
    assert "SetEnvironmentVariable(\"ROS_AUTOMATIC_DISCOVERY_RANGE\"" in source


def test_the_launch_command_line_reaches_the_node() -> None:
    from sim2real.cli import build_parser

    # What launch_ros runs: executable, the node's `arguments`, then the ROS arguments.
    args = build_parser().parse_args(["deploy", "--node", "policy", "--", "--ros-args", "-r", "__node:=policy",
                                      "--params-file", "/tmp/x.yaml"])
    assert args.node == "policy" and args.ros_args[1:] == ["--ros-args", "-r", "__node:=policy",
                                                           "--params-file", "/tmp/x.yaml"]


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
