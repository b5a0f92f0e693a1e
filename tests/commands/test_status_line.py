"""The one-line status of commands that run real-time loops (deploy, the real-time
benches): redrawn from the caller's thread only when its text changes, never by a
refresh thread of its own, which would hold the loops' interpreter lock at normal
priority; nothing when stderr is piped."""

from __future__ import annotations

import io
import threading

import pytest
from rich.console import Console

from sim2real.commands import output


def test_on_a_terminal_it_redraws_on_change_without_a_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    screen = io.StringIO()
    monkeypatch.setenv("TERM", "xterm-256color")  # not a dumb terminal, where rich draws nothing
    monkeypatch.setattr(output, "console", Console(file=screen, force_terminal=True, stderr=True))
    threads = threading.active_count()
    with output.status_line("deploying arm") as show:
        assert threading.active_count() == threads
        for left in (3, 3, 2):
            show(f"arm: running: {left} s left")
        assert threading.active_count() == threads
    drawn = screen.getvalue()
    assert drawn.count("running: 3 s left") == 1, drawn  # drawn once, however often it is shown
    assert "running: 2 s left" in drawn


def test_piped_it_prints_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    screen = io.StringIO()
    monkeypatch.setattr(output, "console", Console(file=screen, force_terminal=False, stderr=True))
    with output.status_line("deploying arm") as show:
        show("arm: running: 3 s left")
    assert screen.getvalue() == ""
