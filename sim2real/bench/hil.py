"""HIL-SERL on the arm's peg insertion, scripted operator: success rate vs env steps and
wall-clock for (i) SAC from scratch, (ii) RLPD with demos, (iii) HIL-SERL with demos and
interventions, over several seeds. Sparse reward (1 on success) in every method.

Writes ``results.json`` (updated after every run, so a cut-short benchmark keeps what it
measured) and ``curves.png`` into ``--out``. ``--obs-mode pixels`` is the paper's setting;
``state`` (the full simulator state) is the variant that fits a small CPU budget.

``--ray [ADDR]`` runs the (seed, method) runs as Ray tasks, one CPU each (a local Ray
instance, or the cluster at ADDR), each seed's demonstrations recorded first; the
results are the same, ``results.json`` is updated as each run arrives. Wall-clock
figures are then each run's own on its worker, with the runs sharing the machines.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import numpy as np

from sim2real.commands.output import add_json_flag, console, emit_json, stdout
from sim2real.policies.common import cluster

HELP = "HIL-SERL vs RLPD vs SAC on arm peg insertion with a scripted operator (success vs steps)"
METHODS = ("sac", "rlpd", "hil")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--steps", type=int, default=6000, help="env steps per run")
    parser.add_argument("--seeds", type=int, default=3, help="seeds per method")
    parser.add_argument("--first-seed", type=int, default=0,
                        help="seed of the first run; with an existing OUT/results.json the new runs are "
                             "added to it (same --steps only), so more seeds or methods can follow later")
    parser.add_argument("--methods", default=",".join(METHODS), help="comma-separated subset of sac,rlpd,hil")
    parser.add_argument("--demos", type=int, default=20, help="demonstrations for rlpd and hil")
    parser.add_argument("--obs-mode", choices=("pixels", "state"), default="state")
    parser.add_argument("--image-size", type=int, default=64)
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--eval-every", type=int, default=500)
    parser.add_argument("--eval-episodes", type=int, default=10)
    parser.add_argument("--out", type=Path, default=Path("runs/bench-hil"))
    parser.add_argument("--from-results", action="store_true",
                        help="only summarise and plot the runs already in OUT/results.json")
    parser.add_argument("--include", type=Path, action="append", default=[], metavar="DIR",
                        help="with --from-results: take the runs from DIR/results.json instead (repeatable: "
                             "seeds or methods measured separately) and write the merged results to OUT")
    cluster.add_ray_flag(parser, "the (seed, method) runs")
    add_json_flag(parser)


RUN_OPTIONS = ("steps", "demos", "obs_mode", "image_size", "batch_size", "eval_every", "eval_episodes", "out")
"""The arguments one run needs (what a Ray task is sent, not the whole namespace)."""


def _config(opts: dict[str, Any], seed: int):
    from sim2real.policies.hil.config import EnvConfig, HilConfig, LearnerConfig

    cfg = HilConfig(env=EnvConfig(obs_mode=opts["obs_mode"], image_size=opts["image_size"]),
                    learner=LearnerConfig(batch_size=opts["batch_size"], warmup_steps=500), seed=seed)
    cfg.actor.random_steps = 500
    cfg.validate()
    return cfg


def _demos(cfg, n: int, folder: Path):
    from sim2real.policies.hil.demos import load_demo_dir, record_demos
    from sim2real.policies.hil.devices import ScriptedOperator
    from sim2real.policies.hil.env import HilEnv

    env = HilEnv(cfg.env, seed=10_000 + cfg.seed)
    operator = ScriptedOperator(env.obs_layout, env.action_layout, always=True, seed=cfg.seed)
    record_demos(env, operator, folder, n, seed=50_000 + 1000 * cfg.seed, device_name="scripted", log=lambda s: None)
    env.close()
    demos, _ = load_demo_dir(folder)
    return demos


def record_seed_demos(opts: dict[str, Any], seed: int) -> None:
    """Record a seed's demonstrations before its runs, so its rlpd and hil runs (Ray tasks
    at the same time) find them complete instead of both writing the folder."""
    _demos(_config(opts, seed), opts["demos"], Path(opts["out"]) / f"demos-seed{seed}")


def run_one(opts: dict[str, Any], seed: int, method: str, verbose: bool = True) -> dict[str, Any]:
    """One (seed, method) run: its history and wall-clock. A lost Ray worker's run starts
    again from scratch: it depends on its seed only, so the retry gives the same curve."""
    import torch

    from sim2real.policies.hil import loop
    from sim2real.policies.hil.devices import ScriptedOperator

    torch.set_num_threads(1)
    cfg = _config(opts, seed)
    demos = _demos(cfg, opts["demos"], Path(opts["out"]) / f"demos-seed{seed}") if method != "sac" else None
    device = None
    if method == "hil":
        from sim2real.policies.hil.env import HilEnv

        probe = HilEnv(cfg.env)
        device = ScriptedOperator(probe.obs_layout, probe.action_layout, seed=100 + seed)
        probe.close()
    start = time.perf_counter()
    prefix = f"[{method} seed {seed}]"
    _, history = loop.train(cfg, opts["steps"], demos=demos, device=device, eval_every=opts["eval_every"],
                            eval_episodes=opts["eval_episodes"],
                            log=lambda s: console.print(f"{prefix} {s}", markup=False) if verbose else None)
    return {**history.__dict__, "total_seconds": time.perf_counter() - start}


def steps_to(history: dict[str, list], level: float) -> int | None:
    for step, rate in zip(history["env_steps"], history["eval_success"], strict=True):
        if rate >= level:
            return step
    return None


def summarise(results: dict[str, dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for method, runs in results.items():
        final = [r["eval_success"][-1] for r in runs.values()]
        reach = [steps_to(r, 0.8) for r in runs.values()]
        out[method] = {
            "seeds": len(runs),
            "final_success_mean": float(np.mean(final)),
            "best_success_mean": float(np.mean([max(r["eval_success"]) for r in runs.values()])),
            "steps_to_80": reach,
            "wall_seconds_mean": float(np.mean([r["wall_seconds"][-1] for r in runs.values()])),
        }
    if "sac" in out and "hil" in out and None not in out["hil"]["steps_to_80"]:
        # SAC runs that never reached 80 % count as their length: the ratio is then a lower bound.
        sac = [s if s is not None else results["sac"][k]["env_steps"][-1]
               for k, s in zip(results["sac"], out["sac"]["steps_to_80"], strict=True)]
        out["sac_over_hil_steps_to_80"] = float(np.mean(sac) / np.mean(out["hil"]["steps_to_80"]))
        out["sac_over_hil_is_lower_bound"] = None in out["sac"]["steps_to_80"]
    return out


def plot(results: dict[str, dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(15, 4))
    for method, runs in results.items():
        steps = np.array(next(iter(runs.values()))["env_steps"])
        success = np.array([r["eval_success"] for r in runs.values()])
        wall = np.array([r["wall_seconds"] for r in runs.values()]).mean(0)
        for ax, x in ((axes[0], steps), (axes[1], wall / 60)):
            ax.plot(x, success.mean(0), label=f"{method} ({len(runs)} seeds)")
            ax.fill_between(x, success.min(0), success.max(0), alpha=0.2)
        if method == "hil":
            rates = np.array([r["intervention_rate"] for r in runs.values()])
            axes[2].plot(steps, rates.mean(0), label="hil: intervened share of steps")
    for ax, label in zip(axes, ("env steps", "wall-clock (min)", "env steps"), strict=True):
        ax.set_xlabel(label)
        ax.grid(alpha=0.3)
        ax.legend()
    axes[0].set_ylabel("eval success (policy alone)")
    axes[2].set_ylabel("intervention rate")
    fig.suptitle("Arm peg insertion, scripted operator")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def run(args: argparse.Namespace) -> int:
    from sim2real.policies.common import atomic

    if args.from_results:
        return _report(args, _merged_runs(args.include or [args.out]))
    methods = [m for m in args.methods.split(",") if m]
    results = _previous_runs(args)
    for m in methods:
        results.setdefault(m, {})
    args.out.mkdir(parents=True, exist_ok=True)
    opts = {k: getattr(args, k) for k in RUN_OPTIONS}
    seeds = range(args.first_seed, args.first_seed + args.seeds)
    quiet = args.ray is not None
    if quiet and any(m != "sac" for m in methods):
        cluster.run_calls(record_seed_demos, [{"opts": opts, "seed": s} for s in seeds], args.ray, max_retries=1)
    calls = [(seed, method) for seed in seeds for method in methods]
    settings = {k: str(v) for k, v in vars(args).items() if not k.startswith("_")}
    saved = {m: dict(r) for m, r in results.items()}

    def arrived(i: int, run: dict[str, Any]) -> None:
        seed, method = calls[i]
        saved[method][str(seed)] = run
        atomic.write_json(args.out / "results.json", {"args": settings, "runs": saved})
        if quiet:
            console.print(f"[{method} seed {seed}] done: eval success {run['eval_success'][-1]:.0%}", markup=False)

    runs = cluster.run_calls(run_one, [{"opts": opts, "seed": s, "method": m, "verbose": not quiet} for s, m in calls],
                             args.ray, max_retries=1, on_result=arrived)
    for (seed, method), run in zip(calls, runs, strict=True):  # the report in seed order, however they arrived
        results[method][str(seed)] = run
    return _report(args, results)


def _merged_runs(folders: list[Path]) -> dict[str, dict[str, Any]]:
    """The runs of several benchmark folders together; one method and seed may come from one folder only."""
    merged: dict[str, dict[str, Any]] = {}
    for folder in folders:
        path = folder / "results.json"
        if not path.exists():
            raise SystemExit(f"{path} does not exist")
        for method, runs in json.loads(path.read_text()).get("runs", {}).items():
            for seed, run in runs.items():
                if seed in merged.get(method, {}):
                    raise SystemExit(f"{method} seed {seed} is in more than one of {[str(f) for f in folders]}")
                others = list(merged.get(method, {}).values())
                if others and others[0]["env_steps"] != run["env_steps"]:
                    raise SystemExit(f"{method} runs in {folder} were evaluated at other steps than the "
                                     "others: a method's seeds must share one budget")
                merged.setdefault(method, {})[seed] = run
    return merged


def _previous_runs(args: argparse.Namespace) -> dict[str, dict[str, Any]]:
    """Runs already in OUT/results.json, when they were measured with the same budget."""
    path = args.out / "results.json"
    if not path.exists():
        return {}
    previous = json.loads(path.read_text())
    steps = (previous.get("args") or {}).get("steps")
    if steps is not None and int(steps) != args.steps:
        raise SystemExit(f"{path} holds runs of {steps} steps, not {args.steps}: use another --out")
    return previous.get("runs", {})


def _report(args: argparse.Namespace, results: dict[str, dict[str, Any]]) -> int:
    from sim2real.policies.common import atomic

    results = {m: r for m, r in results.items() if r}
    summary = summarise(results)
    plot(results, args.out / "curves.png")
    # Keep the settings the runs were measured with (not this call's, under --from-results).
    previous = json.loads((args.out / "results.json").read_text()) if (args.out / "results.json").exists() else {}
    atomic.write_json(args.out / "results.json", {"args": previous.get("args"), "runs": results, "summary": summary})
    if args.json:
        emit_json({"summary": summary, "out": str(args.out)})
    else:
        for method, s in summary.items():
            stdout.print(f"{method}: {json.dumps(s)}")
    return 0
