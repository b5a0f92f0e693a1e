"""Training throughput: env steps/s while PPO and SAC learn, on our batched env
and, with the same algorithm settings, on Gymnasium ``Ant-v5`` through SB3's
own ``DummyVecEnv`` (the peer), measured in the same run."""

from __future__ import annotations

import argparse
import time
from typing import Any

from sim2real.commands.output import add_json_flag, console, emit_json, stdout

HELP = "PPO and SAC env steps/s on a task vs SB3 on Gymnasium Ant-v5 (same settings)"


def _learn_rate(model: Any, steps: int) -> float:
    """Env steps/s of ``model.learn(steps)`` after a short warm-up."""
    from stable_baselines3.common.logger import Logger

    # A logger with no outputs: without one, SB3's learn() makes an empty /tmp/SB3-<date> folder.
    model.set_logger(Logger(folder=None, output_formats=[]))
    # Warm-up: allocations, the first rollout, and (off-policy) filling the buffer past
    # learning_starts so every measured step also pays for its gradient update.
    model.learn(total_timesteps=max(min(steps // 5, 4096), getattr(model, "learning_starts", 0) + 64))
    start_steps, start = model.num_timesteps, time.perf_counter()
    model.learn(total_timesteps=steps, reset_num_timesteps=False)
    return (model.num_timesteps - start_steps) / (time.perf_counter() - start)


def _build(algo: str, task: str, n_envs: int, ant: bool) -> Any:
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.vec_env import DummyVecEnv, VecNormalize

    from sim2real.policies.algorithms import get_algorithm
    from sim2real.policies.config_loading import resolve_config

    overrides: dict[str, Any] = {"algo": algo, "n_envs": n_envs}
    if algo == "sac":
        overrides["sac.learning_starts"] = 256  # the update cost is what SAC throughput measures
    config = resolve_config(task, overrides=overrides)
    if ant:
        env = make_vec_env("Ant-v5", n_envs=n_envs, seed=0, vec_env_cls=DummyVecEnv)
    else:
        from sim2real.sim import make_vec

        env = make_vec(config.task, n_envs, dr=config.dr, seed=0)
    env = VecNormalize(env, norm_reward=False)
    return get_algorithm(algo).build(config, env)


def run_train_bench(
    task: str = "QuadrupedVelocity",
    ppo_steps: int = 30_000,
    sac_steps: int = 1_500,
    ppo_envs: int = 32,
    sac_envs: int = 4,
    progress: Any = lambda s: None,
) -> dict[str, Any]:
    """PPO and SAC env steps/s: ``task`` vs Ant-v5, same hyperparameters (the task's config)."""
    import torch

    torch.set_num_threads(1)  # what training uses: more threads fight the physics threads on 2 cores
    out: dict[str, Any] = {"benchmark": "train", "task": task, "torch_threads": 1, "algorithms": {}}
    for algo, steps, n_envs in (("ppo", ppo_steps, ppo_envs), ("sac", sac_steps, sac_envs)):
        figures = {}
        for label, ant in (("ours", False), ("ant_v5", True)):
            progress(f"{algo}: {'Ant-v5' if ant else task}")
            figures[f"{label}_env_steps_per_s"] = round(_learn_rate(_build(algo, task, n_envs, ant), steps), 1)
        figures["n_envs"] = n_envs
        figures["ratio_ours_vs_ant"] = round(figures["ours_env_steps_per_s"] / figures["ant_v5_env_steps_per_s"], 3)
        out["algorithms"][algo] = figures
    return out


# -- command line (`sim2real bench train`) -------------------------------------------
def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--task", default="QuadrupedVelocity", help="task whose config and env are measured")
    p.add_argument("--ppo-steps", type=int, default=30_000, help="PPO env steps per measurement")
    p.add_argument("--sac-steps", type=int, default=1_500, help="SAC env steps per measurement")
    add_json_flag(p)


def run(args: argparse.Namespace) -> int:
    from rich.table import Table

    with console.status("benchmarking training") as status:
        report = run_train_bench(args.task, args.ppo_steps, args.sac_steps, progress=lambda s: status.update(s))
    if args.json:
        emit_json(report)
        return 0
    table = Table(title=f"Training throughput: {report['task']} vs Ant-v5 (env steps/s while learning)")
    for col in ("algorithm", "envs", args.task, "Ant-v5 (SB3 DummyVecEnv)", "ratio"):
        table.add_column(col)
    for algo, f in report["algorithms"].items():
        table.add_row(
            algo,
            str(f["n_envs"]),
            f"{f['ours_env_steps_per_s']:,.0f}",
            f"{f['ant_v5_env_steps_per_s']:,.0f}",
            f"{f['ratio_ours_vs_ant']:.2f}",
        )
    stdout.print(table)
    return 0
