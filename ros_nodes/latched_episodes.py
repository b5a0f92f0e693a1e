"""Which of a simulated robot's episodes ran under a latched safety guard.

A latched guard (a fall, the geofence, the e-stop) holds the robot until a person calls
the filter's ``~/reset``; the simulator meanwhile resets the robot and starts episode
after episode, each of them the filter's safe action rather than the policy's. The sim
bridge counts those apart, so a run's success rate stays the policy's (one fall behind a
latch once made 30 further 0.2 s "failures" of 32 episodes).

The filter says when it latched (``latched_at``, Unix s) in its ``diagnostics``, at once
when it latches. An episode that began after that, or at most :data:`LATCH_CARRY`
before it (the reset that follows a fall comes a tick or two before the guard's latch
reaches the bridge), ran under the latch.
"""

from __future__ import annotations

import math
from typing import Any

from diagnostic_msgs.msg import DiagnosticArray

from sim2real.ros_nodes import messages as M
from sim2real.ros_nodes.qos import status_qos

LATCH_CARRY = 0.1
"""s: an episode that began this little before the latch carries the previous one's fault."""


def under_latch(started_at: float, latched_at: float) -> bool:
    """Whether an episode that began at ``started_at`` ran under a latch set at
    ``latched_at`` (Unix s; ``0``: no latch is set)."""
    return 0.0 < latched_at <= started_at + LATCH_CARRY


class FilterLatch:
    """The latch time the safety filter ``filter_name`` (a node name in ``node``'s
    namespace) last reported on ``diagnostics``."""

    def __init__(self, node: Any, filter_name: str) -> None:
        self.filter_name = filter_name
        self.latched_at = 0.0
        """Unix s when the filter's guards latched (``0``: none latched)."""
        node.create_subscription(DiagnosticArray, "diagnostics", self._on_diagnostics, status_qos())

    def _on_diagnostics(self, msg: DiagnosticArray) -> None:
        status = M.node_status(msg, self.filter_name)
        value = None if status is None else status[0].get("latched_at")
        if value is None:
            return
        try:
            latched_at = float(value)
        except ValueError:  # a foreign or broken status: the latch stays as it was known
            return
        self.latched_at = latched_at if math.isfinite(latched_at) and latched_at > 0.0 else 0.0

    def under_latch(self, started_at: float) -> bool:
        return under_latch(started_at, self.latched_at)
