"""An imported policy's deployment settings: its gains reach the robot's backend and the
safety filter, beside what the user sets with ``--set`` (a ``backend_options`` mapping as
YAML reads it, or JSON text), also on the emulated robot."""

from __future__ import annotations

import json

import pytest
from foreign_policy import small_network
from test_rl_sar_import import write_folder

from sim2real.commands.deploy import node_overrides
from sim2real.commands.overrides import parse_overrides
from sim2real.policies.importers import READERS
from sim2real.policies.importers.writer import import_policy
from sim2real.ros_nodes.deployment import DeployOptions, emulated_bridge, graph_parameters
from sim2real.sim.core.errors import ConfigError


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> str:
    root = tmp_path_factory.mktemp("deploy_options")
    folder = write_folder(root, small_network(45, seed=0), rl_kp=[20.0] * 12, rl_kd=[0.5] * 12)  # legged_gym's Go2
    import_policy(READERS["rl_sar"].read(folder), root / "out", check=False)
    return str(root / "out")


def sets(*items: str) -> dict[str, dict]:
    """``--set`` flags as `sim2real deploy` reads them."""
    return node_overrides(parse_overrides(list(items)))


@pytest.mark.parametrize("policy", ["imported", "classical"])
def test_a_backend_options_mapping_given_with_set_reaches_the_bridge_as_json(imported: str, policy: str) -> None:
    """``--set hardware_bridge.backend_options={stand_kp: 50}`` is a mapping once YAML read
    it; the parameter is JSON text. With an imported policy it raised a TypeError."""
    opts = DeployOptions(robot="quadruped", backend="real", policy=imported if policy == "imported" else policy,
                         emulated=True, overrides=sets("hardware_bridge.backend_options={stand_kp: 50.0}"))
    params, _ = graph_parameters(opts)
    options = json.loads(params["hardware_bridge"]["backend_options"])
    gains = {"policy_kp": 20.0, "policy_kd": 0.5} if policy == "imported" else {}
    assert options == {**gains, "stand_kp": 50.0}


def test_bad_backend_options_text_is_one_line_naming_the_parameter(imported: str) -> None:
    for text in ("hardware_bridge.backend_options={oops", "hardware_bridge.backend_options=[1, 2]"):
        with pytest.raises(ConfigError, match="backend_options"):
            graph_parameters(DeployOptions(robot="quadruped", backend="real", policy=imported, emulated=True,
                                           overrides=sets(text)))


def test_under_emulate_the_users_options_go_on_top_of_the_emulators_connection() -> None:
    """The emulator's connection settings (its domain, loopback) stay; the user's keys win
    where they name the same key. Before, the user's options replaced the connection."""
    connect = {"domain_id": 62, "interface": "lo", "release_sport_mode": True}
    for user in ({"stand_kp": 50.0}, json.dumps({"stand_kp": 50.0})):
        bridge = emulated_bridge(connect, {"backend_options": user, "connect_timeout": 9.0})
        assert json.loads(bridge["backend_options"]) == {**connect, "stand_kp": 50.0}
        assert bridge["auto_enable"] is True and bridge["connect_timeout"] == 9.0
    bridge = emulated_bridge(connect, {"backend_options": {"release_sport_mode": False}})
    assert json.loads(bridge["backend_options"])["release_sport_mode"] is False
    assert json.loads(emulated_bridge(connect, {})["backend_options"]) == connect


@pytest.mark.parametrize("backend", ["sim", "real", "launch"])
def test_the_safety_filter_models_the_servo_gains_the_policy_runs_with(imported: str, backend: str) -> None:
    """The filter's servo gains (its torque limit and target lead) are the policy's, in
    every way the graph starts: one process or one per node (both graph_parameters) and
    the launch files (launch_graph). Before, it assumed our kp 35 / kd 1 for every policy."""
    if backend == "launch":
        from sim2real.ros_nodes.launch_description import launch_graph

        filter_params = launch_graph("quadruped", {"policy": imported}, 61).parameters["safety_filter"]
    else:
        params, _ = graph_parameters(DeployOptions(robot="quadruped", backend=backend, policy=imported, emulated=True))
        filter_params = params["safety_filter"]
    assert (filter_params["servo_kp"], filter_params["servo_kd"]) == (20.0, 0.5)


def test_explicit_filter_gains_win_and_our_own_policies_keep_the_configured_ones(imported: str) -> None:
    params, _ = graph_parameters(DeployOptions(robot="quadruped", policy=imported,
                                               overrides=sets("safety_filter.servo_kp=25")))
    assert (params["safety_filter"]["servo_kp"], params["safety_filter"]["servo_kd"]) == (25.0, 0.5)
    params, _ = graph_parameters(DeployOptions(robot="quadruped", policy="classical"))
    assert (params["safety_filter"]["servo_kp"], params["safety_filter"]["servo_kd"]) == (35.0, 1.0)


def test_deploy_check_reports_a_filter_whose_servo_model_is_not_the_policys(imported: str) -> None:
    from sim2real.commands.deploy_check import build_parser, filter_parameters, servo_gains_item

    def item(*flags: str, options: dict | None = None):
        args = build_parser().parse_args(["--robot", "quadruped", "--policy", imported, *flags])
        return servo_gains_item("quadruped", imported, filter_parameters(args, imported), options or {})

    assert item().status == "PASS"  # deploy's own rule: the policy's gains
    tuned_for_ours = item("--set", "safety_filter.servo_kp=35", "--set", "safety_filter.servo_kd=1")
    assert tuned_for_ours.status == "WARN" and "kp 35" in tuned_for_ours.measured  # the kp 20 policy fell under it
    assert item("--set", "safety_filter.servo_kp=10").status == "FAIL"  # the servos' torque would pass its limit
    overridden = item(options={"policy_kp": 35.0})
    assert overridden.status == "WARN" and "policy_kp" in overridden.measured
