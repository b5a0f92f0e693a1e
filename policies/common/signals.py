"""Ending long-running loops cleanly on SIGINT/SIGTERM."""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Callable, Iterator


@contextlib.contextmanager
def stop_on_signals(request_stop: Callable[[], None]) -> Iterator[None]:
    """While inside, SIGINT and SIGTERM call ``request_stop`` (the loop finishes its step,
    flushes and checkpoints) instead of raising mid-step; the previous handlers come back
    on exit. Off the main thread (where Python delivers no signals) it changes nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    for s in previous:
        signal.signal(s, lambda *_: request_stop())
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
