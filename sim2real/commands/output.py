"""Shared output conventions: ``--json`` prints exactly one JSON object on stdout;
human-readable tables and progress go to the terminal (progress on stderr)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

import numpy as np
from rich.console import Console

console = Console(stderr=True)
"""Progress and logs: stderr, so stdout stays clean for --json."""
stdout = Console()


def add_json_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print one JSON object on stdout instead of tables")


def _default(o: Any) -> Any:
    if isinstance(o, np.generic):
        return o.item()
    if isinstance(o, np.ndarray):
        return o.tolist()
    raise TypeError(f"not JSON serialisable: {type(o)}")


def emit_json(obj: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(obj, default=_default) + "\n")
    sys.stdout.flush()
