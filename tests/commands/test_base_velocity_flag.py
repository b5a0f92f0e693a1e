"""``--base-velocity`` of eval and robustness: a quadruped policy judged on the robot's own
estimate, and the gait it walks; another robot refuses the option in one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sim2real.cli import main

BASELINES = Path(__file__).resolve().parents[2] / "policies" / "baselines"


def test_eval_judges_a_quadruped_on_its_estimate_and_reports_its_gait(capsys: pytest.CaptureFixture[str]) -> None:
    reports = {}
    for source in ("true", "estimated"):
        assert main(["eval", str(BASELINES / "QuadrupedVelocity"), "--episodes", "2", "--n-envs", "2", "--dr", "none",
                     "--base-velocity", source, "--json"]) == 0
        reports[source] = json.loads(capsys.readouterr().out)
    assert reports["estimated"]["task_options"]["base_velocity"] == "estimated"
    for report in reports.values():
        final = report["metrics_final"]
        assert 0.15 < final["walking_trunk_height"] < 0.33 and final["foot_clearance"] > 0.005
        assert 0 < final["cost_of_transport"] < 10 and 0 < final["knee_rms_of_peak"] < 1
    # The same seeds, another observation: the episodes differ.
    assert reports["true"]["mean_return"] != reports["estimated"]["mean_return"]


def test_another_robot_refuses_the_option_in_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["eval", str(BASELINES / "DroneHover"), "--episodes", "1", "--n-envs", "1",
                 "--base-velocity", "estimated"]) == 2
    err = capsys.readouterr().err.strip()
    assert "base_velocity" in err and "unknown option for drone/" in err and len(err.splitlines()) == 1


def test_robustness_points_run_on_the_estimate_when_asked() -> None:
    from sim2real.policies.studies.robustness_runs import evaluate_point_of
    from sim2real.sim.core.errors import ConfigError
    from sim2real.sim.quadruped.randomize import QuadrupedRandomization

    dr = QuadrupedRandomization()  # nominal: the observation is the only difference
    policy = str(BASELINES / "QuadrupedVelocity")
    truth = evaluate_point_of(policy, dr, 1, 1, 5, oracle=False)
    estimated = evaluate_point_of(policy, dr, 1, 1, 5, oracle=False, task_options={"base_velocity": "estimated"})
    assert truth["policy"]["episodes"] == estimated["policy"]["episodes"] == 1
    assert truth["policy"]["metrics_mean"] != estimated["policy"]["metrics_mean"]
    with pytest.raises(ConfigError, match="unknown option for drone/"):
        evaluate_point_of(str(BASELINES / "DroneHover"), dr, 1, 1, 5, oracle=False,
                          task_options={"base_velocity": "estimated"})


def test_sim2sim_runs_the_batched_table_on_the_estimate_under_randomization(capsys: pytest.CaptureFixture[str]) -> None:
    """``--base-velocity estimated --dr ...``: the batched table (before, the estimate ran
    only through the nominal deployment path); the lowstate flags are refused there."""
    policy = str(BASELINES / "QuadrupedVelocity")
    tables = {}
    for source in ("true", "estimated"):
        assert main(["sim2sim", policy, "--episodes", "2", "--seconds", "0.6", "--dr", "train",
                     "--base-velocity", source, "--json"]) == 0
        tables[source] = json.loads(capsys.readouterr().out)
    assert tables["estimated"]["base_velocity"] == "estimated" and tables["estimated"]["dr"] == "train"
    achieved = {source: [row["achieved"] for row in table["rows"]] for source, table in tables.items()}
    assert len(achieved["true"]) == len(achieved["estimated"]) == 8
    assert achieved["true"] != achieved["estimated"]  # the same seeds, another observation
    assert main(["sim2sim", policy, "--dr", "train", "--base-velocity", "estimated", "--state-delay-ms", "5"]) == 2
    assert "without --dr" in capsys.readouterr().err
