"""Crash safety: a training process killed with SIGKILL after its first
checkpoints resumes from the last one with the same step counter,
normalization statistics, optimizer state and replay buffer."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from policy_helpers import PUCK_CLI, TINY

from sim2real.policies.common import checkpoint, session
from sim2real.policies.common.rundir import RunDir
from sim2real.policies.config_loading import merge


def start_and_kill(tmp_path: Path, algo: str, checkpoint_every: int, min_step: int) -> tuple[Path, dict]:
    """Train in a subprocess until a checkpoint at >= ``min_step`` exists, then kill -9 it."""
    cfg = merge(TINY, {"algo": algo, "total_steps": 10**7, "checkpoint": {"every_steps": checkpoint_every}})
    cfg["eval"]["every_steps"] = 2 * checkpoint_every
    (tmp_path / "cfg.yaml").write_text(yaml.safe_dump(cfg))
    run = tmp_path / "run"
    cmd = [sys.executable, str(PUCK_CLI), "train", "--config", str(tmp_path / "cfg.yaml"), "--out", str(run)]
    proc = subprocess.Popen([*cmd, "--no-progress"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    pointer = run / "checkpoints" / "last.json"
    deadline = time.monotonic() + 90
    try:
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                if json.loads(pointer.read_text())["step"] >= min_step:
                    break
            except (FileNotFoundError, json.JSONDecodeError):
                pass
            time.sleep(0.05)
        assert proc.poll() is None, f"training exited early: {proc.stderr.read().decode()[-2000:]}"
        assert time.monotonic() < deadline, "no checkpoint within 90 s"
        time.sleep(0.3)  # let it get into the next interval (or the middle of a save)
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    assert proc.returncode == -signal.SIGKILL
    state = checkpoint.read_state(checkpoint.locate(run / "checkpoints", "last"))
    return run, state


def resume_and_check(run: Path, state: dict, extra_steps: int) -> None:
    from sim2real.policies.trainer import Trainer

    cfg = RunDir(run).read_config()
    cfg.total_steps = state["step"] + extra_steps
    trainer = Trainer(cfg, run, resume=True, progress=False)
    try:
        assert trainer.resumed_from == state["step"]
        restored = session.fingerprint(trainer.model, trainer.env)
        saved = state["summary"]  # written by the killed process from its live objects
        assert restored["num_timesteps"] == saved["num_timesteps"] == state["step"]
        assert restored["n_updates"] == saved["n_updates"]
        assert restored["obs_rms_count"] == saved["obs_rms_count"]
        assert restored["obs_rms_mean"] == saved["obs_rms_mean"]
        assert restored["obs_rms_var"] == saved["obs_rms_var"]
        assert restored["optimizers"] == saved["optimizers"] and restored["optimizers"]
        assert all(o["steps"] > 0 for o in restored["optimizers"].values())
        assert restored.get("replay_buffer_size") == saved.get("replay_buffer_size")
        assert restored.get("lagrange_multiplier") == saved.get("lagrange_multiplier")
        assert restored.get("lagrange_integral") == saved.get("lagrange_integral")
        result = trainer.run()
    finally:
        trainer.close()
    assert result.resumed_from == state["step"] and result.steps >= cfg.total_steps
    final = checkpoint.read_state(checkpoint.locate(run / "checkpoints", "last"))
    assert final["step"] == result.steps
    assert final["summary"]["obs_rms_count"] > state["summary"]["obs_rms_count"]
    assert final["wall_time_s"] > state["wall_time_s"]  # wall-clock continues across the crash
    steps = [r["step"] for r in RunDir(run).read_eval_log()]
    assert steps == sorted(set(steps)) and steps[-1] == result.steps  # no rows from the lost timeline


@pytest.mark.heavy
def test_sac_resumes_after_kill_9(tmp_path: Path, puck) -> None:
    run, state = start_and_kill(tmp_path, "sac", checkpoint_every=256, min_step=512)
    assert state["summary"]["replay_buffer_size"] == state["step"] // TINY["n_envs"]
    resume_and_check(run, state, extra_steps=256)
    final = checkpoint.read_state(checkpoint.locate(run / "checkpoints", "last"))
    assert final["summary"]["replay_buffer_size"] == final["step"] // TINY["n_envs"]  # nothing lost or doubled


def test_ppo_resumes_after_kill_9(tmp_path: Path, puck) -> None:
    run, state = start_and_kill(tmp_path, "ppo", checkpoint_every=256, min_step=768)
    assert state["summary"]["learning_rate"] > 0  # the adaptive learning rate is part of the state
    resume_and_check(run, state, extra_steps=512)


@pytest.mark.heavy
def test_ppo_lag_resumes_after_kill_9(tmp_path: Path, puck) -> None:
    run, state = start_and_kill(tmp_path, "ppo_lag", checkpoint_every=256, min_step=768)
    assert state["summary"]["lagrange_multiplier"] > 0  # the multiplier is part of the state
    assert "cost_optimizer" in state["summary"]["optimizers"]  # and the cost critic's optimizer
    resume_and_check(run, state, extra_steps=512)


def test_resume_without_any_checkpoint_starts_from_zero(tmp_path: Path, puck) -> None:
    """A crash before the first checkpoint leaves only config.yaml; --resume starts over."""
    from policy_helpers import tiny_config

    from sim2real.policies.common.rundir import provenance

    cfg = tiny_config("td3", {"total_steps": 256, "eval.every_steps": 0})
    RunDir(tmp_path / "run").write_config(cfg, provenance(cfg))
    from sim2real.policies.trainer import train

    result = train(cfg, tmp_path / "run", resume=True, progress=False)
    assert result.resumed_from is None and result.steps == 256


def test_set_total_steps_is_applied_and_a_resume_may_extend_it(tmp_path: Path, puck) -> None:
    """``--set total_steps=N`` once lost to the unset ``--steps`` flag, silently."""
    from sim2real.cli import main

    cfg = merge(TINY, {"total_steps": 10**6})
    (tmp_path / "cfg.yaml").write_text(yaml.safe_dump(cfg))
    run = tmp_path / "run"
    assert main(["train", "--config", str(tmp_path / "cfg.yaml"), "--set", "total_steps=256", "--out", str(run),
                 "--no-progress"]) == 0
    assert RunDir(run).read_config().total_steps == 256
    assert main(["train", "--resume", "--out", str(run), "--set", "total_steps=512", "--no-progress"]) == 0
    assert RunDir(run).read_config().total_steps == 512
    assert checkpoint.read_state(checkpoint.locate(run / "checkpoints", "last"))["step"] >= 512
