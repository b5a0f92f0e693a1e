"""The main job: the shipped policies on every robot through the ROS 2 graph, with a report.

For the arm, the quadruped and the drone in turn, runs sim bridge -> policy ->
safety filter -> sim bridge over DDS on loopback for a fixed time with
randomized targets and commands, then the same graph against each robot's protocol
emulator; each run is a `sim2real deploy` process. Prints per run: what it ran, the
pre-flight check's verdict (emulated robots), the task verdict, whether the host kept
real time (deadline misses, watchdog and deadman trips, simulation speed), safety-filter
interventions and latency p50/p99; the nodes' repeated log lines are counted per cause
and second, not printed one by one. Exits 1 when a robot failed its task, with one line
per failed run. Writes OUT/report.md with plots (PNG), a short video (MP4) per robot
replayed from the MCAP rosbag2 of each run, and each shipped policy's robustness curves
with its transfer ratio and intervals (`sim2real robustness` at --transfer-episodes per point).

`--classical` instead runs every robot's tasks in simulation under classical
controllers (operational-space reaching, PD stand, cascaded PID), no ROS.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from sim2real.commands.output import add_json_flag, emit_json


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
    parser.add_argument("--domain-id", type=int, default=None,
                        help="DDS domain of the first run; each later run takes the next "
                             "(default: picked from the process id)")
    parser.add_argument("--fault", action="append", default=[], metavar="KEY=VALUE",
                        help="a protocol fault for every emulated robot (as `sim2real deploy --fault`), to watch "
                             "the pre-flight check and the demo's verdict catch it")
    add_json_flag(parser)


def run(args: argparse.Namespace) -> int:
    args.out.mkdir(parents=True, exist_ok=True)
    return _run_classical(args) if args.classical else _run_ros(args)


def _run_ros(args: argparse.Namespace) -> int:
    # DDS stays on this machine whatever the caller's environment says.
    os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"
    from sim2real.baselines import BASELINES_DIR
    from sim2real.commands.output import dumps, finite
    from sim2real.demo.ros_demo import CONFINED, ROBOTS, RobotRun, domain_for, run_emulated, run_robot
    from sim2real.demo.ros_report import host_line, outcome_lines, write_report
    from sim2real.demo.terminal import Terminal
    from sim2real.demo.transfer import run_transfer

    terminal, env = Terminal(), dict(os.environ)
    runs: list[RobotRun] = []
    start, load_start = time.perf_counter(), os.getloadavg()
    robots: list[str] = list(args.robot or ROBOTS)
    video = not args.no_video

    def done(run: RobotRun) -> None:
        """Say at once how the run went, and what its nodes kept repeating."""
        runs.append(run)
        terminal.log(f"{run.label}: {run.verdict.status}: {run.verdict.reason}; the host {run.real_time.line()}")
        for cause in run.result.logs.repeated():
            terminal.log(f"{run.label}: repeated: {cause.describe()}")

    with terminal.progress("deploying") as progress:
        for i, robot in enumerate(robots):
            progress.step(f"{robot}: sim bridge -> policy -> safety filter over DDS ({args.seconds:g} s)")
            done(run_robot(robot, domain_for(i, args.domain_id), args.seconds, args.out, args.seed, video, terminal,
                           env))
        robot, task, name = CONFINED
        if robot in robots:  # the hierarchy: planner -> path -> the learned follower, through the same graph
            progress.step(f"{name}: planner -> policy -> safety filter over DDS ({args.seconds:g} s)")
            done(run_robot(robot, domain_for(len(ROBOTS), args.domain_id), args.seconds, args.out, args.seed, video,
                           terminal, env, policy=str(BASELINES_DIR / task), name=name))
        for i, robot in enumerate([] if args.no_emulators else robots):
            progress.step(f"{robot}: backend:=real against its protocol emulator ({args.seconds:g} s)")
            done(run_emulated(robot, domain_for(len(ROBOTS) + 1 + i, args.domain_id), args.seconds, args.seed,
                              terminal, env, tuple(args.fault)))
        transfer = (run_transfer(args.out, robots, args.transfer_episodes,
                                 on_point=lambda label: progress.step(f"transfer evidence: {label}"))
                    if args.transfer_episodes > 0 else [])
    seconds = time.perf_counter() - start
    host = host_line(load_start, os.getloadavg())
    report = write_report(args.out, runs, seconds, host, transfer, args.transfer_episodes)
    outcome = outcome_lines(runs)
    failed = [r for r in runs if r.verdict.status == "FAIL"]
    summary = finite({
        "demo": "ros2",
        "seconds": round(seconds, 1),
        "host": host,
        "report": str(report),
        "result": "FAIL" if failed else "PASS",
        "failed": [r.failure_line() for r in failed],
        "robots": {r.label: r.summary for r in runs if r.backend == "sim"},
        "emulated": {r.robot: r.summary for r in runs if r.backend != "sim"},
        "runs": [r.as_dict() for r in runs],
        "transfer_ratio": {t.policy: t.study["transfer_ratio"] for t in transfer},
    })
    (args.out / "summary.json").write_text(dumps(summary) + "\n")
    if args.json:
        emit_json(summary)
        for line in outcome:
            print(line, file=sys.stderr)
        return 1 if failed else 0
    rows = [run.row() for run in runs]
    terminal.table(
        "sim2real demo: shipped policies through the ROS 2 graph (DDS on loopback)",
        ["run", "backend", "pre-flight", "result", "host real time", "filter interventions", "p50 ms", "p99 ms",
         "deadline misses"],
        [[r["robot"], r["backend"], r["preflight"], r["result"], r["real_time"], r["interventions"],
          _ms(r["p50_ms"]), _ms(r["p99_ms"]), str(r["deadline_misses"])] for r in rows],
    )
    for line in outcome:
        terminal.say(line)
    terminal.say(f"host: {host}")
    terminal.say(f"report: {report}")
    return 1 if failed else 0


def _ms(value: object) -> str:
    return f"{value:.2f}" if isinstance(value, (int, float)) else "-"


def _run_classical(args: argparse.Namespace) -> int:
    from sim2real.commands.output import dumps, finite
    from sim2real.demo.classical import DEMO_CASES, run_case
    from sim2real.demo.report import write_report
    from sim2real.demo.terminal import Terminal

    terminal = Terminal()
    results = []
    start = time.perf_counter()
    with terminal.progress("classical controllers") as progress:
        for case in DEMO_CASES:
            title = f"{case.robot} {case.task} ({case.controller_name})"
            done = [0]

            def advance(title: str = title, done: list[int] = done) -> None:
                done[0] += 1
                progress.step(f"{title}: {done[0]}/{args.episodes} episodes")

            progress.step(f"{title}: 0/{args.episodes} episodes")
            results.append(run_case(case, args.episodes, args.seed, args.out, video=not args.no_video,
                                    on_episode=advance))
    summary = finite({
        "demo": "classical",
        "seconds": round(time.perf_counter() - start, 1),
        "report": str(args.out / "report.md"),
        "cases": [r.as_dict() for r in results],
    })
    write_report(args.out, results, summary)
    (args.out / "summary.json").write_text(dumps(summary) + "\n")
    if args.json:
        emit_json(summary)
        return 0
    terminal.table("sim2real demo: classical controllers in simulation (training randomization)",
                   ["robot", "task", "controller", "success", "key metric"],
                   [[r.robot, r.task, r.controller, f"{r.successes}/{r.episodes}", r.key_metric_text()]
                    for r in results])
    terminal.say(f"report: {args.out / 'report.md'}")
    return 0
