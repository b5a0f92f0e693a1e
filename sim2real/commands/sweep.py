"""Tune training hyperparameters: Ray Tune over `sim2real train` runs, ASHA stopping the weak ones (or PBT).

Examples:
  sim2real sweep benchmarks/configs/sweep_arm_reach_ppo.yaml                  # local Ray, every core
  sim2real sweep sweep.yaml --out runs/sweep-reach --address 10.0.0.1:6379    # an existing cluster
  sim2real sweep sweep.yaml --out runs/sweep-reach --resume                   # continue a killed sweep

The sweep file (YAML; `config` is relative to it):
  task: ArmReach                                  # or the training config's task
  config: ../policies/baselines/ArmReach/config.yaml   # the training config trials start from
  set: {total_steps: 300000, eval.every_steps: 50000}  # fixed overrides, dotted keys
  space:                                          # dotted config key: {distribution: arguments}
    ppo.learning_rate: {loguniform: [1.0e-4, 1.0e-3]}   # also uniform: [low, high]
    ppo.ent_coef: {choice: [0.0, 0.005, 0.01]}
    ppo.batch_size: {grid: [256, 512, 1024]}      # every value, times `samples`
    seed: {randint: [0, 1000]}                    # integers in [low, high)
  points: [{ppo.learning_rate: 3.0e-4, ppo.ent_coef: 0.01}]   # run these values first (optional)
  metric: mean_return        # success_rate, ci_low, mean_return, ... or final_<task metric>
  mode: max                  # or min
  samples: 12
  scheduler: {asha: {grace_steps: 100000, reduction_factor: 2}}  # or none, or
             # {pbt: {perturbation_interval_steps: 100000, quantile_fraction: 0.25}}: weak trials
             # continue strong ones' checkpoints with mutated space values (see docs/scaling.md)
  resources_per_trial: {cpu: 1}
  max_failures: 2            # a trial whose worker dies resumes its run folder this many times

Each trial is a normal run folder in <out>/trials/<trial>/ (config.yaml, checkpoints,
TensorBoard, eval.jsonl) with torch_threads 1 and nthread 1 unless the file sets them.
At the end: <out>/results.md and results.csv (every trial), best_trials.png and
best_config.yaml (`sim2real train --config <out>/best_config.yaml` repeats the best
trial). Without --address (or RAY_ADDRESS) Ray runs locally on loopback. See docs/scaling.md.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as _dt
import sys
from pathlib import Path

from sim2real.commands.output import add_json_flag, console, emit_json
from sim2real.errors import ConfigError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("sweep", type=Path, help="the sweep file (YAML): search space, scheduler, metric")
    parser.add_argument("--out", type=Path,
                        help="sweep folder (default: runs/sweep-<file name>-<timestamp>; with --resume: the newest "
                             "such folder)")
    parser.add_argument("--address", metavar="HOST:PORT",
                        help="join this Ray cluster (or ray://HOST:PORT; default: $RAY_ADDRESS, else a local instance)")
    parser.add_argument("--num-cpus", type=int, help="CPUs of a local Ray instance (default: every core)")
    parser.add_argument("--resume", action="store_true",
                        help="continue the sweep in --out from Tune's experiment state (unfinished and errored trials "
                             "resume their run folders)")
    add_json_flag(parser)


def _sweep_folder(args: argparse.Namespace, stem: str) -> Path:
    if args.out is not None:
        return args.out.resolve()
    if args.resume:
        found = sorted(Path("runs").glob(f"sweep-{stem}-*"))
        if not found:
            raise ConfigError("--resume", f"no runs/sweep-{stem}-* folder to resume; name it with --out")
        return found[-1].resolve()
    return (Path("runs") / f"sweep-{stem}-{_dt.datetime.now().strftime('%Y%m%d-%H%M%S')}").resolve()


def run(args: argparse.Namespace) -> int:
    from sim2real.policies.common import cluster
    from sim2real.policies.sweep import space

    spec = space.load(args.sweep)  # every config error before Ray starts
    out = _sweep_folder(args, spec.path.stem)
    if not args.resume and out.exists() and any(out.iterdir()):
        raise ConfigError("--out", f"{out} is not empty; pass --resume to continue its sweep or choose another --out")
    cluster.connect(args.address, num_cpus=args.num_cpus)  # an unreachable address: one line, nothing started
    from sim2real.policies.sweep import report, runner

    console.print(f"sweep {spec.path.name}: {spec.trial_count()} trials of {spec.total_steps:,} steps, "
                  f"{spec.scheduler.kind} on {spec.metric} ({spec.mode}) -> {out}")
    # Ray prints some driver messages (e.g. "(raylet) A worker died ...") on stdout, which
    # belongs to the table or the one --json object: send them to stderr with the progress.
    with contextlib.redirect_stdout(sys.stderr):
        results = runner.run(spec, out, resume=args.resume, log=console.print)
    rows = report.collect(results, spec, out)
    summary = report.write_all(rows, spec, out)
    if args.json:
        emit_json(summary)
        return 0
    # Plain writes: a table wrapped to the terminal's width is no longer markdown.
    sys.stdout.write((out / "results.md").read_text())
    best = summary["best"]
    if best is not None:
        sys.stdout.write(f"best: {best['trial']} ({spec.metric} {best['final']:.4g}); "
                         f"repeat it with: sim2real train --config {out / 'best_config.yaml'}\n")
    sys.stdout.flush()
    return 0 if all(r.status != "error" for r in rows) else 1
