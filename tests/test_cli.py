"""The command line: --help everywhere, --json prints one JSON object, list,
render and a short sim benchmark work end to end."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from sim2real.cli import COMMANDS, build_parser, main


def run_cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "sim2real", *args], capture_output=True, text=True, cwd=cwd, timeout=300
    )


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_command_has_help(command: str, capsys: pytest.CaptureFixture) -> None:
    with pytest.raises(SystemExit) as exit_:
        main([command, "--help"])
    assert exit_.value.code == 0
    assert "usage: sim2real " + command in capsys.readouterr().out


def test_every_bench_has_help(capsys: pytest.CaptureFixture) -> None:
    from sim2real.commands.bench import BENCHES

    for name in BENCHES:
        with pytest.raises(SystemExit):
            main(["bench", name, "--help"])
        assert "--json" in capsys.readouterr().out


def test_list_json_names_every_robot_with_sizes() -> None:
    out = run_cli("list", "--json")
    assert out.returncode == 0, out.stderr
    tasks = json.loads(out.stdout)["tasks"]
    assert {t["robot"] for t in tasks} == {"arm", "ur5e", "quadruped", "drone", "x500"}
    velocity = next(t for t in tasks if t["id"] == "sim2real/QuadrupedVelocity-v0")
    assert velocity["obs_size"] == 48 and velocity["control_hz"] == 50


def test_unknown_task_is_a_clear_error_not_a_traceback(tmp_path: Path) -> None:
    out = run_cli("render", "ArmReech", "--out", str(tmp_path / "x.png"))
    assert out.returncode == 2
    assert "unknown task 'ArmReech'" in out.stderr and "Traceback" not in out.stderr


def test_render_writes_a_png(tmp_path: Path) -> None:
    out = run_cli("render", "DroneHover", "--out", str(tmp_path / "hover.png"), "--width", "160", "--height", "120")
    assert out.returncode == 0, out.stderr
    import imageio.v3 as iio

    assert iio.imread(tmp_path / "hover.png").shape[:2] == (120, 160)


def test_bench_sim_json_reports_ratios_against_references() -> None:
    out = run_cli("bench", "sim", "--seconds", "0.3", "--num-envs", "4", "--robot", "drone", "--json")
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)  # exactly one JSON object
    drone = report["robots"]["drone"]
    assert drone["raw_limit_env_steps_per_s"] > 0 and drone["batched_env_steps_per_s"] > 0
    assert drone["batched_vs_raw"] == pytest.approx(
        drone["batched_env_steps_per_s"] / drone["raw_limit_env_steps_per_s"], rel=0.01
    )
    assert report["peer"]["env"] == "Ant-v5" and report["peer"]["physics_steps_per_s"] > 0


def test_parser_builds_without_side_effects() -> None:
    assert set(build_parser()._subparsers._group_actions[0].choices) == set(COMMANDS)


def test_list_piped_prints_full_task_ids() -> None:
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-m", "sim2real.cli", "list"], capture_output=True, text=True,
                         timeout=120, check=True).stdout.splitlines()
    assert out[0].split("\t")[0] == "id"
    assert "sim2real/QuadrupedVelocityRough-v0" in [line.split("\t")[0] for line in out[1:]]


def test_sigusr1_prints_every_threads_stack_and_the_command_goes_on() -> None:
    """A command that seems stuck says where (the liveness tests read it when a deploy
    never starts its nodes); SIGUSR1's default would have killed it."""
    code = ("import os, signal, sys, threading, time\n"
            "from sim2real.cli import main\n"
            "sys.argv = ['sim2real', 'list']\n"
            "main()\n"  # the process's own command registers it
            "threading.Thread(target=time.sleep, args=(5,), name='sleeper', daemon=True).start()\n"
            "os.kill(os.getpid(), signal.SIGUSR1)\n"
            "time.sleep(0.2)\n"
            "print('went on')\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout.strip().endswith("went on"), done.stderr
    assert done.stderr.startswith("Thread 0x") and "Current thread 0x" in done.stderr, done.stderr
