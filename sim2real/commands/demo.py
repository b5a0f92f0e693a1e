"""The main job: the shipped policies on every robot through the ROS 2 graph, with a report.

For the arm, the quadruped and the drone in turn, runs sim bridge -> policy ->
safety filter -> sim bridge over DDS on loopback for a fixed time with
randomized targets and commands, then prints per robot: task success,
safety-filter interventions, control-loop latency p50/p99 and deadline misses.
Writes OUT/report.md with plots (PNG), a short video (MP4) per robot from the
bridge's camera topic, the MCAP rosbag2 of each run, and each shipped policy's
robustness curves with its transfer ratio (`sim2real robustness` at
--transfer-episodes per point).

`--classical` instead runs every robot's tasks in simulation under classical
controllers (operational-space reaching, PD stand, cascaded PID), no ROS.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

from sim2real.commands.output import add_json_flag, console, emit_json, stdout


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", type=Path, default=Path("reports/demo"), help="report folder")
    parser.add_argument("--seconds", type=float, default=25.0, help="deployment time per robot (ROS demo)")
    parser.add_argument(
        "--robot", action="append", choices=["arm", "quadruped", "drone"], help="robot(s) to deploy (default: all)"
    )
    parser.add_argument("--classical", action="store_true", help="classical controllers in simulation, no ROS")
    parser.add_argument("--episodes", type=int, default=4, help="episodes per task (--classical)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-video", action="store_true", help="skip the MP4s")
    parser.add_argument("--no-emulators", action="store_true",
                        help="skip the backend:=real runs against each robot's protocol emulator")
    parser.add_argument("--transfer-episodes", type=int, default=8,
                        help="episodes per point of each shipped policy's robustness curves (0: skip them)")
    add_json_flag(parser)


def run(args: argparse.Namespace) -> int:
    args.out.mkdir(parents=True, exist_ok=True)
    return _run_classical(args) if args.classical else _run_ros(args)


def _run_ros(args: argparse.Namespace) -> int:
    # DDS stays on this machine whatever the caller's environment says.
    os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"
    from rich.table import Table

    from sim2real.baselines import BASELINES_DIR
    from sim2real.demo.ros_demo import CONFINED, ROBOTS, run_emulated, run_robot, write_report
    from sim2real.demo.transfer import run_transfer

    runs, start = [], time.perf_counter()
    robots = args.robot or ROBOTS
    with console.status("deploying") as status:
        for i, robot in enumerate(robots):
            status.update(f"{robot}: sim bridge -> policy -> safety filter over DDS ({args.seconds:.0f} s)")
            runs.append(run_robot(robot, i, args.seconds, args.out, args.seed, video=not args.no_video))
        robot, task, name = CONFINED
        if robot in robots:  # the hierarchy: planner -> path -> the learned follower, through the same graph
            status.update(f"{name}: planner -> policy -> safety filter over DDS ({args.seconds:.0f} s)")
            runs.append(run_robot(robot, len(robots), args.seconds, args.out, args.seed, video=not args.no_video,
                                  policy=str(BASELINES_DIR / task), name=name))
        for i, robot in enumerate([] if args.no_emulators else args.robot or ROBOTS):
            status.update(f"{robot}: backend:=real against its protocol emulator ({args.seconds:.0f} s)")
            runs.append(run_emulated(robot, i, args.seconds, args.seed))
        transfer = (run_transfer(args.out, list(robots), args.transfer_episodes,
                                 on_point=lambda label: status.update(f"transfer evidence: {label}"))
                    if args.transfer_episodes > 0 else [])
    seconds = time.perf_counter() - start
    report = write_report(args.out, runs, seconds, transfer, args.transfer_episodes)
    summary = {
        "demo": "ros2",
        "seconds": round(seconds, 1),
        "report": str(report),
        "robots": {r.label: r.summary for r in runs if r.backend == "sim"},
        "emulated": {r.robot: r.summary for r in runs if r.backend != "sim"},
        "transfer_ratio": {t.policy: t.study["transfer_ratio"] for t in transfer},
    }
    (args.out / "summary.json").write_text(json.dumps(summary, indent=2, default=float))
    if args.json:
        emit_json(summary)
        return 0
    table = Table(title="sim2real demo: shipped policies through the ROS 2 graph (DDS on loopback)")
    for col in ("robot", "backend", "policy", "success", "filter interventions", "p50 ms", "p99 ms",
                "deadline misses"):
        table.add_column(col)
    for r in (run.row() for run in runs):
        table.add_row(
            r["robot"],
            r["backend"],
            str(r["policy"]),
            r["success"],
            r["interventions"],
            f"{r['p50_ms']:.2f}",
            f"{r['p99_ms']:.2f}",
            str(r["deadline_misses"]),
        )
    stdout.print(table)
    stdout.print(f"report: {report}")
    return 0


def _run_classical(args: argparse.Namespace) -> int:
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
    from rich.table import Table

    from sim2real.demo.classical import DEMO_CASES, run_case
    from sim2real.demo.report import write_report

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
    table = Table(title="sim2real demo: classical controllers in simulation (training randomization)")
    for col in ("robot", "task", "controller", "success", "key metric"):
        table.add_column(col)
    for r in results:
        table.add_row(r.robot, r.task, r.controller, f"{r.successes}/{r.episodes}", r.key_metric_text())
    stdout.print(table)
    stdout.print(f"report: {args.out / 'report.md'}")
    return 0
