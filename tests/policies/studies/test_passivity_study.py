"""The passivity study: its statistics and report, and (slow) a tiny end-to-end study
that trains, evaluates and writes every output."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from sim2real.policies.studies.passivity import EPISODE_FIGURES, PassivityStudyConfig, mean_ci, run_study
from sim2real.policies.studies.passivity_report import LABELS, write_plots, write_table


def test_mean_ci_is_the_student_t_interval() -> None:
    mean, half = mean_ci([1.0, 2.0, 3.0, 4.0, 5.0])
    assert mean == 3.0
    assert half == pytest.approx(2.776 * np.std([1, 2, 3, 4, 5], ddof=1) / math.sqrt(5), rel=1e-3)
    assert mean_ci([2.0])[0] == 2.0 and math.isnan(mean_ci([2.0])[1])
    assert mean_ci([float("nan"), 1.0, 3.0])[0] == 2.0  # undefined figures (no success) are skipped


def _results() -> dict:
    rng = np.random.default_rng(0)
    summary = {k: {f: {"mean": float(rng.uniform(0, 1)), "ci95": 0.1} for f in EPISODE_FIGURES} for k in LABELS}
    sens = {lim: {"filter_off": {"success": 0.5, "energy_violation_total": 1.0, "filter_steps": 0.0},
                  "filter_on": {"success": 0.4, "energy_violation_total": 0.0, "filter_steps": 12.0}, "seeds": 1}
            for lim in ("0", "0.5", "2")}
    cfg = PassivityStudyConfig(seeds=3)
    return {"config": cfg.__dict__, "summary": summary, "sensitivity": sens}


def test_report_has_every_combination_and_plot(tmp_path: Path) -> None:
    results = _results()
    write_table(results, tmp_path / "study.md")
    text = (tmp_path / "study.md").read_text()
    for label in LABELS.values():
        assert label in text
    assert "| 2 | 1 | 50% |" in text
    traces = {k: list(np.linspace(1.0, 0.05, 40)) for k in LABELS}
    write_plots(results, traces, tmp_path)
    for name in ("tank_energy.png", "comparison.png", "sensitivity.png"):
        assert (tmp_path / name).stat().st_size > 10_000


@pytest.mark.slow
def test_tiny_study_end_to_end(tmp_path: Path) -> None:
    cfg = PassivityStudyConfig(seeds=2, steps=4096, n_envs=8, sensitivity_limits=[2.0], episodes=4)
    results = run_study(cfg, tmp_path, log=lambda _: None)
    assert set(results["summary"]) == set(LABELS)
    for key in ("aware/filter_on", "agnostic/filter_on"):  # the filter never lets the tank be overdrawn
        assert results["summary"][key]["energy_violation_total"]["mean"] == 0.0
    assert json.loads((tmp_path / "results.json").read_text())["config"]["seeds"] == 2
    # Loading instead of retraining: a second run finds every policy trained.
    logs: list[str] = []
    run_study(cfg, tmp_path, log=logs.append)
    assert not any(line.startswith("training") for line in logs)


@pytest.mark.slow
def test_study_on_ray_matches_in_process(ray_local, tmp_path: Path) -> None:
    """--ray: the training runs and evaluations as Ray tasks give the same results (~2 min)."""
    from sim2real.policies.common import cluster

    cfg = PassivityStudyConfig(seeds=1, steps=1024, n_envs=8, sensitivity_limits=[2.0], episodes=2)
    here = run_study(cfg, tmp_path / "here", log=lambda _: None)
    ray = run_study(cfg, tmp_path / "ray", log=lambda _: None, ray_address=cluster.LOCAL)
    for key in ("per_seed", "summary", "sensitivity"):
        assert json.dumps(ray[key]) == json.dumps(here[key])
    assert (tmp_path / "ray" / "study.md").read_text() == (tmp_path / "here" / "study.md").read_text()


def test_study_with_an_unreachable_ray_address_is_a_one_line_error(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture) -> None:
    from sim2real.cli import main

    assert main(["study", "passivity", "--seeds", "1", "--out", str(tmp_path), "--ray", "nohost"]) == 2
    assert capsys.readouterr().err.strip().count("\n") == 0
    assert not (tmp_path / "runs").exists()  # nothing trained
