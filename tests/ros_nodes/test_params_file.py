"""Parameter files are read by ``sim2real deploy`` as rcl reads them: wildcard and
namespaced sections reach the nodes whose fully qualified names they match, a section
that reaches no node is refused with the graph's names, and a bad value names the file
and the section it came from (issue 44, item 5)."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest
from ros_harness import unique_domain_id

from sim2real.errors import ConfigError
from sim2real.ros_nodes.graph import load_config

ROOT = Path(__file__).resolve().parents[2]


def _domain() -> int:
    """The session's own domain when it set one, else a fresh one."""
    return int(os.environ.get("ROS_DOMAIN_ID") or unique_domain_id())


def _write(tmp_path: Path, text: str, name: str = "params.yaml") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


WILDCARD_NODE = "/**/safety_filter:\n  ros__parameters:\n    max_tilt: 0.5\n"
NAMESPACED = "/robot1/safety_filter:\n  ros__parameters:\n    max_tilt: 0.5\n"
NESTED = "robot1:\n  safety_filter:\n    ros__parameters:\n      max_tilt: 0.5\n"


def test_a_wildcard_namespace_section_reaches_the_node(tmp_path) -> None:
    values = load_config(_write(tmp_path, WILDCARD_NODE), domain_id=_domain())
    assert values == {"safety_filter": {"max_tilt": 0.5}}


@pytest.mark.parametrize("text", [NAMESPACED, NESTED], ids=["absolute", "nested"])
def test_a_namespaced_section_reaches_the_node_in_that_namespace_only(tmp_path, text: str) -> None:
    path = _write(tmp_path, text)
    assert load_config(path, domain_id=_domain(), namespace="/robot1") == {"safety_filter": {"max_tilt": 0.5}}
    # Outside /robot1 rcl would ignore it: refused, naming the section as rcl names it and the graph's nodes.
    with pytest.raises(ConfigError, match=r"section /robot1/safety_filter reaches no node.*/safety_filter") as err:
        load_config(path, domain_id=_domain())
    assert str(path) in str(err.value) and "\n" not in str(err.value)


@pytest.mark.parametrize("section,fqn", [
    ("/**", "/safety_filter"), ("/**", "/a/b/safety_filter"), ("/**/safety_filter", "/safety_filter"),
    ("/**/safety_filter", "/robot1/safety_filter"), ("/**/safety_filter", "/robot1/policy"),
    ("/*/safety_filter", "/safety_filter"), ("/*/safety_filter", "/robot1/safety_filter"),
    ("/*/safety_filter", "/a/robot1/safety_filter"), ("/robot1/**", "/robot1/safety_filter"),
    ("/robot1/**", "/safety_filter"), ("/robot1/*", "/robot1/policy"), ("/*", "/policy"),
    ("/*", "/robot1/policy"), ("/safety_filter", "/safety_filter"), ("/safety_filter", "/robot1/safety_filter"),
    ("/robot1/safety_filter", "/robot1/safety_filter"), ("/robot1/safety_filter", "/robot2/safety_filter"),
])
def test_which_node_a_section_reaches_is_rclpys_own_answer(tmp_path, section: str, fqn: str) -> None:
    """The section matching used to name a value's origin and to refuse a section agrees
    with what rclpy hands the node."""
    import rclpy
    from rclpy.context import Context

    from sim2real.ros_nodes.params_file import read_sections

    path = _write(tmp_path, f"{section}:\n  ros__parameters:\n    marker: 1\n")
    namespace, _, name = fqn.rpartition("/")
    context = Context()
    rclpy.init(context=context, domain_id=_domain(), args=["x", "--ros-args", "--params-file", str(path)])
    try:
        node = rclpy.create_node(name, namespace=namespace or "/", context=context,
                                 start_parameter_services=False, enable_rosout=False)
        reached = "marker" in node._parameter_overrides
        node.destroy_node()
    finally:
        rclpy.shutdown(context=context)
    [parsed] = read_sections(path)
    assert parsed.applies_to(fqn) == reached


def _drone_config(tmp_path: Path, old: str, new: str) -> Path:
    text = (ROOT / "config" / "drone.yaml").read_text()
    assert old in text
    return _write(tmp_path, text.replace(old, new, 1), "drone.yaml")


def test_a_wildcard_hardware_bridge_section_still_starts_our_driver(tmp_path) -> None:
    from sim2real.ros_nodes.deployment import DeployOptions, graph_parameters

    path = _drone_config(tmp_path, "\nhardware_bridge:", "\n/**/hardware_bridge:")
    _, nodes = graph_parameters(DeployOptions(robot="drone", backend="real", policy="classical", config=str(path),
                                              domain_id=_domain()))
    assert "hardware_bridge" in nodes


@pytest.mark.parametrize("section", ["safety_filter", "/**/safety_filter"])
def test_a_bad_value_names_the_file_and_its_section(tmp_path, section: str) -> None:
    from sim2real.ros_nodes.deployment import DeployOptions, graph_parameters

    path = _drone_config(tmp_path, "\nsafety_filter:", f"\n{section}:")
    path.write_text(path.read_text().replace("max_tilt:", "max_tilt: 5.0 #", 1))
    with pytest.raises(ConfigError) as err:
        graph_parameters(DeployOptions(robot="drone", policy="classical", config=str(path), domain_id=_domain()))
    text = str(err.value)
    assert str(path) in text and f"section {'/' + section.lstrip('/')}" in text, text
    assert "max_tilt" in text and "5.0" in text and "\n" not in text


def test_a_bad_set_value_names_the_set_flag() -> None:
    from sim2real.ros_nodes.deployment import DeployOptions, graph_parameters

    with pytest.raises(ConfigError, match=r"--set: safety_filter\.max_tilt.*5\.0"):
        graph_parameters(DeployOptions(robot="drone", policy="classical", domain_id=_domain(),
                                       overrides={"safety_filter": {"max_tilt": 5.0}}))


def test_checking_the_parameters_puts_no_node_in_the_graphs_domain() -> None:
    """deploy and the launch files check every node's parameters in a private context
    before starting: its nodes (a `safety_filter` with a `command` publisher among them)
    must never be seen by the graph about to start, or by one already running."""
    import threading
    import time

    import rclpy
    from rclpy.context import Context

    from sim2real.ros_nodes.deployment import DeployOptions, graph_parameters

    domain = unique_domain_id()
    context = Context()
    rclpy.init(context=context, domain_id=domain)
    probe = rclpy.create_node("parameter_check_probe", context=context)
    seen: set[str] = set()
    done = threading.Event()

    def check() -> None:
        try:
            for _ in range(3):
                graph_parameters(DeployOptions(robot="arm", domain_id=domain))
        finally:
            done.set()

    worker = threading.Thread(target=check)
    worker.start()
    try:
        while not done.is_set():
            seen |= {name for name, _ in probe.get_node_names_and_namespaces()}
            time.sleep(0.01)
        worker.join()
        time.sleep(0.5)  # discovery's late news of a participant that has gone
        seen |= {name for name, _ in probe.get_node_names_and_namespaces()}
    finally:
        probe.destroy_node()
        rclpy.shutdown(context=context)
    assert not seen & {"safety_filter", "policy", "sim_bridge"}, seen
