"""Work a real-time loop hands off and never waits for: camera frames drawn from the
newest pose, by the sim bridge's live views and by an emulated cell's cameras.

One thread of its own, at normal scheduling, does the work on the newest item offered;
an item still waiting when a newer one comes is dropped and counted. The thread also
owns what ``setup`` makes and ``teardown`` releases (a GL context is bound to the thread
that made it).

Its nice value (Linux threads own one, inherited by the threads they start, such as
llvmpipe's) depends on the loop: where the loop cannot be real-time, the worker runs
:data:`NICENESS` lower than it, so the frames never take the loop's turn. Where the loop
is real-time it needs no such help, and a reniced worker would hurt it: the worker holds
Python's GIL between its C calls, and a nice-10 thread preempted while holding it waits
behind every CPU-bound competitor before it can let go. Measured
(``benchmarks/gil_neighbours.py``: a SCHED_FIFO 2 ms loop and a worker building
230 kB frames, 4 competitors on 2 cores, three 30 s runs each): at nice 10 the loop
stalled up to 39.8 ms, 44 ticks over 15 ms in one run; at nice 0, 0.9 ms at most.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable
from typing import Generic, TypeVar

from sim2real.hardware.realtime import EXECUTOR_PRIORITY, normal_scheduling, probe

T = TypeVar("T")

NICENESS = 10
"""How much lower the worker runs than a loop that cannot be real-time."""


def worker_niceness() -> int:
    """:data:`NICENESS` where this process's loops cannot be real-time, else 0 (see the module)."""
    return 0 if probe(EXECUTOR_PRIORITY).realtime else NICENESS


class NewestOnly(Generic[T]):
    """Args:
        name: The thread's name.
        handle: Does the work on one item (in the worker thread).
        on_error: Called with an exception ``handle`` raised; the worker goes on.
        setup: Run first in the worker thread (its first frame, its GL context).
        teardown: Run last in the worker thread.
        merge: ``(dropped, newer) -> newer`` when an item is dropped (what the newer one
            must carry over), or None.
        niceness: The worker's nice value (None: :func:`worker_niceness`; 0 where the work
            stands in for hardware that keeps its own time, such as an emulated cell's cameras).
    """

    def __init__(self, name: str, handle: Callable[[T], None], on_error: Callable[[Exception], None],
                 setup: Callable[[], None] | None = None, teardown: Callable[[], None] | None = None,
                 merge: Callable[[T, T], T] | None = None, niceness: int | None = None) -> None:
        self.handle, self.on_error, self.setup, self.teardown, self.merge = handle, on_error, setup, teardown, merge
        self.niceness = worker_niceness() if niceness is None else niceness
        self.dropped = 0
        """Items replaced by a newer one before the worker took them."""
        self.started = threading.Event()
        """Set once ``setup`` has run."""
        self._pending: T | None = None
        self._ready = threading.Condition()
        self._stop = False
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def offer(self, item: T) -> None:
        with self._ready:
            if self._pending is not None:
                self.dropped += 1
                if self.merge is not None:
                    item = self.merge(self._pending, item)
            self._pending = item
            self._ready.notify()

    @property
    def stopping(self) -> bool:
        return self._stop

    def _run(self) -> None:
        # A thread inherits its creator's policy: made on a real-time executor (a node
        # configured again through its lifecycle service), it would draw at real-time priority.
        normal_scheduling()
        with contextlib.suppress(OSError, AttributeError):
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), self.niceness)
        try:
            try:
                if self.setup is not None:
                    self.setup()
            except Exception as exc:
                self.on_error(exc)
            finally:
                self.started.set()
            while True:
                with self._ready:
                    while self._pending is None and not self._stop:
                        self._ready.wait()
                    if self._stop or self._pending is None:
                        return
                    item, self._pending = self._pending, None
                try:
                    self.handle(item)
                except Exception as exc:  # a broken item must not end the worker (nor the loop)
                    self.on_error(exc)
        finally:
            if self.teardown is not None:
                self.teardown()

    def close(self) -> None:
        with self._ready:
            self._stop = True
            self._ready.notify()
        self._thread.join(timeout=5)
