"""The ROS 2 demo's report: what each row ran, what it showed, and whether the host kept up."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from sim2real.commands.output import dumps
from sim2real.demo import verdict
from sim2real.demo.ros_demo import RobotRun
from sim2real.demo.transfer import report_lines


def host_line(load_start: tuple[float, ...], load_end: tuple[float, ...]) -> str:
    cpus = os.cpu_count() or 1
    return (f"{cpus} CPUs; load average (1, 5, 15 min) {', '.join(f'{v:.1f}' for v in load_start)} at the start, "
            f"{', '.join(f'{v:.1f}' for v in load_end)} at the end")


def outcome_lines(runs: list[RobotRun]) -> list[str]:
    """The demo's result and the host's real-time verdict, a line each (terminal and report)."""
    failed = [r for r in runs if r.verdict.status == "FAIL"]
    unjudged = [r for r in runs if r.verdict.status == "NOT JUDGED"]
    late = [r for r in runs if not r.real_time.kept]
    lines = [f"result: {len(failed)} of {len(runs)} runs FAILED their task" if failed else
             f"result: every judged run did its task ({len(runs) - len(unjudged)} of {len(runs)} judged)"]
    lines += [r.failure_line() for r in failed]
    lines += [f"NOT JUDGED {r.label} ({r.backend}): {r.verdict.reason}" for r in unjudged]
    lines.append(f"host real time: NOT kept in {len(late)} of {len(runs)} runs "
                 f"({', '.join(r.label for r in late)}): figures from a host that cannot keep the control "
                 "loops' deadlines say more about the host than about the policies" if late else
                 f"host real time: kept in all {len(runs)} runs")
    return lines


def write_report(out: Path, runs: list[RobotRun], seconds: float, host: str, transfer: list[Any] | None = None,
                 transfer_episodes: int = 0) -> Path:
    lines = [
        "# sim2real demo: shipped policies through the ROS 2 graph",
        "",
        f"Took {seconds:.0f} s on a host with {host}.",
        "",
        *[f"**{ln}**" if i == 0 else f"- {ln}" for i, ln in enumerate(outcome_lines(runs))],
        "",
        "Each row is one `sim2real deploy` process (its command is in the row's section): policy (ONNX, "
        "onnxruntime) -> safety filter -> the sim bridge, or, for rows marked `real`, the hardware bridge "
        "speaking the robot's own protocol (ros2_control, Unitree's low-level DDS, CRTP over cflib) to that "
        "protocol's emulator, which enables the robot only if its pre-flight check passes. DDS stays on "
        "loopback (`ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST`, a private domain per run); simulated rows are "
        "recorded as MCAP rosbag2 (`bags/<robot>/`).",
        "",
        f"How each run is judged (`sim2real/demo/verdict.py`): a task FAILS below {verdict.MIN_SUCCESS_RATE:.0%} "
        "of its finished episodes, with no episode ended in a window long enough for one, with a fall, or on an "
        "emulated robot whose pre-flight check failed, that received no command or that its deadman or watchdog "
        "put in its safe state; a window shorter than one episode, or one in which the host simulated less than one "
        "episode, is NOT JUDGED. The host kept real time when "
        f"at most {verdict.MAX_MISSED_FRACTION:.0%} of the control ticks missed their deadline, the safety "
        "filter's watchdog never tripped, no deadman tripped, the simulation kept at least "
        f"{verdict.MIN_SIM_SPEED:.0%} of real time and the emulator's loop kept its ticks.",
        "",
        "| run | backend | what ran | pre-flight check | result | host real time | filter interventions | "
        "safe-action steps | state->command p50 / p99 (ms) | deadline misses |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in (run.row() for run in runs):
        lines.append(f"| {r['robot']} | {r['backend']} | {r['ran']} | {r['preflight']} | {r['result']} | "
                     f"{r['real_time']} | {r['interventions']} | {r['safe_action_steps']} | "
                     f"{_ms(r['p50_ms'])} / {_ms(r['p99_ms'])} | {r['deadline_misses']} |")
    for run in runs:
        lines += _section(run)
    lines += report_lines(transfer or [], transfer_episodes)
    path = out / "report.md"
    path.write_text("\n".join(lines) + "\n")
    return path


def _ms(value: Any) -> str:
    return f"{value:.2f}" if isinstance(value, (int, float)) else "-"


def _section(run: RobotRun) -> list[str]:
    lines = ["", f"## {run.label} ({run.backend})", "", f"Ran `{run.command}`: {run.ran()}.", "",
             f"- result: **{run.verdict.status}**: {run.verdict.reason}",
             f"- host: {run.real_time.line()}"]
    if run.result.error:
        lines.append(f"- the run failed: `{run.result.error}`")
    preflight = verdict.preflight_text(run.summary)
    if preflight:
        hw = run.summary.get("hardware") or {}
        lines.append(f"- pre-flight check: {preflight}; {int(hw.get('commands_sent') or 0)} filtered commands "
                     f"reached the robot, the robot ended the run {hw.get('phase', '?')}"
                     + (f" ({hw['reason']})" if hw.get("reason") else ""))
        for table in run.result.logs.preflight_tables:
            lines += ["", "```text", table, "```"]
        if not run.result.logs.preflight_tables and run.summary.get("executor") == "one process per node":
            lines.append("- the checks' tables are in the hardware bridge's own log: its graph ran one process "
                         "per node")
    repeated = run.result.logs.repeated()
    if repeated:
        lines += ["", "The nodes' repeated log lines (numbers as `#`), counted per second from the run's first line:",
                  "",
                  "| node | level | cause | count | at most per second | per second |", "|---|---|---|---|---|---|"]
        for c in repeated:
            per_second = " ".join(str(n) for n in c.as_dict()["per_second"])
            lines.append(f"| {c.node or '-'} | {c.level or '-'} | `{c.pattern}` | {c.count} | {c.peak_per_second} | "
                         f"{per_second} |")
    lines.append("")
    if run.video:
        lines += [f"![{run.label}]({run.label}.png)", "",
                  f"Video (the bag's states replayed): [{run.video}]({run.video})", ""]
    if run.plot:
        lines += [f"![commands]({run.plot})", "", f"Command elements plotted: {', '.join(run.channels)}.", ""]
    shown = {k: v for k, v in run.as_dict().items() if k != "node_log"}  # the table above; summary.json has it
    lines += ["```json", dumps({**run.summary, "demo": shown}), "```"]
    return lines
