"""Joint position targets over time, as ros2_control's controllers hold them: the
forward position controller's last command (held forever: it has no timeout), the forward
velocity controller's last velocity (held forever too: the joints keep moving) and the
joint trajectory controller's current trajectory (linear between waypoints here; the
real controller uses splines when waypoints carry velocities; the last point is held).

Pure numpy, no ROS: the emulator feeds it from its subscriptions and samples it at the
controller manager's rate.
"""

from __future__ import annotations

import numpy as np

STREAM_PERIOD = 0.025
"""Forward commands closer than this (>= 40 Hz) are a stream whose velocity is tracked;
a slower command (a 20 Hz step, a one-off hold) is a step to reach at rest: estimating
a velocity from it would push the joints past it."""


class JointTarget:
    """The position the controller commands the joints to at a given time, and the
    velocity it implies (a real Franka's joint position interface is fed a smooth
    stream; the feed-forward velocity is what its internal controller tracks too)."""

    def __init__(self, q: np.ndarray) -> None:
        self._times = np.zeros(1)
        self._points = np.asarray(q, dtype=np.float64)[None].copy()
        self._last_forward = -np.inf
        self._forward_velocity = np.zeros_like(self._points[0])
        self._forward_period = 0.0
        self._velocity: np.ndarray | None = None
        """The forward velocity controller's command in force (None: a position target)."""

    def sample(self, now: float) -> tuple[np.ndarray, np.ndarray]:
        """``(q_desired, qdot_desired)`` at ``now`` (monotonic seconds)."""
        t, pts = self._times, self._points
        if self._velocity is not None:
            return pts[0] + self._velocity * max(now - t[0], 0.0), self._velocity.copy()
        if len(t) == 1:
            # Forward commands: the velocity of the latest step, until it is one period old
            # (commands stopped: the controller holds the position, at rest).
            age = now - self._last_forward
            moving = age <= self._forward_period * 1.5
            return pts[0].copy(), self._forward_velocity.copy() if moving else np.zeros_like(pts[0])
        if now <= t[0]:
            return pts[0].copy(), np.zeros_like(pts[0])
        if now >= t[-1]:
            return pts[-1].copy(), np.zeros_like(pts[0])
        i = int(np.searchsorted(t, now)) - 1
        span = t[i + 1] - t[i]
        s = (now - t[i]) / span
        return pts[i] + s * (pts[i + 1] - pts[i]), (pts[i + 1] - pts[i]) / span

    def forward(self, q: np.ndarray, now: float, velocity_limit: np.ndarray) -> None:
        """A forward position controller command: jump to ``q``, held until the next."""
        q = np.asarray(q, dtype=np.float64)
        self._velocity = None
        period = now - self._last_forward
        if 0.0 < period <= STREAM_PERIOD and len(self._times) == 1:
            self._forward_velocity = np.clip((q - self._points[0]) / period, -velocity_limit, velocity_limit)
            self._forward_period = period
        else:
            self._forward_velocity = np.zeros_like(q)
        self._times = np.array([now])
        self._points = q[None].copy()
        self._last_forward = now

    def trajectory(self, now: float, times: np.ndarray, points: np.ndarray, start: np.ndarray | None = None) -> None:
        """A joint trajectory controller goal: waypoints ``points[k]`` at ``now + times[k]``
        (``times`` increasing, > 0), starting from ``start`` (the measured joints, as JTC
        starts a new trajectory from its current state) or where the target is now. An
        empty trajectory stops the joints there."""
        q_now = self.sample(now)[0] if start is None else np.asarray(start, dtype=np.float64).copy()
        self._velocity = None
        if len(times) == 0:
            self._times, self._points = np.array([now]), q_now[None]
            self._last_forward = -np.inf
            return
        self._times = np.concatenate([[now], now + np.asarray(times, dtype=np.float64)])
        self._points = np.vstack([q_now[None], np.asarray(points, dtype=np.float64)])
        self._last_forward = -np.inf

    def velocity(self, v: np.ndarray, now: float, start: np.ndarray) -> None:
        """A forward velocity controller command: the joints move at ``v`` from ``start``
        (the measured joints: a velocity command remembers no position), until the next
        command, however long that takes."""
        self._times = np.array([now])
        self._points = np.asarray(start, dtype=np.float64)[None].copy()
        self._velocity = np.asarray(v, dtype=np.float64).copy()
        self._last_forward = -np.inf
