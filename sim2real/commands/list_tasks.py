"""List the registered tasks: robot, action modes, control rate, observation and action sizes."""

from __future__ import annotations

import argparse
import dataclasses

from sim2real.commands.output import add_json_flag, emit_json, stdout
from sim2real.robot_names import ROBOT_NAMES


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--robot", choices=ROBOT_NAMES, help="only this robot's tasks")
    add_json_flag(parser)


def run(args: argparse.Namespace) -> int:
    from rich.table import Table

    from sim2real.sim import REGISTRY

    infos = [REGISTRY.info(t) for t in REGISTRY if args.robot in (None, t.robot)]
    if args.json:
        emit_json({"tasks": [dataclasses.asdict(i) for i in infos]})
        return 0
    columns = ("id", "robot", "action modes (action size)", "control Hz", "physics Hz", "obs size")
    rows = [(i.id, i.robot, ", ".join(f"{m} ({n})" for m, n in i.action_sizes.items()), f"{i.control_hz:g}",
             f"{i.physics_hz:g}", str(i.obs_size)) for i in infos]
    if not stdout.is_terminal:  # piped or redirected: full ids, one task per line, tab-separated
        for row in (columns, *rows):
            print("\t".join(row))
        return 0
    table = Table(title="sim2real tasks")
    for col in columns:
        table.add_column(col)
    for row in rows:
        table.add_row(*row)
    stdout.print(table)
    return 0
