"""List the registered tasks: robot, action modes, control rate, observation and action sizes."""

from __future__ import annotations

import argparse
import dataclasses

from sim2real.commands.output import add_json_flag, emit_json, stdout


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--robot", choices=["arm", "quadruped", "drone"], help="only this robot's tasks")
    add_json_flag(parser)


def run(args: argparse.Namespace) -> int:
    from rich.table import Table

    from sim2real.sim import REGISTRY

    infos = [REGISTRY.info(t) for t in REGISTRY if args.robot in (None, t.robot)]
    if args.json:
        emit_json({"tasks": [dataclasses.asdict(i) for i in infos]})
        return 0
    table = Table(title="sim2real tasks")
    for col in ("id", "robot", "action modes (action size)", "control Hz", "physics Hz", "obs size"):
        table.add_column(col)
    for i in infos:
        modes = ", ".join(f"{m} ({n})" for m, n in i.action_sizes.items())
        table.add_row(i.id, i.robot, modes, f"{i.control_hz:g}", f"{i.physics_hz:g}", str(i.obs_size))
    stdout.print(table)
    return 0
