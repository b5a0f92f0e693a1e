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


# Slow-marked while flaky: on a shared 2-core host the emulated Crazyflie hover aborts
# (its safe descent after stale commands) in about one run in three; the stall behind it
# is not found yet (the 2026-11-26 stop note). `make test-slow` still runs it.
@pytest.mark.slow
def test_ros_demo_deploys_through_the_graph_and_writes_the_report(tmp_path: Path) -> None:
    summary = run_demo("--robot", "drone", "--seconds", "6", "--transfer-episodes", "0", "--out", str(tmp_path))
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
    again = run_demo("--robot", "drone", "--seconds", "3", "--no-emulators", "--transfer-episodes", "0",
                     "--out", str(tmp_path))
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
    summary = run_demo("--robot", "quadruped", "--seconds", "15", "--no-emulators", "--transfer-episodes", "0",
                       "--out", str(tmp_path))
    confined = summary["robots"]["quadruped_confined"]
    assert confined["task"] == "QuadrupedWaypoints" and confined["task_success"]["successes"] >= 1, confined
    assert confined["interventions"]["rejected_commands"] == 0
    assert "## quadruped_confined (sim)" in (tmp_path / "report.md").read_text()
    assert (tmp_path / "quadruped_confined.mp4").stat().st_size > 10_000


def test_the_report_shows_each_policys_transfer_ratio_and_curves(tmp_path: Path) -> None:
    """The demo's transfer section on the arm's shipped policy (one axis, one episode per
    point here; `make demo` runs every axis at 8)."""
    from sim2real.demo.transfer import report_lines, run_transfer

    runs = run_transfer(tmp_path, ["arm"], 1, axes=["latency"])
    assert [r.policy for r in runs] == ["ArmReach"]
    assert (tmp_path / "transfer_ArmReach.png").read_bytes()[:4] == b"\x89PNG"
    study = json.loads((tmp_path / "transfer_ArmReach.json").read_text())
    assert study["transfer_ratio"] == runs[0].study["transfer_ratio"] and "oracle" in study["controllers"]
    lines = "\n".join(report_lines(runs, 1))
    assert "## Transfer evidence" in lines and "![ArmReach robustness](transfer_ArmReach.png)" in lines
    assert f"| ArmReach | {study['transfer_ratio']:.2f} |" in lines


@pytest.mark.slow
def test_make_demos_transfer_section_runs_every_axis(tmp_path: Path) -> None:
    summary = run_demo("--robot", "drone", "--seconds", "3", "--no-emulators", "--no-video",
                       "--transfer-episodes", "1", "--out", str(tmp_path))
    assert "DroneHover" in summary["transfer_ratio"]
    assert "![DroneHover robustness](transfer_DroneHover.png)" in (tmp_path / "report.md").read_text()
