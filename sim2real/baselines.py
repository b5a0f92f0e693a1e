"""Rebuild the shipped baseline policies: ``make baselines`` (or
``python -m sim2real.baselines [TASK ...]``).

For each task, the committed ``policies/baselines/<Task>/config.yaml`` (the
resolved config of the run that produced the shipped policy) is trained again
with ``sim2real train``, exported with ``sim2real export`` next to it, evaluated
with ``sim2real eval`` under the training and the held-out randomization, and
its learning curves are plotted. Everything goes through the public CLI, so the
commands in ``metrics.json`` are the ones a user would paste.

Baselines made by a module of their own instead (:data:`SCRIPTED`) run that module,
which writes the folder, its metrics included.

A baseline trained on a learned reward (``reward.source: clip``, e.g. ArmReach-vlm)
needs that reward model, which is not committed (27 MB); its folder's
``reward_model.json`` names it (hash, metadata) and gives the commands that make it.
Without it such a baseline is skipped when all are rebuilt, and refused when named.

``--ray [ADDR]`` (``make baselines ARGS=--ray``) builds the tasks as Ray tasks, one CPU
each (a local Ray instance, or the cluster at ADDR) in dependency waves: the trained
baselines together, then the students (``algo: distill``), which read their teachers'
exported policies, then the scripted ones, which copy the others. Without it they are
built one after another in that order, as before. A task whose Ray worker dies is not
retried (its ``sim2real train`` child may outlive the worker and still write the run
folder): run the command again, and training resumes from the run's last checkpoint.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from sim2real.policies import BASELINES_DIR
from sim2real.policies.common import cluster

SCRIPTED: dict[str, list[str]] = {
    # The gait_residual QuadrupedVelocity policy distilled into a clock-free joint_pos one.
    "QuadrupedVelocityClockFree": ["-m", "sim2real.policies.distill.clock_free"],
}
"""Baselines built by a module (``python <args> --out <folder>``), after the ones they copy."""


def _cli(*args: str, capture: bool = False) -> str:
    cmd = [sys.executable, "-m", "sim2real", *args]
    print("+ sim2real " + " ".join(args), file=sys.stderr, flush=True)
    out = subprocess.run(cmd, check=True, text=True, stdout=subprocess.PIPE if capture else None)
    return out.stdout if capture else ""


def missing_reward_model(task: str) -> str | None:
    """Why ``task``'s baseline cannot be trained here, if its config's learned reward model
    (``reward.clip_weights``, relative to the working directory) is absent; else None."""
    import yaml

    config = BASELINES_DIR / task / "config.yaml"
    if not config.is_file():
        return None
    reward = (yaml.safe_load(config.read_text()) or {}).get("reward") or {}
    weights = reward.get("clip_weights") if reward.get("source") == "clip" else None
    if not weights or Path(weights).exists():
        return None
    return (f"{task} trains on the reward model {weights}, which is not here; the commands that make it are in "
            f"{BASELINES_DIR / task / 'reward_model.json'}")


def build(task: str, runs: Path, episodes: int, train: bool = True, last: bool = False) -> dict[str, Any]:
    folder = BASELINES_DIR / task
    if task in SCRIPTED:
        start = time.perf_counter()
        subprocess.run([sys.executable, *SCRIPTED[task], "--out", str(folder)], check=True)
        return {"task": task, "train_wall_s": round(time.perf_counter() - start, 1)}
    config = folder / "config.yaml"
    if not config.is_file():
        raise SystemExit(f"no baseline config {config}; known: {available()}")
    run = runs / task
    start = time.perf_counter()
    if train:
        resume = ["--resume"] if (run / "checkpoints" / "last.json").is_file() else []
        _cli("train", "--config", str(config), "--out", str(run), "--no-progress", *resume)
    # The best checkpoint is picked on a few evaluation episodes; --last ships the final one.
    source = run / "checkpoints" / json.loads((run / "checkpoints" / "last.json").read_text())["dir"] if last else run
    _cli("export", str(source), "--out", str(folder))
    metrics: dict[str, Any] = {"task": task, "run": str(run), "exported": str(source),
                               "train_wall_s": round(time.perf_counter() - start, 1)}
    for dr in ("train", "heldout"):
        report = json.loads(
            _cli("eval", str(folder / "policy.onnx"), "--dr", dr, "--episodes", str(episodes), "--json", capture=True)
        )
        metrics[f"eval_{dr}"] = report
    _cli("plot", str(run), "--out", str(folder / "curves.png"))
    (folder / "metrics.json").write_text(json.dumps(metrics, indent=2) + "\n")
    return metrics


def _is_student(task: str) -> bool:
    config = BASELINES_DIR / task / "config.yaml"
    return config.is_file() and "\nalgo: distill" in config.read_text()


def waves(tasks: list[str]) -> list[list[str]]:
    """``tasks`` in the order they can be built: each wave only needs the waves before it
    (trained baselines, then students of teachers, then the scripted ones)."""
    kinds = [[t for t in tasks if t not in SCRIPTED and not _is_student(t)],
             [t for t in tasks if t not in SCRIPTED and _is_student(t)], [t for t in tasks if t in SCRIPTED]]
    return [wave for wave in kinds if wave]


def available() -> list[str]:
    """The shipped baselines, students (``algo: distill``) after the teachers they imitate."""
    configs = sorted(BASELINES_DIR.glob("*/config.yaml"))
    return [p.parent.name for p in sorted(configs, key=lambda p: _is_student(p.parent.name))] + list(SCRIPTED)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m sim2real.baselines", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("tasks", nargs="*", help=f"tasks to rebuild (default: all of {available()})")
    parser.add_argument("--runs", type=Path, default=Path("runs/baselines"), help="where the training runs go")
    parser.add_argument("--episodes", type=int, default=100, help="evaluation episodes per randomization preset")
    parser.add_argument("--no-train", dest="train", action="store_false",
                        help="only export, evaluate and plot existing runs")
    parser.add_argument("--last", action="store_true", help="ship the last checkpoint, not the best")
    cluster.add_ray_flag(parser, "the tasks (in dependency waves)")
    args = parser.parse_args(argv)
    tasks = args.tasks or available()
    if args.train:
        for task in list(tasks):
            reason = missing_reward_model(task)
            if reason and args.tasks:
                parser.error(reason)
            if reason:
                print(f"skipped: {reason}", file=sys.stderr, flush=True)
                tasks.remove(task)
    unknown = [t for t in tasks if t not in SCRIPTED and not (BASELINES_DIR / t / "config.yaml").is_file()]
    if unknown:  # before anything starts (a Ray task would take SystemExit for its worker's end)
        parser.error(f"no baseline config for {', '.join(unknown)}; known: {available()}")
    for wave in waves(tasks):
        calls = [{"task": t, "runs": args.runs, "episodes": args.episodes, "train": args.train,
                  "last": args.last} for t in wave]
        cluster.run_calls(build, calls, args.ray, on_result=lambda _, m: print(
            json.dumps({k: m[k] for k in ("task", "train_wall_s")}), flush=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
