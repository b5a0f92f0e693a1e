"""Bounded-memory latency statistics for nodes that run for days.

A node records one sample per control period (500 Hz is 43 million a day). Keeping
them in a list grows memory without bound, and summarising the list (a sort) takes
longer every second on the same executor as the control loop. :class:`LatencyStats`
keeps a log-spaced histogram instead: recording is O(1) and allocation-free,
memory is fixed (~2,000 bins) and a summary is O(bins) however long the node ran.
Percentiles are exact to the bin width (1 % relative), which is finer than any
latency figure we report (0.01 ms at 1 ms).
"""

from __future__ import annotations

import math

import numpy as np

LOW_S = 1e-6
"""Samples below 1 us share the first bin."""
HIGH_S = 100.0
"""Samples above 100 s share the last bin."""
RESOLUTION = 0.01
"""Relative bin width."""


class LatencyStats:
    """Count, max, over-deadline count and percentiles of durations (seconds).

    Args:
        deadline: Samples above it (s) are counted exactly in ``over_deadline``
            (0: not counted).
    """

    _LOG_BASE = math.log1p(RESOLUTION)
    _BINS = int(math.ceil(math.log(HIGH_S / LOW_S) / math.log1p(RESOLUTION))) + 2

    def __init__(self, deadline: float = 0.0) -> None:
        self.deadline = float(deadline)
        self.counts = np.zeros(self._BINS, dtype=np.int64)
        self.n = 0
        self.max = 0.0
        self.over_deadline = 0

    def record(self, seconds: float) -> None:
        """Add one sample (non-finite or negative samples count in the first bin)."""
        if not seconds > LOW_S:  # also NaN
            index = 0
        elif seconds >= HIGH_S:
            index = self._BINS - 1
        else:
            index = 1 + int(math.log(seconds / LOW_S) / self._LOG_BASE)
        self.counts[index] += 1
        self.n += 1
        if seconds > self.max:
            self.max = seconds
        if self.deadline > 0 and seconds > self.deadline:
            self.over_deadline += 1

    # ``append`` keeps the list/deque API of the code that used lists.
    append = record

    def clear(self) -> None:
        self.counts[:] = 0
        self.n = 0
        self.max = 0.0
        self.over_deadline = 0

    def __len__(self) -> int:
        return self.n

    def percentile(self, q: float) -> float:
        """The ``q``-th percentile (0-100) in seconds: the geometric centre of its bin
        (NaN when empty)."""
        if self.n == 0:
            return float("nan")
        rank = max(1, math.ceil(q / 100.0 * self.n))
        index = int(np.searchsorted(np.cumsum(self.counts), rank))
        if index == 0:
            return LOW_S
        low = LOW_S * math.exp((index - 1) * self._LOG_BASE)
        return min(low * math.exp(0.5 * self._LOG_BASE), self.max)

    def summary_ms(self) -> dict[str, float]:
        """``p50_ms``, ``p99_ms``, ``max_ms``, ``n`` (and ``over_deadline`` with a
        deadline), the keys of :func:`sim2real.ros_nodes.base.percentiles_ms`."""
        empty = self.n == 0
        out: dict[str, float] = {
            "p50_ms": float("nan") if empty else round(self.percentile(50) * 1e3, 4),
            "p99_ms": float("nan") if empty else round(self.percentile(99) * 1e3, 4),
            "max_ms": float("nan") if empty else round(self.max * 1e3, 4),
            "n": self.n,
        }
        if self.deadline > 0:
            out["over_deadline"] = self.over_deadline
        return out
