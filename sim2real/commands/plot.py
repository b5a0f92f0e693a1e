"""Plot learning curves (eval success and return vs env steps and wall-clock) of one or more runs.

Example:
  sim2real plot runs/reach-ppo runs/reach-sac --out curves.png
"""

from __future__ import annotations

import argparse
from pathlib import Path

from sim2real.commands.output import add_json_flag, emit_json, stdout


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("runs", nargs="+", type=Path, metavar="RUN", help="run folders (overlaid)")
    parser.add_argument("--out", type=Path, required=True, help="image file (.png, .svg or .pdf)")
    parser.add_argument("--title", help="figure title")
    add_json_flag(parser)


def run(args: argparse.Namespace) -> int:
    from sim2real.policies.plot import load_curves, plot_runs

    path = plot_runs(args.runs, args.out, args.title)
    if args.json:
        curves = load_curves(args.runs)
        emit_json({"out": str(path), "runs": {k: len(v) for k, v in curves.items()}})
        return 0
    stdout.print(f"wrote {path}")
    return 0
