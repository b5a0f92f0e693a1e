"""The imported policy's check in our simulator: a policy that falls or does not track
(here an untrained network, as a config with legs in the wrong order makes of a good
one) is written but the import exits non-zero, and the pre-flight check and a real
robot's deployment refuse it; an imported policy without the check is refused too."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from foreign_policy import small_network
from test_rl_sar_import import write_folder

from sim2real.cli import main
from sim2real.policies.importers.sim_check import CHECKS, EPISODES, failure
from sim2real.sim.core.errors import ConfigError


@pytest.fixture(scope="module")
def failed_import(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int]:
    root = tmp_path_factory.mktemp("sim_check")
    folder = write_folder(root, small_network(45, seed=3))
    out = root / "out"
    code = main(["import", "rl_sar", str(folder), "--out", str(out)])
    return out, code


def test_an_import_that_falls_exits_non_zero_and_records_why(failed_import: tuple[Path, int]) -> None:
    out, code = failed_import
    assert code != 0
    meta = json.loads((out / "policy.onnx.json").read_text())
    check = meta["verification"]["sim_check"]
    assert not check["passed"] and [r["command"] for r in check["rows"]] == [name for name, _ in CHECKS]
    assert any(r["falls"] > 0 for r in check["rows"]) or any(
        max(r["relative_error"], default=0) > check["max_relative_error"] for r in check["rows"])
    assert all(r["episodes"] == EPISODES for r in check["rows"])
    assert "failed its check in our simulator" in failure(meta)


def test_the_pre_flight_check_fails_it(failed_import: tuple[Path, int]) -> None:
    from sim2real.commands.deploy_check import observation_item

    item = observation_item("quadruped", str(failed_import[0]), [])
    assert item.status == "FAIL" and "failed its check in our simulator" in item.measured


def test_deploy_on_a_real_robot_refuses_it_and_the_emulator_runs_it(failed_import: tuple[Path, int]) -> None:
    from sim2real.ros_nodes.deployment import DeployOptions, graph_parameters

    policy = str(failed_import[0])
    with pytest.raises(ConfigError, match="failed its check in our simulator"):
        graph_parameters(DeployOptions(robot="quadruped", backend="real", policy=policy))
    _, nodes = graph_parameters(DeployOptions(robot="quadruped", backend="real", policy=policy, emulated=True))
    assert "hardware_bridge" in nodes
    _, nodes = graph_parameters(DeployOptions(robot="quadruped", backend="sim", policy=policy))
    assert "sim_bridge" in nodes


def test_an_import_without_the_check_is_refused_on_a_real_robot(failed_import: tuple[Path, int]) -> None:
    meta = json.loads((failed_import[0] / "policy.onnx.json").read_text())
    del meta["verification"]["sim_check"]
    assert "no sim check on record" in failure(meta)
    del meta["adapter"]  # not imported: our own policies have passed their evaluations instead
    assert failure(meta) == ""
