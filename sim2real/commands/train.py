"""Train a policy on a task (PPO, SAC or TD3 from Stable-Baselines3) into a run folder.

Examples:
  sim2real train ArmReach                          # defaults + policies/configs/arm_reach.yaml
  sim2real train ArmReach --algo sac --steps 200000 --out runs/reach-sac
  sim2real train --config runs/reach-sac/config.yaml --out runs/reach-sac-again   # repeat a run
  sim2real train --resume --out runs/reach-sac --steps 400000                      # continue / extend
  sim2real train ArmMaze --algo ppo_lag --cost-limit 0.5                           # passivity-aware (energy tank)
  sim2real train ArmReach --reward "clip:the gripper touches the green ball" --clip-weights models/clip-reach  # VLM-RM
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import get_args

from sim2real.commands.output import add_json_flag, console, emit_json, stdout
from sim2real.commands.overrides import add_set_flag, parse_overrides
from sim2real.policies.config import Algo, Physics


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("task", nargs="?", help="task name, e.g. ArmReach (optional with --config or --resume)")
    parser.add_argument(
        "--algo",
        choices=list(get_args(Algo)),
        help="algorithm (default: the config's); ppo_lag, sac_lag: PPO-/SAC-Lagrangian (--cost-limit); "
             "distill: a student imitating a privileged teacher (distill.teacher)",
    )
    parser.add_argument("--config", type=Path, help="YAML config file layered over the defaults")
    parser.add_argument("--seed", type=int)
    parser.add_argument("--n-envs", type=int, help="training environments stepped as one batch")
    parser.add_argument("--steps", type=int, help="total environment steps")
    parser.add_argument("--out", type=Path, help="run folder (default: runs/<Task>-<algo>-<timestamp>)")
    parser.add_argument("--resume", action="store_true", help="continue the run in --out from its last checkpoint")
    parser.add_argument("--dr", metavar="PRESET",
                        help="randomization of the training envs: train, heldout, none, or a YAML file of field "
                             "values over the training preset (sim2real sysid's fitted.yaml; copied into the "
                             "run's config as dr_overrides)")
    parser.add_argument("--action-mode", help="the task's action mode (default: the task's first)")
    parser.add_argument("--backend", choices=list(get_args(Physics)),
                        help="physics of the training envs: CPU MuJoCo (default) or MuJoCo Warp (the GPU path)")
    parser.add_argument(
        "--cost-limit", type=float, help="ppo_lag/sac_lag: allowed expected cost per episode (lagrangian.cost_limit)"
    )
    parser.add_argument(
        "--reward", action="append", metavar="clip:PROMPT",
        help='train on a CLIP reward: "clip:the gripper touches the green ball" (repeat for several goal prompts)',
    )
    parser.add_argument("--baseline", action="append", help="CLIP reward baseline prompt (repeat for several)")
    parser.add_argument("--alpha", type=float, help="CLIP reward goal-baseline projection strength in [0, 1]")
    parser.add_argument("--clip-model", help="open_clip architecture of a --clip-weights file (e.g. ViT-bigG-14)")
    parser.add_argument(
        "--clip-weights", action="append",
        help="local CLIP weights: a finetune-clip folder or a weight file; repeat for an ensemble whose "
        "lower confidence bound (mean - LCB x std, --lcb) is the reward",
    )
    parser.add_argument("--lcb", type=float, help="k of an ensemble's reward mean - k x std (default 1)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar or log lines")
    add_set_flag(parser, "ppo.n_steps=32")
    add_json_flag(parser)


def run(args: argparse.Namespace) -> int:
    from sim2real.policies.common.rundir import default_run_name
    from sim2real.policies.config_loading import resolve_config

    flags = {
        "algo": args.algo,
        "seed": args.seed,
        "n_envs": args.n_envs,
        "dr": args.dr,
        "action_mode": args.action_mode,
        "backend": args.backend,
        "lagrangian.cost_limit": args.cost_limit,
        "total_steps": args.steps,
    }
    flags.update(_reward_flags(args))
    if args.dr is not None:
        from sim2real.sim.core.randomization import is_dr_file, read_dr_file

        if is_dr_file(args.dr):  # the file's values go into config.yaml: the run reproduces without it
            flags.update({"dr": "train", "dr_overrides": read_dr_file(args.dr)})
    flags.update(parse_overrides(args.overrides))
    if args.resume:
        config, out = _resume_config(args, flags)
    else:
        config = resolve_config(args.task, args.config, flags)
        out = args.out or Path("runs") / default_run_name(config.task, config.algo)
    from sim2real.policies.trainer import train

    console.print(f"{'resuming' if args.resume else 'training'} {config.algo} on {config.task} -> {out}")
    result = train(
        config,
        out,
        resume=args.resume,
        console=console,
        progress=not args.no_progress,
        command=["sim2real", *sys.argv[1:]],
    )
    summary = {
        "run": str(result.run_dir),
        "task": config.task,
        "algo": config.algo,
        "steps": result.steps,
        "resumed_from": result.resumed_from,
        "wall_time_s": round(result.wall_time_s, 2),
        "last_eval": result.last_eval,
        "best_eval": result.best_eval,
    }
    if args.json:
        emit_json(summary)
        return 0
    best = result.best_eval or {}
    stdout.print(
        f"{result.steps:,} steps in {result.wall_time_s:,.0f} s; best eval success "
        f"{best.get('success_rate', 0):.0%} at step {best.get('step', 0):,}; run folder {result.run_dir}"
    )
    return 0


def _resume_config(args: argparse.Namespace, flags: dict):
    """The run folder's config; flags may only repeat it (and --steps may extend it)."""
    from sim2real.policies.common.rundir import RunDir
    from sim2real.policies.errors import CheckpointMismatchError
    from sim2real.sim import REGISTRY
    from sim2real.sim.core.errors import ConfigError
    from sim2real.sim.core.registry import gym_id

    if args.out is None:
        raise ConfigError("--out", "--resume needs the run folder: --out runs/NAME")
    if args.config is not None:
        raise ConfigError("--config", "cannot be combined with --resume (the run folder's config.yaml is used)")
    run = RunDir(args.out)
    run.require_run()
    config = run.read_config()
    if args.task and gym_id(REGISTRY.get(args.task)) != config.task:
        raise CheckpointMismatchError(f"{run.path} trains {config.task}, not {args.task}")
    steps = flags.pop("total_steps", None)  # the one value a resumed run may change
    for key, value in flags.items():
        current = config
        for part in key.split("."):
            current = getattr(current, part)
        if value is not None and value != current:
            flag = key.split(".")[-1].replace("_", "-")
            raise CheckpointMismatchError(f"cannot change --{flag} on resume: {run.path} uses {current!r}")
    if steps is not None:
        config.total_steps = steps
    return config, run.path


