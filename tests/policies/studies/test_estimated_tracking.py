"""`sim2real sim2sim POLICY --base-velocity estimated`: the shipped velocity policy on the
robot's own base-velocity estimate (leg odometry on a simulated lowstate), in our model and
a foreign-style one, each row with the estimate's error against the truth."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import pytest

from sim2real.cli import main
from sim2real.policies import BASELINES_DIR
from sim2real.policies.studies.tracking import GRID

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "sim" / "quadruped"))
from foreign_models import prefix_map, write_foreign  # pyright: ignore[reportMissingImports]  (tests/sim/quadruped)

POLICY = BASELINES_DIR / "QuadrupedVelocity"


def test_sim2sim_estimated_reports_the_estimate_error_per_row_in_both_models(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    model = write_foreign(tmp_path)
    joint_map = ",".join(f"{k}={v}" for k, v in prefix_map().items())
    assert main(["sim2sim", str(POLICY), "--model", str(model), "--joint-map", joint_map, "--base-velocity",
                 "estimated", "--state-delay-ms", "4", "--episodes", "1", "--seconds", "1", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["base_velocity"]["estimated"]["delay_ms"] == 4.0
    assert report["base_velocity"]["estimated"]["contact_threshold"] == 20.0
    rows = report["rows"]
    assert [(r["command"], r["model"]) for r in rows] == [(n, m) for n, _ in GRID for m in ("ours", "go2.xml")]
    for r in rows:
        error = r["estimate_error_m_s"]
        assert r["falls"] == 0 and error is not None and math.isfinite(error) and 0.0 < error < 0.3, r


def test_sim2sim_estimated_without_a_model_runs_ours_alone(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sim2sim", str(POLICY), "--base-velocity", "estimated", "--episodes", "1", "--seconds", "0.5",
                 "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["model"] is None and list(report["models"]) == ["ours"]
    assert all(r["model"] == "ours" and r["estimate_error_m_s"] is not None for r in report["rows"])


@pytest.mark.parametrize(("args", "error"), [
    (["--state-delay-ms", "5"], "only with --base-velocity estimated"),
    (["--base-velocity", "estimated", "--video", "out.mp4"],
     "not with --model, --latency-steps, or --base-velocity estimated without"),
    (["--base-velocity", "estimated", "--dr", "train", "--state-delay-ms", "5"],
     "the deployment path's (without --dr)"),
    (["--base-velocity", "estimated", "--gyro-noise", "-1"], "gyro_noise"),
])
def test_sim2sim_estimated_fails_closed_with_one_line(capsys: pytest.CaptureFixture[str], args: list[str],
                                                      error: str) -> None:
    assert main(["sim2sim", str(POLICY), *args, "--episodes", "1", "--seconds", "1"]) == 2
    err = capsys.readouterr().err.strip()
    assert error in err and len(err.splitlines()) == 1
