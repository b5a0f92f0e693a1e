"""Real sweeps on a local Ray instance (the session's ``ray_local``, 2 CPUs): a 4-trial
ASHA sweep of tiny ArmReach PPO runs leaves a complete run folder per trial and the
results table, plot and best config; a trial whose Ray worker is killed with SIGKILL
is retried and resumes its run folder's last checkpoint."""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from pathlib import Path

import psutil
import pytest
import yaml

from sim2real.cli import main
from sim2real.policies.common import checkpoint
from sim2real.policies.common.rundir import RunDir
from sim2real.policies.config_loading import resolve_config
from sim2real.policies.sweep.trainable import read_attempts

TINY_REACH = {
    "n_envs": 4, "ppo.n_steps": 128, "ppo.batch_size": 256, "ppo.n_epochs": 1, "net.pi": [32, 32],
    "net.vf": [32, 32], "eval.episodes": 2, "eval.n_envs": 2, "checkpoint.every_steps": 1024,
}


def write_sweep(tmp_path: Path, total: int, eval_every: int, **extra) -> Path:
    data = {
        "task": "ArmReach",
        "set": {**TINY_REACH, "total_steps": total, "eval.every_steps": eval_every},
        "space": {"ppo.learning_rate": {"loguniform": [1e-4, 1e-3]}, "ppo.ent_coef": {"choice": [0.0, 0.01]}},
        "metric": "mean_return",
        **extra,
    }
    path = tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def run_sweep(args: list[str], capsys: pytest.CaptureFixture[str]) -> dict:
    rc = main(["sweep", *args, "--json"])
    captured = capsys.readouterr()
    assert rc == 0, captured.err[-3000:]
    return json.loads(captured.out)


@pytest.mark.heavy
def test_four_trial_asha_sweep(ray_local, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    sweep = write_sweep(tmp_path, total=2048, eval_every=1024, samples=4,
                        scheduler={"asha": {"grace_steps": 1024, "reduction_factor": 2}}, max_failures=1)
    out = tmp_path / "out"
    summary = run_sweep([str(sweep), "--out", str(out)], capsys)
    trials = summary["trials"]
    assert len(trials) == 4 and len({t["trial"] for t in trials}) == 4
    for t in trials:
        run = RunDir(t["run_dir"])
        assert run.path.parent == out.resolve() / "trials"
        cfg = run.read_config()
        assert (cfg.ppo.learning_rate, cfg.ppo.ent_coef) == (t["ppo.learning_rate"], t["ppo.ent_coef"])
        assert cfg.torch_threads == 1 and cfg.nthread == 1  # one core per trial
        steps = [r["step"] for r in run.read_eval_log()]
        assert steps[0] == 0 and steps[-1] == t["steps"]
        assert checkpoint.locate(run.checkpoints, "last").is_dir()
        assert t["status"] in ("complete", "stopped") and t["attempts"] == 1
        assert (t["status"] == "complete") == (t["steps"] == 2048)
    for name in ("results.csv", "results.md", "best_trials.png", "best_config.yaml"):
        assert (out / name).stat().st_size > 0
    assert len((out / "results.csv").read_text().splitlines()) == 1 + 4
    assert all(t["trial"] in (out / "results.md").read_text() for t in trials)
    best = summary["best"]
    assert best == trials[0] and best["status"] == "complete"
    # best_config.yaml is a training config that repeats the best trial.
    again = resolve_config(None, out / "best_config.yaml")
    assert again.to_dict() == RunDir(best["run_dir"]).read_config().to_dict()


def _kill_first_checkpointed_trial(trials: Path, killed: dict, stop: threading.Event) -> None:
    """SIGKILL the Ray worker (``ray::ImplicitFunc``) of the first trial with a checkpoint."""
    while not stop.is_set():
        for run in sorted(trials.glob("*")):
            try:
                step = json.loads((run / "checkpoints" / "last.json").read_text())["step"]
                pid = read_attempts(run)[0]["pid"]
            except (FileNotFoundError, json.JSONDecodeError, IndexError):
                continue
            proc = psutil.Process(pid)
            assert proc.name().startswith("ray::ImplicitFunc"), proc.name()  # a trial worker, nothing else
            killed.update(trial=run.name, step=step, pid=pid, name=proc.name(), time=time.time())
            os.kill(pid, signal.SIGKILL)
            return
        time.sleep(0.05)


@pytest.mark.heavy
def test_killed_worker_is_retried_from_its_checkpoint(ray_local, tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    total = 8192
    sweep = write_sweep(tmp_path, total=total, eval_every=2048, samples=2, scheduler="none", max_failures=2)
    out = tmp_path / "out"
    killed: dict = {}
    stop = threading.Event()
    killer = threading.Thread(target=_kill_first_checkpointed_trial, args=(out / "trials", killed, stop), daemon=True)
    killer.start()
    try:
        summary = run_sweep([str(sweep), "--out", str(out)], capsys)
    finally:
        stop.set()
        killer.join(5)
    assert killed, "no trial reached a checkpoint"
    trials = {t["trial"]: t for t in summary["trials"]}
    assert len(trials) == 2 and all(t["status"] == "complete" and t["steps"] == total for t in trials.values())
    victim = trials[killed["trial"]]
    assert victim["attempts"] == 2
    first, retry = read_attempts(Path(victim["run_dir"]))
    assert first["pid"] == killed["pid"] != retry["pid"]
    # The retry resumed the run folder's last checkpoint (not step 0), which was at or after
    # the one seen before the kill.
    assert first["resumed_from"] is None and killed["step"] <= retry["resumed_from"] < total
    rows = RunDir(victim["run_dir"]).read_eval_log()
    steps = [r["step"] for r in rows]
    assert steps == sorted(set(steps)) and steps[0] == 0 and steps[-1] == total
    # Evaluations up to the resumed step are the first attempt's (kept), later ones the retry's.
    assert all((r["time"] < killed["time"]) == (r["step"] <= retry["resumed_from"]) for r in rows)
