"""`sim2real demo`: the ROS 2 deployment demo writes its report, bag, plot and
replayed video; the classical demo runs its cases."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest


def run_demo(*args: str) -> dict:
    env = {**os.environ, "ROS_AUTOMATIC_DISCOVERY_RANGE": "LOCALHOST"}
    out = subprocess.run(
        [sys.executable, "-m", "sim2real", "demo", *args, "--json"],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout)


def test_ros_demo_deploys_through_the_graph_and_writes_the_report(tmp_path: Path) -> None:
    summary = run_demo("--robot", "drone", "--seconds", "6", "--out", str(tmp_path))
    drone = summary["robots"]["drone"]
    assert drone["interventions"]["filter_steps"] > 100  # commands flowed through the safety filter
    assert drone["interventions"]["rejected_commands"] == 0
    assert 0 < drone["latency_ms"]["state_to_command"]["p50_ms"] < 50
    report = (tmp_path / "report.md").read_text()
    assert "| drone | sim |" in report and "drone_commands.png" in report
    # The same graph with backend: real against the Crazyflie's protocol emulator.
    real = summary["emulated"]["drone"]["hardware"]
    assert real["preflight"] == "PASS" and real["commands_sent"] > 50 and real["commands_rejected"] == 0, real
    assert "| drone | real: crazyflie emulator |" in report
    assert list((tmp_path / "bags" / "drone").glob("*.mcap"))
    import imageio.v3 as iio

    frames = iio.imread(tmp_path / "drone.mp4")
    assert frames.shape[0] >= 30 and frames.std() > 1  # ~10 frames/s of replayed, non-blank video
    # Running the demo again into the same folder replaces its recording (rosbag2 refuses
    # an existing output folder, which once made a second `make demo` fail).
    again = run_demo("--robot", "drone", "--seconds", "3", "--no-emulators", "--out", str(tmp_path))
    assert again["robots"]["drone"]["interventions"]["filter_steps"] > 50


def test_classical_demo_runs_every_case(tmp_path: Path) -> None:
    summary = run_demo("--classical", "--episodes", "1", "--no-video", "--out", str(tmp_path))
    robots = {c["robot"] for c in summary["cases"]}
    assert robots == {"arm", "quadruped", "drone"}
    reach = next(c for c in summary["cases"] if c["task"] == "ArmReach")
    assert reach["successes"] == 1  # the operational-space controller reaches its target
    assert (tmp_path / "report.md").is_file()


@pytest.mark.slow
def test_the_quadruped_also_crosses_a_confined_course_through_the_graph(tmp_path: Path) -> None:
    """The hierarchy's run of `make demo`: the planner's path followed by the shipped
    follower, through the safety filter; its video replays the recorded course too."""
    summary = run_demo("--robot", "quadruped", "--seconds", "15", "--no-emulators", "--out", str(tmp_path))
    confined = summary["robots"]["quadruped_confined"]
    assert confined["task"] == "QuadrupedWaypoints" and confined["task_success"]["successes"] >= 1, confined
    assert confined["interventions"]["rejected_commands"] == 0
    assert "## quadruped_confined (sim)" in (tmp_path / "report.md").read_text()
    assert (tmp_path / "quadruped_confined.mp4").stat().st_size > 10_000
