"""Comparative studies: train (or load) several policies, evaluate them, write a report.

`sim2real study passivity`: passivity-agnostic (PPO) and passivity-aware
(PPO-Lagrangian on the energy-tank cost) policies on the arm's contact-rich maze,
each with the passivity filter off and on, over several seeds, plus a sweep of
the cost limit. Writes study.md (table, mean and 95 percent CI over seeds),
results.json, tank_energy.png, comparison.png and sensitivity.png into --out.
Runs already in --out/runs are loaded, unfinished ones resumed. With --ray [ADDR] the
training runs and then the evaluations run as Ray tasks (one CPU each; a local Ray
instance, or the cluster at ADDR): the same results, written here as without.

Examples:
  sim2real study passivity --seeds 5 --out runs/study-passivity
  sim2real study passivity --seeds 2 --steps 50000 --episodes 8 --out /tmp/quick-study
  sim2real study passivity --seeds 5 --ray                 # the 12 runs side by side on this machine's cores
"""

from __future__ import annotations

import argparse
from pathlib import Path

from sim2real.commands.output import add_json_flag, console, emit_json, stdout
from sim2real.policies.common.cluster import add_ray_flag


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="study", metavar="STUDY", required=True)
    p = sub.add_parser("passivity", help="agnostic vs aware policies, passivity filter off vs on (arm maze)")
    p.add_argument("--seeds", type=int, default=5, help="training seeds per policy type")
    p.add_argument("--steps", type=int, default=250_000, help="environment steps per training run")
    p.add_argument("--n-envs", type=int, default=32, help="training environments per run")
    p.add_argument("--cost-limit", type=float, default=1.0, help="aware policies: allowed violation energy (J/episode)")
    p.add_argument(
        "--sensitivity-limits", type=float, nargs="*", default=[0.25, 3.0], help="further cost limits for the sweep"
    )
    p.add_argument("--lambda-lr", type=float, default=0.02, help="aware policies: integral gain of the multiplier")
    p.add_argument("--lambda-kp", type=float, default=0.1, help="aware policies: proportional gain of the multiplier")
    p.add_argument("--sensitivity-seeds", type=int, default=1, help="seeds per extra cost limit")
    p.add_argument("--episodes", type=int, default=24, help="evaluation episodes per policy and filter setting")
    p.add_argument("--dr", choices=["train", "heldout", "none"], default="train", help="evaluation randomization")
    p.add_argument("--out", type=Path, default=Path("runs/study-passivity"), help="study folder")
    add_ray_flag(p, "the training runs and evaluations")
    add_json_flag(p)


def run(args: argparse.Namespace) -> int:
    from sim2real.policies.studies.passivity import PassivityStudyConfig, run_study
    from sim2real.sim.core.errors import ConfigError

    for name in ("seeds", "steps", "n_envs", "episodes", "sensitivity_seeds"):
        if getattr(args, name) < 1:
            raise ConfigError(f"--{name.replace('_', '-')}", "must be >= 1")
    cfg = PassivityStudyConfig(
        seeds=args.seeds,
        steps=args.steps,
        n_envs=args.n_envs,
        cost_limit=args.cost_limit,
        lambda_lr=args.lambda_lr,
        lambda_kp=args.lambda_kp,
        sensitivity_limits=list(args.sensitivity_limits),
        sensitivity_seeds=args.sensitivity_seeds,
        episodes=args.episodes,
        eval_dr=args.dr,
    )
    results = run_study(cfg, args.out, log=console.print, ray_address=args.ray)
    if args.json:
        emit_json({"out": str(args.out), "summary": results["summary"], "sensitivity": results["sensitivity"]})
    else:
        stdout.print((args.out / "study.md").read_text())
    return 0
