"""Real-time stepping: one loop period at a time, on the monotonic clock."""

from __future__ import annotations

import time


def pace(next_tick: float, period: float) -> float:
    """Sleep until ``next_tick``, then return the next tick's time. After a stall the next
    tick is at most one period back (no burst of steps to catch up). ``period <= 0``: no
    pacing."""
    if period <= 0:
        return next_tick
    delay = next_tick - time.monotonic()
    if delay > 0:
        time.sleep(delay)
    return max(next_tick + period, time.monotonic() - period)
