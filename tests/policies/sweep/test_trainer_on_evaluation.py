"""The Trainer's evaluation hook (what a sweep trial reports to Tune): called once per
evaluation row, after the row is in eval.jsonl, with exactly that row."""

from __future__ import annotations

from pathlib import Path

from policy_helpers import tiny_config

from sim2real.policies.common.rundir import RunDir
from sim2real.policies.trainer import train


def test_on_evaluation_sees_every_logged_row(puck, tmp_path: Path) -> None:
    seen: list[dict] = []
    logged_when_called: list[int] = []

    def hook(row: dict) -> None:
        seen.append(row)
        logged_when_called.append(len(RunDir(tmp_path / "run").read_eval_log()))

    train(tiny_config("ppo"), tmp_path / "run", progress=False, on_evaluation=hook)
    rows = RunDir(tmp_path / "run").read_eval_log()
    assert seen == rows and rows[0]["step"] == 0 and len(rows) >= 3
    assert logged_when_called == list(range(1, len(rows) + 1))  # the row is on disk before the hook runs
