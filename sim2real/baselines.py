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


def available() -> list[str]:
    """The shipped baselines, students (``algo: distill``) after the teachers they imitate."""
    configs = sorted(BASELINES_DIR.glob("*/config.yaml"))
    return [p.parent.name for p in sorted(configs, key=lambda p: "\nalgo: distill" in p.read_text())] + list(SCRIPTED)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m sim2real.baselines", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("tasks", nargs="*", help=f"tasks to rebuild (default: all of {available()})")
    parser.add_argument("--runs", type=Path, default=Path("runs/baselines"), help="where the training runs go")
    parser.add_argument("--episodes", type=int, default=100, help="evaluation episodes per randomization preset")
    parser.add_argument("--no-train", action="store_true", help="only export, evaluate and plot existing runs")
    parser.add_argument("--last", action="store_true", help="ship the last checkpoint, not the best")
    args = parser.parse_args(argv)
    for task in args.tasks or available():
        m = build(task, args.runs, args.episodes, train=not args.no_train, last=args.last)
        print(json.dumps({k: m[k] for k in ("task", "train_wall_s")}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
