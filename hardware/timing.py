"""Periodic loops on absolute deadlines, and the record of how well they kept them.

:class:`PeriodicSchedule` is the clock of every vendor-rate loop (the Go2's writer, the
Crazyflie's setpoint stream, the arm's command stream, the emulated robots): deadlines
``t0 + k * period`` on the monotonic clock, slept to with ``clock_nanosleep(TIMER_ABSTIME)``
(a relative sleep would add each wake-up's delay to every later deadline), and a loop
more than a period behind starts again from now (an *overrun*, counted) instead of
firing a burst of catch-up ticks.

:class:`TimingRecord` keeps each tick's lateness and time in preallocated arrays (the
loop allocates nothing to record them; the arrays may live in shared memory, which is
how the Go2's writer process reports to its backend). A *deadline miss* is a tick more
than half a period late: closer to the next deadline than to its own.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import time
from collections.abc import Callable
from typing import Any

import numpy as np

_CLOCK_MONOTONIC, _TIMER_ABSTIME, _EINTR = 1, 1, 4


class _Timespec(ctypes.Structure):
    _fields_ = [("tv_sec", ctypes.c_long), ("tv_nsec", ctypes.c_long)]


class AbsoluteSleeper:
    """Sleeps until a ``time.monotonic()`` instant (CLOCK_MONOTONIC, TIMER_ABSTIME; the
    GIL is released while it sleeps). Falls back to ``time.sleep`` without a C library."""

    def __init__(self) -> None:
        self._ts = _Timespec()
        self._ref = ctypes.byref(self._ts)
        try:
            libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
            self._nanosleep: Any = libc.clock_nanosleep
        except (OSError, AttributeError):
            self._nanosleep = None

    def __call__(self, deadline: float) -> None:
        if self._nanosleep is None:
            left = deadline - time.monotonic()
            if left > 0:
                time.sleep(left)
            return
        sec = int(deadline)
        self._ts.tv_sec, self._ts.tv_nsec = sec, int((deadline - sec) * 1e9)
        while self._nanosleep(_CLOCK_MONOTONIC, _TIMER_ABSTIME, self._ref, None) == _EINTR:
            pass


class TimingRecord:
    """The last ``capacity`` ticks of a periodic loop: lateness (s after the deadline) and
    time (s); counters ``ticks``, ``misses`` (more than half a period late) and
    ``overruns`` (more than a period behind: resynchronized). Pass ``arrays`` (lateness,
    stamps, counters of 3) to keep them elsewhere, e.g. in shared memory."""

    def __init__(self, period: float, capacity: int = 8192,
                 arrays: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None) -> None:
        self.period = period
        if arrays is None:
            arrays = np.zeros(capacity), np.zeros(capacity), np.zeros(3, dtype=np.int64)
        self.lateness, self.stamps, self.counts = arrays
        self.capacity = len(self.lateness)

    @property
    def ticks(self) -> int:
        return int(self.counts[0])

    @property
    def misses(self) -> int:
        return int(self.counts[1])

    @property
    def overruns(self) -> int:
        return int(self.counts[2])

    def add(self, now: float, lateness: float) -> None:
        i = self.counts[0] % self.capacity
        self.lateness[i] = lateness
        self.stamps[i] = now
        self.counts[0] += 1
        if lateness > 0.5 * self.period:
            self.counts[1] += 1

    def overrun(self) -> None:
        self.counts[2] += 1

    def window(self, since: float = -np.inf) -> tuple[np.ndarray, np.ndarray]:
        """(lateness, stamps) of the recorded ticks at or after ``since``, oldest first
        (copies of the window only: the ring's two runs are each in time order)."""
        ticks = self.ticks
        end = ticks % self.capacity
        runs = [slice(end, self.capacity), slice(0, end)] if ticks >= self.capacity else [slice(0, ticks)]
        late, stamps = [], []
        for run in runs:
            first = run.start + int(np.searchsorted(self.stamps[run], since))
            late.append(self.lateness[first:run.stop])
            stamps.append(self.stamps[first:run.stop])
        return np.concatenate(late), np.concatenate(stamps)

    def summary(self, since: float = -np.inf) -> dict[str, Any]:
        """Over the recorded ticks at or after ``since``: their number, rate (Hz),
        lateness and interval jitter (ms: p50, p99, max; jitter is ``|interval - period|``)
        and deadline misses; overruns since the start."""
        late, stamps = self.window(since)
        out: dict[str, Any] = {"ticks": len(stamps), "deadline_misses": int((late > 0.5 * self.period).sum()),
                               "overruns": self.overruns}
        if len(stamps) < 3 or stamps[-1] <= stamps[0]:
            return {**out, "rate_hz": 0.0, "lateness_ms": {}, "jitter_ms": {}}
        jitter = np.abs(np.diff(stamps) - self.period) * 1e3
        out["rate_hz"] = round(float((len(stamps) - 1) / (stamps[-1] - stamps[0])), 2)
        out["lateness_ms"] = _percentiles(late * 1e3)
        out["jitter_ms"] = _percentiles(jitter)
        return out


def _percentiles(values: np.ndarray) -> dict[str, float]:
    return {"p50": round(float(np.percentile(values, 50)), 3), "p99": round(float(np.percentile(values, 99)), 3),
            "max": round(float(values.max()), 3)}


class PeriodicSchedule:
    """Deadlines every ``period`` s from :meth:`start`. ``clock`` and ``sleep_until``
    (an absolute sleep on that clock) are injectable for tests."""

    def __init__(self, period: float, record: TimingRecord | None = None,
                 clock: Callable[[], float] = time.monotonic,
                 sleep_until: Callable[[float], None] | None = None) -> None:
        if not period > 0:
            raise ValueError(f"period must be positive, got {period!r}")
        self.period = period
        self.record = record if record is not None else TimingRecord(period)
        self.clock = clock
        self.sleep_until = sleep_until if sleep_until is not None else AbsoluteSleeper()
        self.next = clock()

    def start(self, at: float | None = None) -> None:
        """The first deadline is ``at`` (default: now)."""
        self.next = self.clock() if at is None else at

    def remaining(self) -> float:
        """s until the next deadline (negative: it has passed)."""
        return self.next - self.clock()

    def sleep(self) -> float:
        """Sleep until the next deadline; returns the time woken."""
        if self.next > self.clock():
            self.sleep_until(self.next)
        return self.clock()

    def tick(self, now: float) -> None:
        """The loop did its work for the current deadline at ``now``: record it, move to
        the next deadline (resynchronized when more than a period behind)."""
        self.record.add(now, now - self.next)
        self.next += self.period
        after = self.clock()
        if after > self.next + self.period:
            self.record.overrun()
            self.next = after
