"""The nodes' log lines of one demo run, aggregated by cause.

A loaded host makes the nodes repeat themselves: the safety filter's watchdog enters
and leaves its safe action every few hundred milliseconds and says so each time, and
hundreds of such lines bury the one that matters. :class:`NodeLogDigest` reads the
lines a ``sim2real deploy`` process writes (rcutils' ``[LEVEL] [stamp] [node]: message``,
a message's further lines indented by nothing, and anything else the process prints),
shows the first line of each *cause* (the message with its numbers replaced by ``#``)
as it comes, counts the repeats per second, and gives the counts at the end.
"""

from __future__ import annotations

import re
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

ROS_LINE = re.compile(r"^\[(DEBUG|INFO|WARN|ERROR|FATAL)\] \[(\d+(?:\.\d+)?)\] \[([^\]]*)\]: ?(.*)$")
NUMBER = re.compile(r"(?<![\w.])[-+]?\d+(?:\.\d+)?(?:e[-+]?\d+)?(?![\w])")
TABLE_ROW = re.compile(r"^\S.*\S {2,}\S")
"""A row of a table a node logs under a line ending in a colon: columns two spaces apart."""
PREFLIGHT = "pre-flight check:"
"""The hardware bridge's first line of its pre-flight table (docs/hardware.md)."""


def cause_of(message: str) -> str:
    """The message with its numbers as ``#``: ``command stale for 0.047 s`` and ``... 0.052 s``
    are one cause."""
    return NUMBER.sub("#", message)


@dataclass
class Cause:
    level: str
    node: str
    """The node's logger name; ``""`` for lines that are not a node's log (the deploy
    process itself, Python warnings, a traceback)."""
    pattern: str
    first: str
    """The first message of this cause, in full (all its lines)."""
    count: int = 0
    per_second: Counter[int] = field(default_factory=Counter)
    """Occurrences in each second of the run (second 0: its first line)."""

    @property
    def peak_per_second(self) -> int:
        return max(self.per_second.values(), default=0)

    def as_dict(self) -> dict[str, Any]:
        last = max(self.per_second, default=0)
        return {"level": self.level, "node": self.node, "cause": self.pattern, "count": self.count,
                "peak_per_second": self.peak_per_second,
                "per_second": [self.per_second.get(s, 0) for s in range(last + 1)]}

    def describe(self) -> str:
        """One line: the cause, how often, and its count in each second of the run."""
        seconds = self.as_dict()["per_second"]
        who = f"[{self.level}] {self.node}: " if self.node else ""
        return (f"{who}{self.pattern} -- {self.count} times, at most {self.peak_per_second} in one second "
                f"(per second from the start: {' '.join(str(n) for n in seconds)})")


class NodeLogDigest:
    """Feed it the run's lines (:meth:`feed`, thread-safe); ``echo`` gets each cause's first
    line as it arrives (with its further lines), never a repeat."""

    def __init__(self, echo: Callable[[str], None] = lambda _: None, start: float | None = None) -> None:
        self.echo = echo
        self.start = start
        """Second 0 of the counts (default: the first line's time)."""
        self.causes: dict[tuple[str, str, str], Cause] = {}
        self.preflight_tables: list[str] = []
        """Every pre-flight table the hardware bridge logged (one per verdict it reached)."""
        self.tail: list[str] = []
        """The run's last lines, as they came (a failed run's reason is in them)."""
        self._current: Cause | None = None
        self._echoing = False
        self._message: list[str] = []
        self._lock = threading.Lock()

    def feed(self, line: str) -> None:
        line = line.rstrip("\n")
        if not line.strip():
            return
        with self._lock:
            self.tail = [*self.tail[-19:], line]
            match = ROS_LINE.match(line)
            if match is None and self._announces_lines() and TABLE_ROW.match(line):
                self._continue(line)  # a further line of a node's multi-line message
                return
            self._finish_message()
            if match is None:
                level, stamp, node, message = "", time.time(), "", line
            else:
                level, stamp, node, message = match[1], float(match[2]), match[3], match[4]
            key = (level, node, cause_of(message))
            cause = self.causes.get(key)
            new = cause is None
            if cause is None:
                cause = self.causes[key] = Cause(level, node, key[2], message)
            if self.start is None:
                self.start = stamp
            cause.count += 1
            cause.per_second[max(0, int(stamp - self.start))] += 1
            self._current, self._echoing, self._message = cause, new, [message]
            if new:
                self.echo(line)

    def _announces_lines(self) -> bool:
        """The node's message being read ends its first line with a colon (``pre-flight
        check:``): the table rows without a log prefix that follow are its own. Any other
        line without a prefix is the process's (a warning, a traceback)."""
        return self._current is not None and bool(self._current.node) and self._message[0].endswith(":")

    def _continue(self, line: str) -> None:
        self._message.append(line)
        if self._echoing:
            self.echo(line)

    def _finish_message(self) -> None:
        """Keep what a finished multi-line message said where the report needs it."""
        cause, lines = self._current, self._message
        if cause is not None and lines and lines[0].startswith(PREFLIGHT) and len(lines) > 1:
            self.preflight_tables.append("\n".join(lines[1:]))
        if cause is not None and self._echoing and len(lines) > 1:
            cause.first = "\n".join(lines)
        self._current, self._message = None, []

    def close(self) -> None:
        with self._lock:
            self._finish_message()

    def repeated(self) -> list[Cause]:
        """Causes seen more than once, most frequent first."""
        return sorted((c for c in self.causes.values() if c.count > 1), key=lambda c: -c.count)

    def count(self, node: str, predicate: Callable[[str], bool]) -> int:
        """How often ``node`` logged a message whose cause satisfies ``predicate``."""
        return sum(c.count for c in self.causes.values() if c.node == node and predicate(c.pattern))

    def as_list(self) -> list[dict[str, Any]]:
        return [c.as_dict() for c in sorted(self.causes.values(), key=lambda c: -c.count)]
