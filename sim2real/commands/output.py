"""Shared output conventions: ``--json`` prints exactly one JSON object on stdout, in
standard JSON (a figure that was not measured is ``null``, never ``NaN``: ``jq`` and
browsers refuse those); human-readable tables and progress go to the terminal
(progress on stderr), and stay whole when piped (no wrapping at 80 columns)."""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import sys
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
from rich.console import Console, ConsoleDimensions

PIPED_WIDTH = 240
"""Columns a table may use when the output is not a terminal (rich would take 80 and cut
cells to ``deadli…``)."""


class _StreamConsole(Console):
    """A console on whatever ``sys.stdout``/``sys.stderr`` is when it prints (a console
    bound to the stream at import would keep writing to a replaced one: pytest's capture,
    a caller's redirect), as wide as the terminal, or ``PIPED_WIDTH`` when piped."""

    @property
    def size(self) -> ConsoleDimensions:
        dims = super().size
        return dims if self.is_terminal else ConsoleDimensions(PIPED_WIDTH, dims.height)

    @size.setter
    def size(self, new_size: tuple[int, int]) -> None:
        setter = Console.size.fset
        assert setter is not None
        setter(self, new_size)


console = _StreamConsole(stderr=True)
"""Progress and logs: stderr, so stdout stays clean for --json."""
stdout = _StreamConsole()


@contextlib.contextmanager
def status_line(text: str) -> Iterator[Callable[[str], None]]:
    """A one-line status on stderr (on a terminal; piped, nothing), redrawn by the caller
    when its text changes: yields the update function. rich's ``status`` spinner redraws
    from a thread of its own 12.5 times a second; in a process that runs real-time loops
    that normal-priority thread holds the interpreter lock the loops need, and a CPU-bound
    competitor that preempts it there stalls them."""
    if not console.is_terminal:
        yield lambda _text: None
        return
    from rich.live import Live
    from rich.text import Text

    with Live(Text(text), console=console, auto_refresh=False, transient=True) as live:
        shown = [text]

        def update(new: str) -> None:
            if new != shown[0]:
                shown[0] = new
                live.update(Text(new), refresh=True)

        yield update


def add_json_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print one JSON object on stdout instead of tables")


def finite(obj: Any) -> Any:
    """``obj`` with every non-finite float as ``None`` (numpy scalars and arrays as Python's)."""
    if isinstance(obj, dict):
        return {str(k): finite(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [finite(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return finite(obj.tolist())
    if isinstance(obj, np.generic):
        return finite(obj.item())
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj


def dumps(obj: Any, indent: int | None = 2) -> str:
    """Standard JSON of ``obj`` (non-finite floats as ``null``; anything else that JSON
    cannot hold is an error, not a string)."""
    return json.dumps(finite(obj), indent=indent, allow_nan=False)


def emit_json(obj: dict[str, Any]) -> None:
    sys.stdout.write(dumps(obj, indent=None) + "\n")
    sys.stdout.flush()
