"""Export a run's policy (best checkpoint, else last) as ONNX or TorchScript with a metadata JSON.

The graph includes observation normalization and outputs the deterministic
action clipped to [-1, 1]; the export is verified against torch (<= 1e-5).

Examples:
  sim2real export runs/reach-sac                    # runs/reach-sac/export/policy.onnx + policy.onnx.json
  sim2real export runs/reach-sac --format torchscript --out deploy/reach
"""

from __future__ import annotations

import argparse
from pathlib import Path

from sim2real.commands.output import add_json_flag, console, emit_json, stdout


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run", type=Path, help="run folder (or one of its checkpoint folders)")
    parser.add_argument("--format", choices=["onnx", "torchscript"], default="onnx")
    parser.add_argument("--out", type=Path, help="output folder (default: RUN/export)")
    parser.add_argument("--checkpoint", choices=["auto", "best", "last"], default="auto")
    add_json_flag(parser)


def run(args: argparse.Namespace) -> int:
    from sim2real.policies.export.exporter import export_policy

    with console.status(f"exporting {args.run} as {args.format}"):
        result = export_policy(args.run, args.format, args.out, args.checkpoint)
    m = result.metadata
    report = {
        "policy": str(result.policy_path),
        "metadata": str(result.metadata_path),
        "format": m["format"],
        "task": m["task"],
        "action_mode": m["action_mode"],
        "obs_size": m["observation"]["size"],
        "action_size": m["action"]["size"],
        "step": m["training"]["step"],
        "checkpoint": m["training"]["checkpoint"],
        "max_abs_diff": m["verification"]["max_abs_diff"],
    }
    if args.json:
        emit_json(report)
        return 0
    stdout.print(
        f"wrote {result.policy_path} and {result.metadata_path} ({m['task']}, {report['obs_size']} obs -> "
        f"{report['action_size']} actions, step {report['step']:,}, max diff vs torch {report['max_abs_diff']:.2g})"
    )
    return 0
