"""A tiny training run per algorithm completes, and its checkpoint loads,
evaluates and exports; the exported graph matches torch and SB3."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from policy_helpers import ALGOS, PUCK_ID, TINY

from sim2real.policies.common import checkpoint
from sim2real.policies.common.evaluation import Evaluator
from sim2real.policies.common.rundir import RunDir
from sim2real.policies.loading import load_run


@pytest.mark.parametrize("algo", ALGOS)
def test_run_folder_is_complete(trained_runs: dict[str, Path], algo: str) -> None:
    run = RunDir(trained_runs[algo])
    cfg = run.read_config()
    assert cfg.algo == algo and cfg.task == PUCK_ID
    last = checkpoint.read_state(checkpoint.locate(run.checkpoints, "last"))
    assert last["step"] == TINY["total_steps"] == last["summary"]["num_timesteps"]
    assert last["algo"] == algo and last["obs_size"] == 6 and last["action_size"] == 2
    assert ("replay_buffer.pkl" in last["files"]) == (algo not in ("ppo", "ppo_lag"))
    best = checkpoint.read_state(checkpoint.locate(run.checkpoints, "best"))
    assert "replay_buffer.pkl" not in best["files"] and 0 < best["step"] <= last["step"]
    assert best["eval"]["step"] == best["step"]
    steps = [r["step"] for r in run.read_eval_log()]
    assert steps == [0, 512, 1024]  # step 0 baseline, every 512 steps, and the end
    rows = run.read_eval_log()
    assert all(r["episodes"] == TINY["eval"]["episodes"] for r in rows)
    assert [r["wall_time_s"] for r in rows] == sorted(r["wall_time_s"] for r in rows)
    assert any(p.name.startswith("events.out.tfevents") for p in run.tb_dir.iterdir())
    if algo in ("ppo", "ppo_lag"):
        assert last["summary"]["n_updates"] == 4 * TINY["ppo"]["n_epochs"]  # 4 rollouts of 256 steps
    else:
        assert last["summary"]["replay_buffer_size"] == TINY["total_steps"] // TINY["n_envs"]


@pytest.mark.parametrize("algo", ALGOS)
def test_checkpoint_loads_evaluates_and_exports(trained_runs: dict[str, Path], algo: str, puck, tmp_path: Path) -> None:
    from sim2real.policies.deploy import OnnxPolicy
    from sim2real.policies.export.exporter import export_policy

    loaded = load_run(trained_runs[algo], "last")
    assert loaded.step == TINY["total_steps"] and loaded.kind == "last"
    assert loaded.vecnorm.obs_rms.count > TINY["total_steps"]  # statistics were learned and restored
    ev = Evaluator(puck, n_envs=2, dr="none", seed=0)
    result = ev.run(loaded.policy(), episodes=3)
    assert result.episodes == 3 and np.isfinite(result.mean_return)
    assert ev.run(loaded.policy(deterministic=False), episodes=2).episodes == 2

    exported = export_policy(trained_runs[algo], "onnx", tmp_path, which="last")
    onnx_policy = OnnxPolicy(exported.policy_path)
    torch_policy = loaded.policy()
    obs = np.random.default_rng(1).normal(0, 0.5, (64, 6)).astype(np.float32)
    assert np.max(np.abs(onnx_policy(obs) - torch_policy(obs))) <= 1e-5
    assert exported.metadata["verification"]["max_abs_diff"] <= 1e-5
    assert exported.metadata["training"]["step"] == loaded.step


@pytest.mark.parametrize("algo", ALGOS)
def test_deterministic_actor_matches_sb3_predict(trained_runs: dict[str, Path], algo: str, puck) -> None:
    """The extracted actor (what gets exported) is the policy SB3 itself runs."""
    loaded = load_run(trained_runs[algo], "last")
    obs = np.random.default_rng(2).normal(0, 0.5, (32, 6)).astype(np.float32)
    ours = loaded.policy()(obs)
    sb3, _ = loaded.model.predict(loaded.vecnorm.normalize_obs(obs), deterministic=True)
    assert np.max(np.abs(ours - sb3)) <= 1e-5
    assert np.all(np.abs(ours) <= 1.0)


def test_eval_log_lines_are_json_objects(trained_runs: dict[str, Path]) -> None:
    lines = RunDir(trained_runs["ppo"]).eval_log.read_text().splitlines()
    for line in lines:
        row = json.loads(line)
        assert {"step", "wall_time_s", "success_rate", "ci_low", "ci_high", "mean_return", "metrics_final"} <= set(row)


@pytest.mark.slow
def test_ppo_learns_the_puck_task(puck, tmp_path: Path) -> None:
    """End to end: the default PPO recipe (scaled down) solves PuckTask (about 20 s)."""
    from policy_helpers import tiny_config

    from sim2real.policies.trainer import train

    cfg = tiny_config(
        "ppo",
        {
            "total_steps": 61440,
            "n_envs": 16,
            "net.pi": [256, 256],
            "net.vf": [256, 256],
            "ppo.n_steps": 64,
            "ppo.batch_size": 256,
            "ppo.n_epochs": 5,
            "eval.every_steps": 20480,
            "eval.episodes": 32,
            "eval.n_envs": 8,
            "checkpoint.every_steps": 20480,
        },
    )
    result = train(cfg, tmp_path / "run", progress=False)
    assert result.best_eval["success_rate"] >= 0.9
    assert result.best_eval["metrics_final"]["distance"] < 0.02
