"""``sim2real sweep`` through the CLI: mistakes are one line on stderr and exit 2
before Ray starts or the sweep folder exists; a sweep interrupted with Ctrl-C resumes
from Tune's experiment state (slow: a second Ray instance in a subprocess)."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from sim2real.cli import main
from sim2real.policies.sweep.trainable import read_attempts

SWEEP = {
    "task": "ArmReach",
    "set": {"total_steps": 4096, "n_envs": 4, "ppo.n_steps": 128, "ppo.batch_size": 256, "ppo.n_epochs": 1,
            "net.pi": [32, 32], "net.vf": [32, 32], "eval.episodes": 2, "eval.n_envs": 2,
            "eval.every_steps": 1024, "checkpoint.every_steps": 1024},
    "space": {"ppo.ent_coef": {"choice": [0.0, 0.01]}},
    "samples": 2,
    "scheduler": "none",
}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize(("change", "message"), [
    ({"space": {"ppo.learnig_rate": {"choice": [1e-4]}}}, "space.ppo.learnig_rate: unknown config key"),
    ({"space": {"ppo.learning_rate": {"loguniform": [-1.0, 1e-3]}}}, "loguniform needs low > 0"),
    ({"space": {"ppo.learning_rate": {"loguniform": [1e-3, 1e-4]}}}, "loguniform needs low < high"),
    ({"schedular": "asha"}, "schedular: unknown sweep key"),
])
def test_bad_sweep_file_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str], change: dict,
                                    message: str) -> None:
    path = tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump({**SWEEP, **change}))
    assert main(["sweep", str(path), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("sim2real sweep: error:") and message in err and "\n" not in err
    assert not (tmp_path / "out").exists()


def test_unreachable_cluster_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump(SWEEP))
    port = _free_port()
    assert main(["sweep", str(path), "--out", str(tmp_path / "out"), "--address", f"127.0.0.1:{port}"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"sim2real sweep: error: ray address: cannot reach the Ray cluster at 127.0.0.1:{port}: " \
                  "Connection refused"
    assert not (tmp_path / "out").exists()


def test_resume_needs_a_sweep_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump(SWEEP))
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "x").write_text("")
    assert main(["sweep", str(path), "--out", str(tmp_path / "out")]) == 2
    assert "is not empty; pass --resume" in capsys.readouterr().err


@pytest.mark.slow
def test_interrupted_sweep_resumes(ray_local, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump({**SWEEP, "set": {**SWEEP["set"], "total_steps": 16384}}))
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "sim2real", "sweep", str(path), "--out", str(out), "--num-cpus", "2"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline and proc.poll() is None and not list(out.glob("trials/*/checkpoints/last.json")):
        time.sleep(0.2)
    assert proc.poll() is None, proc.stderr.read().decode()[-3000:] if proc.stderr else ""
    proc.send_signal(signal.SIGINT)  # Ctrl-C: Tune saves its experiment state and stops
    proc.communicate(timeout=120)
    rc = main(["sweep", str(path), "--out", str(out), "--resume", "--json"])
    captured = capsys.readouterr()
    assert rc == 0, captured.err[-3000:]
    summary = json.loads(captured.out)
    assert len(summary["trials"]) == 2
    assert all(t["status"] == "complete" and t["steps"] == 16384 for t in summary["trials"])
    resumed = [read_attempts(Path(t["run_dir"]))[-1]["resumed_from"] for t in summary["trials"]]
    assert any(r for r in resumed)  # a trial continued its checkpoint instead of starting over
