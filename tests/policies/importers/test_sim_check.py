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


def test_an_import_that_falls_exits_1_and_records_why(failed_import: tuple[Path, int]) -> None:
    out, code = failed_import
    assert code == 1  # a failed check, as `deploy check`'s; 2 is a usage or input error (docs/import.md)
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


MISTAKES = {  # config.yaml changes a user could make, against the walking policy's true conventions
    "legs swapped": lambda cfg: cfg.update(joint_mapping=[*cfg["joint_mapping"][3:6], *cfg["joint_mapping"][0:3],
                                                          *cfg["joint_mapping"][6:]]),
    "dof_vel_scale x20": lambda cfg: cfg.update(dof_vel_scale=20 * cfg["dof_vel_scale"]),
    "action sign": lambda cfg: cfg.update(action_scale=[-a for a in cfg["action_scale"]]),
    "kp / 4": lambda cfg: cfg.update(rl_kp=[k / 4 for k in cfg["rl_kp"]]),
    "kp and kd x10": lambda cfg: cfg.update(rl_kp=[10 * k for k in cfg["rl_kp"]], rl_kd=[10 * k for k in cfg["rl_kd"]]),
    "commands_scale halved": lambda cfg: cfg.update(commands_scale=[v / 2 for v in cfg["commands_scale"]]),
}


def _walking_rl_sar(tmp_path: Path, mistake: str | None) -> Path:
    import yaml
    from round_trip import ISAAC_LAB
    from test_round_trips import WALKING, write_rl_sar

    folder = write_rl_sar(tmp_path, WALKING, ISAAC_LAB)
    if mistake:
        doc = yaml.safe_load((folder / "config.yaml").read_text())
        MISTAKES[mistake](doc["go2/ours"])
        (folder / "config.yaml").write_text(yaml.safe_dump(doc))
    return folder


@pytest.mark.parametrize("mistake", [None, "legs swapped", pytest.param("dof_vel_scale x20", marks=pytest.mark.slow),
                                     pytest.param("action sign", marks=pytest.mark.slow),
                                     pytest.param("kp / 4", marks=pytest.mark.slow),
                                     pytest.param("kp and kd x10", marks=pytest.mark.slow),
                                     pytest.param("commands_scale halved", marks=pytest.mark.slow)])
def test_a_walking_policy_passes_and_each_config_mistake_is_caught(tmp_path: Path, mistake: str | None) -> None:
    """Our walking clock-free policy written as an rl_sar folder, imported with its true
    conventions (it passes) or with one mistake in them (the importer or the check refuses)."""
    from sim2real.policies.importers import READERS
    from sim2real.policies.importers.writer import import_policy

    try:
        meta = import_policy(READERS["rl_sar"].read(_walking_rl_sar(tmp_path, mistake)), tmp_path / "out")
    except ConfigError:  # the importer itself saw it (a default angle outside its range)
        assert mistake is not None
        return
    check = meta["verification"]["sim_check"]
    assert check["passed"] == (mistake is None), check["problems"] or check["rows"]
