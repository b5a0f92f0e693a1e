"""`sim2real bench hil`: the summary's steps-to-80 % and SAC/HIL ratio, and a smoke run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sim2real.bench.hil import steps_to, summarise
from sim2real.cli import main


def run(success: list[float]) -> dict[str, list]:
    steps = [500 * (i + 1) for i in range(len(success))]
    return {"env_steps": steps, "eval_success": success, "wall_seconds": [10.0 * s for s in steps],
            "train_success": success, "intervention_rate": [0.5] * len(success)}


def test_summary_steps_to_80_and_ratio() -> None:
    assert steps_to(run([0.1, 0.8, 0.9]), 0.8) == 1000
    assert steps_to(run([0.1, 0.7]), 0.8) is None
    results = {"hil": {"0": run([0.5, 0.9]), "1": run([0.85, 1.0])},
               "sac": {"0": run([0.0, 0.0, 0.0, 0.0]), "1": run([0.0, 0.0, 0.0, 0.9])}}
    summary = summarise(results)
    assert summary["hil"]["steps_to_80"] == [1000, 500]
    # SAC: seed 0 never reached 80 % (counts as its 2000 steps), seed 1 at 2000.
    assert summary["sac_over_hil_steps_to_80"] == pytest.approx(2000 / 750)
    assert summary["sac_over_hil_is_lower_bound"]
    results["hil"]["1"] = run([0.1, 0.2])
    assert "sac_over_hil_steps_to_80" not in summarise(results)  # HIL never got there: no ratio


@pytest.mark.slow
def test_bench_hil_smoke(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    out = tmp_path / "bench"
    assert main(["bench", "hil", "--steps", "40", "--seeds", "1", "--methods", "sac,hil", "--demos", "1",
                 "--eval-every", "20", "--eval-episodes", "1", "--out", str(out), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)["summary"]
    assert set(summary) >= {"sac", "hil"} and (out / "curves.png").exists()
    # More seeds later: the second call adds to the first call's results.
    assert main(["bench", "hil", "--steps", "40", "--seeds", "1", "--first-seed", "1", "--methods", "sac",
                 "--eval-every", "20", "--eval-episodes", "1", "--out", str(out), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)["summary"]
    assert summary["sac"]["seeds"] == 2 and summary["hil"]["seeds"] == 1


def test_bench_hil_refuses_to_mix_budgets(tmp_path: Path) -> None:
    (tmp_path / "results.json").write_text(json.dumps({"args": {"steps": "6000"}, "runs": {"sac": {"0": run([0.0])}}}))
    with pytest.raises(SystemExit, match="6000 steps"):
        main(["bench", "hil", "--steps", "40", "--seeds", "1", "--out", str(tmp_path)])


def test_from_results_merges_separately_measured_seeds(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    for seed, success in (("0", [0.5, 0.9]), ("1", [0.85, 1.0])):
        (tmp_path / seed).mkdir()
        (tmp_path / seed / "results.json").write_text(json.dumps({"runs": {"hil": {seed: run(success)}}}))
    out = tmp_path / "all"
    assert main(["bench", "hil", "--from-results", "--include", str(tmp_path / "0"), "--include",
                 str(tmp_path / "1"), "--out", str(out), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)["summary"]
    assert summary["hil"]["seeds"] == 2 and summary["hil"]["steps_to_80"] == [1000, 500]
    assert (out / "curves.png").exists()
    with pytest.raises(SystemExit, match="more than one"):
        main(["bench", "hil", "--from-results", "--include", str(tmp_path / "0"), "--include", str(tmp_path / "0"),
              "--out", str(out)])
    (tmp_path / "2").mkdir()
    (tmp_path / "2" / "results.json").write_text(json.dumps({"runs": {"hil": {"2": run([0.1, 0.2, 0.3])}}}))
    with pytest.raises(SystemExit, match="one budget"):
        main(["bench", "hil", "--from-results", "--include", str(tmp_path / "0"), "--include", str(tmp_path / "2"),
              "--out", str(out)])


@pytest.mark.slow  # ~11 s; the robustness and eval --workers tests show Ray = in-process in the default suite
def test_bench_hil_on_ray_matches_in_process(ray_local, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """--ray: the same runs (all but their wall-clock), results.json written as they arrive."""
    argv = ["bench", "hil", "--steps", "40", "--seeds", "1", "--methods", "sac,hil", "--demos", "1",
            "--eval-every", "20", "--eval-episodes", "1", "--json"]
    for name, extra in (("here", []), ("ray", ["--ray"])):
        assert main([*argv, "--out", str(tmp_path / name), *extra]) == 0
    capsys.readouterr()
    here, ray = (json.loads((tmp_path / name / "results.json").read_text())["runs"] for name in ("here", "ray"))
    clock = ("wall_seconds", "total_seconds")
    assert list(ray) == list(here) == ["sac", "hil"]
    for method, runs in here.items():
        assert {k: v for k, v in runs["0"].items() if k not in clock} == \
            {k: v for k, v in ray[method]["0"].items() if k not in clock}
