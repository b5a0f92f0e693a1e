"""`sim2real sim2sim`: the tracking table of a quadruped velocity policy over the command
grid, and its video (one episode per command, in the table's order)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sim2real.cli import main
from sim2real.policies import BASELINES_DIR
from sim2real.policies.studies.tracking import GRID


@pytest.mark.heavy
def test_the_table_covers_the_grid_and_the_video_every_command(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    video = tmp_path / "sim2sim.mp4"
    assert main(["sim2sim", str(BASELINES_DIR / "QuadrupedVelocity"), "--episodes", "2", "--seconds", "1",
                 "--dr", "none", "--video", str(video), "--video-seconds", "0.2", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert [r["command"] for r in report["rows"]] == [name for name, _ in GRID]
    assert all(r["falls"] == 0 and r["episodes"] == 2 for r in report["rows"])  # the shipped policy, nominal robot
    import imageio.v3 as iio

    frames = iio.imread(video)
    assert frames.shape[0] == len(GRID) * 11 and frames.std() > 1  # 10 steps + the first frame, per command


def test_a_policy_of_another_task_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sim2sim", str(BASELINES_DIR / "ArmReach")]) == 2
    assert "the table is for QuadrupedVelocity" in capsys.readouterr().err
