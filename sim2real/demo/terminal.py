"""The demo's terminal output, whole whether or not a person is watching.

On a terminal: rich's spinner for progress and a rich table. Piped (``make demo | tee
demo.log``, CI): rich would wrap every line at 80 columns and cut table cells to
``deadli…``; there each progress step and each table row is one plain line instead.
Progress and node logs go to stderr, the results to stdout.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator, Sequence
from typing import Any, TextIO


class Terminal:
    def __init__(self, out: TextIO | None = None, err: TextIO | None = None) -> None:
        self.out = out or sys.stdout
        self.err = err or sys.stderr
        self._status: Any = None

    def _tty(self, stream: TextIO) -> bool:
        isatty = getattr(stream, "isatty", None)
        return bool(isatty and isatty())

    @contextlib.contextmanager
    def progress(self, text: str) -> Iterator[Terminal]:
        """A spinner with ``text`` on a terminal (:meth:`step` updates it), else plain lines."""
        if not self._tty(self.err):
            self.step(text)
            yield self
            return
        from rich.console import Console

        with Console(file=self.err).status(text) as status:
            self._status = status
            try:
                yield self
            finally:
                self._status = None

    def step(self, text: str) -> None:
        if self._status is not None:
            self._status.update(text)
        else:
            self._line(self.err, text)

    def log(self, line: str) -> None:
        """A line of the nodes' logs (above the spinner on a terminal)."""
        if self._status is not None:
            self._status.console.print(line, markup=False, highlight=False, soft_wrap=True)
        else:
            self._line(self.err, line)

    def say(self, line: str) -> None:
        """A result line (stdout)."""
        self._line(self.out, line)

    def table(self, title: str, headers: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
        """A rich table on a terminal; piped, a title line, a header line and one line per
        row, cells separated by `` | `` and never cut."""
        if self._tty(self.out):
            from rich.console import Console
            from rich.table import Table

            table = Table(title=title)
            for header in headers:
                table.add_column(header)
            for row in rows:
                table.add_row(*row)
            Console(file=self.out).print(table)
            return
        widths = [max(len(str(c)) for c in column) for column in zip(headers, *rows, strict=True)]
        self._line(self.out, title)
        for row in (headers, *rows):
            self._line(self.out, " | ".join(str(c).ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())

    @staticmethod
    def _line(stream: TextIO, text: str) -> None:
        stream.write(text + "\n")
        stream.flush()
