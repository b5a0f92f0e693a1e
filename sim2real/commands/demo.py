"""The main job: every robot's tasks under classical controllers, with a report.

Runs operational-space reaching on the arm, a PD stand on the quadruped and a
cascaded PID on the drone, in simulation with training randomization, and writes
``OUT/report.md`` with success rates, task metrics, rendered frames (PNG) and a
short video (MP4) per robot.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from sim2real.commands.output import add_json_flag, console, emit_json, stdout


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", type=Path, default=Path("reports/demo"), help="report folder")
    parser.add_argument("--episodes", type=int, default=4, help="episodes per task")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-video", action="store_true", help="skip the MP4s (frames are still written)")
    add_json_flag(parser)


def run(args: argparse.Namespace) -> int:
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    from sim2real.demo.classical import DEMO_CASES, run_case
    from sim2real.demo.report import write_report

    args.out.mkdir(parents=True, exist_ok=True)
    results = []
    start = time.perf_counter()
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        TextColumn("{task.completed}/{task.total} episodes"),
        TimeElapsedColumn(),
        console=console,
    ) as progress:
        for case in DEMO_CASES:
            bar = progress.add_task(f"{case.robot:9s} {case.task} ({case.controller_name})", total=args.episodes)
            results.append(
                run_case(
                    case,
                    args.episodes,
                    args.seed,
                    args.out,
                    video=not args.no_video,
                    on_episode=lambda bar=bar: progress.advance(bar),
                )
            )
    summary = {
        "demo": "classical",
        "seconds": round(time.perf_counter() - start, 1),
        "report": str(args.out / "report.md"),
        "cases": [r.as_dict() for r in results],
    }
    write_report(args.out, results, summary)
    (args.out / "summary.json").write_text(json.dumps(summary, indent=2))
    if args.json:
        emit_json(summary)
        return 0
    from rich.table import Table

    table = Table(title="sim2real demo: classical controllers in simulation (training randomization)")
    for col in ("robot", "task", "controller", "success", "key metric"):
        table.add_column(col)
    for r in results:
        table.add_row(r.robot, r.task, r.controller, f"{r.successes}/{r.episodes}", r.key_metric_text())
    stdout.print(table)
    stdout.print(f"report: {args.out / 'report.md'}")
    return 0