def _reward_flags(args: argparse.Namespace) -> dict:
    """``--reward clip:...`` and friends as ``reward.*`` overrides (unset flags: None)."""
    from sim2real.sim.core.errors import ConfigError

    goal = None
    for spec in args.reward or []:
        if spec == "task":
            continue
        if not spec.startswith("clip:") or not spec[5:].strip():
            raise ConfigError("--reward", f'expected "clip:GOAL PROMPT" or "task", got {spec!r}')
        goal = [*(goal or []), spec[5:].strip()]
    baseline = args.baseline
    if goal is not None and baseline is None and args.task:
        from sim2real.policies.rewards.captions import GOAL_PROMPTS
        from sim2real.sim import REGISTRY
        from sim2real.sim.core.registry import gym_id

        default = GOAL_PROMPTS.get(gym_id(REGISTRY.get(args.task)))
        baseline = [default[1]] if default else None
    source = None if args.reward is None else ("clip" if goal else "task")
    return {
        "reward.source": source,
        "reward.goal": goal,
        "reward.baseline": baseline,
        "reward.alpha": args.alpha,
        "reward.clip_model": args.clip_model,
        "reward.clip_weights": args.clip_weights[0] if args.clip_weights else None,
        "reward.ensemble": args.clip_weights[1:] if args.clip_weights and len(args.clip_weights) > 1 else None,
        "reward.lcb": args.lcb,
    }

