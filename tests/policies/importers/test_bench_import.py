"""`sim2real bench import`: an imported policy's inference per step, next to the shipped
quadruped policy's, measured in one run."""

from __future__ import annotations

import json

import pytest

from sim2real.cli import main


def test_bench_import_times_the_stand_in_against_the_shipped_policy(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "import", "--calls", "200", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    a, b = report["imported_ms"], report["shipped_QuadrupedVelocity_ms"]
    assert 0 < a["p50"] <= a["p99"] and 0 < b["p50"] <= b["p99"]
    assert report["ratio_mean"] == pytest.approx(a["mean"] / b["mean"], rel=0.01)
    assert report["meets_target"] == (a["mean"] <= report["target_ms"])
