"""A launch run and ``sim2real deploy`` deploy the same default policy, and a shipped
policy's name works from any directory, through the ament index after ``colcon build``
(issue 44, item 5b and 5d)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from dds_domains import unique_domain_id

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("robot", ["arm", "quadruped", "drone"])
def test_launch_and_deploy_default_to_the_same_shipped_policy(robot: str) -> None:
    from sim2real.ros_nodes.deployment import DeployOptions, graph_parameters
    from sim2real.ros_nodes.launch_description import defaults, launch_graph

    domain = unique_domain_id()
    deployed = graph_parameters(DeployOptions(robot=robot, domain_id=domain))[0]["policy"]["policy"]
    launched = launch_graph(robot, {}, domain).parameters["policy"]["policy"]
    assert launched == deployed == defaults(robot)["policy"] != "classical"


def test_a_shipped_name_resolves_from_any_directory(tmp_path, monkeypatch) -> None:
    from sim2real.policies.deploy import OnnxPolicy
    from sim2real.ros_nodes.launch_description import launch_graph

    monkeypatch.chdir(tmp_path)  # not a source checkout: policies/baselines/... is not here
    assert OnnxPolicy("QuadrupedWaypoints").task.startswith("sim2real/QuadrupedWaypoints")
    graph = launch_graph("quadruped", {"policy": "QuadrupedWaypoints"}, unique_domain_id())
    assert "planner" in graph.nodes


def test_an_unknown_name_lists_the_shipped_policies(tmp_path, monkeypatch) -> None:
    from sim2real.policies.deploy import OnnxPolicy
    from sim2real.policies.errors import PolicyFileError

    monkeypatch.chdir(tmp_path)
    with pytest.raises(PolicyFileError, match=r"QuadrupedWalk: .*shipped: .*QuadrupedWaypoints"):
        OnnxPolicy("QuadrupedWalk")


def test_the_ament_index_share_is_where_a_colcon_install_keeps_them(tmp_path, monkeypatch) -> None:
    from sim2real.policies.shipped import resolve_policy

    prefix = tmp_path / "install" / "sim2real"
    (prefix / "share" / "ament_index" / "resource_index" / "packages").mkdir(parents=True)
    (prefix / "share" / "ament_index" / "resource_index" / "packages" / "sim2real").touch()
    shutil.copytree(ROOT / "policies" / "baselines" / "DroneHover", prefix / "share" / "sim2real" / "policies"
                    / "DroneHover")
    monkeypatch.setenv("AMENT_PREFIX_PATH", str(prefix))
    assert resolve_policy("DroneHover") == prefix / "share" / "sim2real" / "policies" / "DroneHover"
    monkeypatch.delenv("AMENT_PREFIX_PATH")  # no ROS 2 environment: the package's own files
    assert resolve_policy("DroneHover") == ROOT / "policies" / "baselines" / "DroneHover"


def test_a_parameter_file_that_sets_the_policy_is_refused_not_overridden(tmp_path) -> None:
    """deploy and the launch files always pass the policy they deploy: a value in the
    parameter file would be overridden without a word, so it is refused, named."""
    import yaml

    from sim2real.errors import ConfigError
    from sim2real.ros_nodes.deployment import DeployOptions, graph_parameters

    config = yaml.safe_load((ROOT / "config" / "drone.yaml").read_text())
    config["policy"]["ros__parameters"]["policy"] = "classical"
    path = tmp_path / "drone.yaml"
    path.write_text(yaml.safe_dump(config))
    with pytest.raises(ConfigError, match=r"policy\.policy.*--policy.*policy:="):
        graph_parameters(DeployOptions(robot="drone", config=str(path), domain_id=unique_domain_id()))
