"""Recorded bags: `sim2real bag recover PATH` makes a bag whose recorder was killed readable.

A recorder stopped by SIGINT or SIGTERM closes its bag itself. One killed outright
(kill -9, a power cut, a full disk) leaves an MCAP file without its summary and no
metadata.yaml, which neither rosbags nor `ros2 bag` open. `recover` reads every
complete record up to the tear (the recorder writes a complete chunk every
`flush_period`, 1 s by default) and writes those messages into a new rosbag2 folder,
PATH-recovered unless --output says otherwise. It prints the messages recovered per
topic; --json prints them as one JSON object.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from sim2real.commands.output import add_json_flag, console, emit_json, stdout


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    recover = sub.add_parser("recover", help="rewrite the readable part of a killed recording as a new bag")
    recover.add_argument("path", type=Path, help="the rosbag2 folder (or its .mcap file)")
    recover.add_argument("--output", type=Path, default=None, help="new rosbag2 folder (default: PATH-recovered)")
    add_json_flag(recover)


def run(args: argparse.Namespace) -> int:
    from sim2real.ros_nodes.bag_recovery import RecoveryError, recover

    if not args.path.exists():
        console.print(f"sim2real bag recover: {args.path} does not exist")
        return 2
    try:
        report = recover(args.path, args.output)
    except RecoveryError as exc:
        console.print(f"sim2real bag recover: {exc}")
        return 1
    summary = {"source": str(report.source), "output": str(report.output), "messages": report.messages,
               "total": sum(report.messages.values()), "chunks": report.chunks, "complete": report.complete,
               "tail_bytes_lost": report.tail_bytes, "skipped_topics": report.skipped_topics}
    if args.json:
        emit_json(summary)
        return 0
    state = ("complete" if report.complete
             else f"unfinished; {report.tail_bytes} bytes after the last complete record lost")
    stdout.print(f"{report.source} ({state}, {report.chunks} complete chunks) -> {report.output}")
    for topic, n in sorted(report.messages.items()):
        stdout.print(f"  {topic}: {n} messages")
    for topic in report.skipped_topics:
        stdout.print(f"  {topic}: skipped (message type unknown)")
    return 0
