"""Every node's parameters are described (``ros2 param describe``), typed and ranged;
what is fixed is read-only; parameter files are read as rcl reads them, by the nodes
under ``ros2 launch`` and by ``sim2real deploy`` alike (issue 26, defects 1 and 3)."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest
from ros_harness import Harness, unique_domain_id, wait_for

from sim2real.errors import ConfigError
from sim2real.ros_nodes.graph import NODE_MODULES, load_config, node_class

ROOT = Path(__file__).resolve().parents[2]


def _call(h: Harness, service_type: Any, name: str, request: Any) -> Any:
    client = h.nodes[0].create_client(service_type, name)
    assert client.wait_for_service(timeout_sec=5.0), name
    future = client.call_async(request)
    assert wait_for(future.done, 5.0), name
    return future.result()


@pytest.mark.parametrize("robot", ["arm", "quadruped", "drone"])
def test_every_parameter_of_every_node_has_a_description_type_and_range(robot: str) -> None:
    """Through the ``list_parameters`` and ``describe_parameters`` services, as
    ``ros2 param list`` / ``ros2 param describe`` ask them."""
    from rcl_interfaces.msg import ParameterType
    from rcl_interfaces.srv import DescribeParameters, ListParameters
    from rclpy.node import Node
    from rclpy.parameter import Parameter

    h = Harness()
    try:
        h.add(Node("param_client", context=h.context))
        for name in NODE_MODULES:
            if name == "hardware_bridge" and robot != "arm":
                continue
            h.add(node_class(name)(context=h.context, parameter_overrides=[Parameter("robot", value=robot)]
                                   if name != "recorder" else []))
        h.spin()
        for name in NODE_MODULES:
            if name == "hardware_bridge" and robot != "arm":
                continue
            listed = _call(h, ListParameters, f"/{name}/list_parameters", ListParameters.Request()).result.names
            own = [n for n in listed if n not in ("use_sim_time", "start_type_description_service")]
            assert len(own) >= 3, (name, listed)
            described = _call(h, DescribeParameters, f"/{name}/describe_parameters",
                              DescribeParameters.Request(names=own)).descriptors
            for d in described:
                assert d.description.strip(), f"{name}.{d.name} has no description"
                assert not d.dynamic_typing and d.type != ParameterType.PARAMETER_NOT_SET, f"{name}.{d.name}"
                assert d.additional_constraints, f"{name}.{d.name}: say when it may change"
            ranged = {d.name: d for d in described if d.floating_point_range or d.integer_range}
            assert ranged, f"{name}: no ranged parameter"
            if name == "safety_filter":
                robot_param = next(d for d in described if d.name == "robot")
                assert robot_param.read_only
                assert "command_timeout_periods" in ranged
                r = ranged["command_timeout_periods"].floating_point_range[0]
                assert (r.from_value, r.to_value) == (0.5, 100.0)
    finally:
        h.close()


def test_a_read_only_safety_parameter_is_refused_with_a_reason(tmp_path) -> None:
    from rclpy.parameter import Parameter
    from ros_harness import safety_node

    h = Harness()
    try:
        node = h.add(safety_node(h.context, "drone", latch_file=str(tmp_path / "latch.json")))
        result = node.set_parameters([Parameter("robot", value="arm")])[0]
        assert not result.successful and "read-only" in result.reason
        assert node.robot_name == "drone" and node.get_parameter("robot").value == "drone"
    finally:
        h.close()


@pytest.mark.parametrize("name,value,words", [("max_tilt", 0.0, "out of range"),  # the open end of (0, 1.57]
                                              ("max_tilt", float("nan"), "range"),
                                              ("publish_on", "never", "not one of"),
                                              ("command_timeout_periods", 0.1, "out of range"),
                                              ("max_body_rate", [1.0, -2.0, 1.0], "out of range")])
def test_values_out_of_range_are_refused_before_they_reach_the_chain(name: str, value: Any, words: str) -> None:
    from rclpy.parameter import Parameter

    from sim2real.ros_nodes.safety_filter import SafetyFilterNode

    h = Harness()
    try:
        node = h.add(SafetyFilterNode(context=h.context, parameter_overrides=[Parameter("robot", value="drone")]))
        before = node.get_parameter(name).value
        result = node.set_parameters([Parameter(name, value=value)])[0]
        assert not result.successful and words in result.reason, result.reason
        assert node.get_parameter(name).value == before
    finally:
        h.close()


def test_a_bad_override_stops_the_node_at_construction_naming_it() -> None:
    from rclpy.parameter import Parameter

    from sim2real.ros_nodes.safety_filter import SafetyFilterNode

    h = Harness()
    try:
        with pytest.raises(ConfigError, match=r"safety_filter\.max_tilt.*out of range"):
            SafetyFilterNode(context=h.context, parameter_overrides=[Parameter("robot", value="drone"),
                                                                    Parameter("max_tilt", value=5.0)])
        with pytest.raises(ConfigError, match=r"safety_filter\.max_tilt"):  # an integer for a double: ROS's rule
            SafetyFilterNode(context=h.context, parameter_overrides=[Parameter("robot", value="drone"),
                                                                    Parameter("max_tilt", value=1)])
    finally:
        h.close()


def test_rclpy_keeps_the_overrides_where_the_nodes_read_them() -> None:
    """Pins the private ``Node._parameter_overrides`` that :meth:`ManagedNode.check_overrides`
    and :func:`load_config` read: if rclpy moves it, this fails rather than the check
    silently passing."""
    from rclpy.node import Node
    from rclpy.parameter import Parameter

    h = Harness()
    try:
        node = h.add(Node("pin", context=h.context, parameter_overrides=[Parameter("x", value=1.5)]))
        assert node._parameter_overrides["x"].value == 1.5
    finally:
        h.close()


PARAMS_FILE = """\
/**:
  ros__parameters:
    robot: drone
safety_filter:
  ros__parameters:
    max_tilt: 0.5
    fence_low: [-1.0, -1.0, 0.0]
sim_bridge:
  ros__parameters:
    task: DroneHover
    task_options: '{"start": "air"}'
"""


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "params.yaml"
    path.write_text(textwrap.dedent(text))
    return path


def _as_launch_reads(path: Path, name: str) -> Any:
    """The node as ``ros2 launch`` starts it: ``--params-file`` in its context's arguments."""
    import rclpy
    from rclpy.context import Context

    context = Context()
    rclpy.init(context=context, domain_id=unique_domain_id(), args=["x", "--ros-args", "--params-file", str(path)])
    try:
        node = node_class(name)(context=context)
        values = {k: node.get_parameter(k).value for k in node.specs}
        node.check_overrides()
        node.destroy_node()
        return values
    finally:
        rclpy.shutdown(context=context)


def test_a_wildcard_file_reads_the_same_under_launch_and_deploy(tmp_path) -> None:
    path = _write(tmp_path, PARAMS_FILE)
    deploy = load_config(path, domain_id=unique_domain_id())
    # The wildcard reaches every node; a node's own section adds to it; quoted JSON stays a string.
    assert deploy["policy"] == {"robot": "drone"} and deploy["safety_filter"]["max_tilt"] == 0.5
    assert deploy["sim_bridge"]["task_options"] == '{"start": "air"}'
    for name in ("safety_filter", "sim_bridge", "policy"):
        launched = _as_launch_reads(path, name)
        for key, value in deploy[name].items():
            assert launched[key] == value, (name, key)


def test_a_nested_namespace_is_a_dotted_name_that_the_node_refuses(tmp_path) -> None:
    path = _write(tmp_path, """\
        safety_filter:
          ros__parameters:
            robot: drone
            limits:
              max_tilt: 0.5
        """)
    assert load_config(path, domain_id=unique_domain_id())["safety_filter"]["limits.max_tilt"] == 0.5
    with pytest.raises(ConfigError, match=r"unknown parameter\(s\) limits\.max_tilt"):
        _as_launch_reads(path, "safety_filter")


def test_deploy_refuses_a_misspelt_parameter_before_anything_moves(tmp_path) -> None:
    from sim2real.ros_nodes.deployment import DeployOptions, graph_parameters
    from sim2real.ros_nodes.graph import InProcessGraph

    path = _write(tmp_path, (ROOT / "config" / "drone.yaml").read_text().replace("max_tilt:", "max_tlit:"))
    domain = unique_domain_id()
    params, _ = graph_parameters(DeployOptions(robot="drone", config=str(path), domain_id=domain))
    graph = InProcessGraph(params, ["safety_filter"], domain)
    try:
        with pytest.raises(ConfigError, match="max_tlit"):
            graph.start()
    finally:
        graph.shutdown()


def test_set_overrides_take_the_type_of_the_value_they_replace() -> None:
    """``--set safety_filter.fence_low=[-7, -7, -0.5]`` (YAML: ints and a float) is a list of
    doubles, as the file's; a value no ROS parameter can hold is one line naming it."""
    from sim2real.ros_nodes.deployment import DeployOptions, graph_parameters
    from sim2real.ros_nodes.graph import InProcessGraph

    domain = unique_domain_id()
    overrides = {"safety_filter": {"fence_low": [-7, -7, -1], "fence_high": [7, 7, 2.5], "max_tilt": 1}}
    params, _ = graph_parameters(DeployOptions(robot="drone", domain_id=domain, overrides=overrides))
    assert params["safety_filter"]["fence_low"] == [-7.0, -7.0, -1.0]
    node = params["safety_filter"]
    assert all(isinstance(v, float) for v in [*node["fence_low"], node["max_tilt"]])
    graph = InProcessGraph(params, ["safety_filter"], domain)
    try:
        graph.start()
        assert list(graph.nodes["safety_filter"].get_parameter("fence_high").value) == [7.0, 7.0, 2.5]
    finally:
        graph.shutdown()
    params["safety_filter"]["fence_low"] = [1.0, "x"]
    with pytest.raises(ConfigError, match=r"safety_filter\.fence_low"):
        InProcessGraph(params, ["safety_filter"], domain)


@pytest.mark.parametrize("text,words", [("safety_fliter:\n  ros__parameters:\n    max_tilt: 0.5\n", "reaches no node"),
                                        ("safety_filter: [1, 2\n", "not valid YAML"),
                                        ("- 1\n- 2\n", "node names mapped")])
def test_malformed_parameter_files_are_one_line_errors_naming_the_file(tmp_path, text: str, words: str) -> None:
    path = _write(tmp_path, text)
    with pytest.raises(ConfigError, match=words) as err:
        load_config(path, domain_id=unique_domain_id())
    assert str(path) in str(err.value) and "\n" not in str(err.value)


@pytest.mark.parametrize("robot", ["arm", "quadruped", "drone"])
def test_the_shipped_files_load_through_the_strict_loader(robot: str) -> None:
    """Each node's section of config/<robot>.yaml is valid for its settings dataclass."""
    from sim2real.policies.safety import PARAMS
    from sim2real.ros_nodes.settings import NODE_SETTINGS
    from sim2real.sim.core.schema import fields_of, from_dict

    for name, values in load_config(ROOT / "config" / f"{robot}.yaml", domain_id=unique_domain_id()).items():
        settings = NODE_SETTINGS[name]
        own = {f.name for f in fields_of(settings)}
        from_dict(settings, {k: v for k, v in values.items() if k in own})
        if name == "safety_filter":
            from_dict(PARAMS[robot], {k: v for k, v in values.items() if k not in own})


def test_one_action_mode_reaches_every_node_that_reads_commands() -> None:
    """``deploy --action-mode velocity`` with the classical controller: the policy, the
    filter, the simulator and the driver all read the velocity space (one option, not
    four overrides that could disagree); an exported policy keeps its own and refuses another."""
    from sim2real.ros_nodes.deployment import DeployOptions, graph_parameters

    for backend, readers in (("sim", ("policy", "safety_filter", "sim_bridge")),
                             ("real", ("policy", "safety_filter", "hardware_bridge"))):
        params, nodes = graph_parameters(DeployOptions(robot="x500", backend=backend, policy="classical",
                                                       action_mode="velocity", domain_id=unique_domain_id()))
        assert {node: params[node]["action_mode"] for node in readers} == dict.fromkeys(readers, "velocity")
        assert set(readers) <= set(nodes)
    params, _ = graph_parameters(DeployOptions(robot="x500", policy="classical", domain_id=unique_domain_id()))
    assert params["safety_filter"]["action_mode"] == "ctbr"  # the parameter file's
    from sim2real.ros_nodes.launch_description import launch_graph

    launched = launch_graph("x500", {"backend": "real", "policy": "classical", "action_mode": "velocity"},
                            unique_domain_id())  # `ros2 launch ... action_mode:=velocity`: the same rule
    assert {node: launched.parameters[node]["action_mode"] for node in ("policy", "safety_filter", "hardware_bridge")} \
        == dict.fromkeys(("policy", "safety_filter", "hardware_bridge"), "velocity")
    with pytest.raises(ConfigError, match="acts in ctbr_residual, not velocity"):
        graph_parameters(DeployOptions(robot="drone", policy=str(ROOT / "policies" / "baselines" / "DroneHover"),
                                       action_mode="velocity", domain_id=unique_domain_id()))
