"""Guards: filters that decide whether the policy may command the robot at all.

A guard passes the command through unchanged or *trips*; the chain then sends the
robot's safe action instead (:mod:`~sim2real.policies.safety.fallback`). Latched
guards stay tripped until :meth:`reset`, which only an explicit operator reset calls.
A guard that lacks the measurement it checks trips (fails closed).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sim2real.policies.safety.base import FilterParams, SafetyFilter
from sim2real.policies.safety.types import FilterReport, SafetyState

MISSING = "no "
"""Prefix of every reason that means "the measurement is missing"."""


class Guard(SafetyFilter):
    """A guard with an optional latch."""

    kind = "guard"
    latch = False

    def __init__(self) -> None:
        self.latched_reason = ""

    def check(self, state: SafetyState) -> str:
        """The reason to trip now, or ``""``."""
        return ""

    def latchable(self, reason: str) -> bool:
        """Missing measurements trip without latching: a sensor that comes back (or has not
        started yet) must not need an operator; a real fall or fence breach does."""
        return self.latch and not reason.startswith(MISSING)

    def filter(self, command: np.ndarray, state: SafetyState) -> tuple[np.ndarray, FilterReport]:
        reason = self.latched_reason or self.check(state)
        if reason and not self.latched_reason and self.latchable(reason):
            self.latched_reason = reason
        if reason:
            return command, FilterReport(self.name, tripped=True, reason=reason)
        return command, FilterReport(self.name)

    @property
    def tripped(self) -> bool:
        return bool(self.latched_reason)

    def reset(self) -> None:
        self.latched_reason = ""


class EStop(Guard):
    """Latched emergency stop: :meth:`trip` sets it, only :meth:`reset` clears it."""

    name = "estop"
    latch = True

    def trip(self, reason: str = "e-stop") -> None:
        if not self.latched_reason:
            self.latched_reason = reason or "e-stop"


@dataclass
class WatchdogParams(FilterParams):
    """Staleness limits; keep ``command_timeout`` + one check period within 3 control periods."""

    command_timeout: float
    """A command older than this (s) is stale."""
    state_timeout: float
    """A state older than this (s) is stale."""
    latch: bool = False
    """Stay tripped after a timeout until an explicit reset (robots whose safe action
    must not be interrupted, e.g. a landing drone)."""

    def validate(self) -> None:
        if not (self.command_timeout > 0 and self.state_timeout > 0):
            raise ValueError("command_timeout and state_timeout must be > 0")


def stream_stopped(reason: str) -> bool:
    """Whether a watchdog's ``reason`` is a stream that went stale (a trip: it latches,
    and the filter and the demo count it), not one that has not started yet."""
    return "stale" in reason


class Watchdog(Guard):
    """Trips when the command or the state stream is stale, or never started."""

    name = "watchdog"

    def __init__(self, params: WatchdogParams) -> None:
        super().__init__()
        params.validate()
        self.params = params
        self.latch = params.latch

    def check(self, state: SafetyState) -> str:
        p = self.params
        if state.command_stamp is None:
            return "no command received yet"
        if state.state_stamp is None:
            return "no state received yet"
        for what, age, timeout in (("command", state.now - state.command_stamp, p.command_timeout),
                                   ("state", state.now - state.state_stamp, p.state_timeout)):
            if age > timeout:
                return f"{what} stale for {age:.3f} s (timeout {timeout:.3f} s)"
            if age < 0:  # dated after now: the clock stepped back; nothing proves it fresh
                return f"{what} stale: stamped {-age:.3f} s in the future (clock stepped back)"
        return ""

    def filter(self, command: np.ndarray, state: SafetyState) -> tuple[np.ndarray, FilterReport]:
        # Only a stream that stopped latches: before the first command the robot has
        # not been commanded yet, and the policy starting must not need a reset.
        reason = self.latched_reason or self.check(state)
        if reason and self.latch and not self.latched_reason and stream_stopped(reason):
            self.latched_reason = reason
        return command, FilterReport(self.name, tripped=bool(reason), reason=reason)

    def latchable(self, reason: str) -> bool:
        return self.latch and stream_stopped(reason)

    def state_stale(self, state: SafetyState) -> bool:
        return state.state_stamp is None or not 0 <= state.now - state.state_stamp <= self.params.state_timeout


@dataclass
class JointStateGuardParams(FilterParams):
    """Measured joint positions and speeds the robot must stay within."""

    lower: list[float]
    upper: list[float]
    max_velocity: list[float]
    position_margin: float = 0.0
    """Tolerance beyond the limits (rad) before tripping."""
    velocity_ratio: float = 1.2
    """Trip when a joint is faster than this multiple of its limit."""

    def validate(self) -> None:
        if not (len(self.lower) == len(self.upper) == len(self.max_velocity)):
            raise ValueError("lower, upper and max_velocity need the same length")
        if self.velocity_ratio <= 0 or self.position_margin < 0:
            raise ValueError("velocity_ratio must be > 0 and position_margin >= 0")


class JointStateGuard(Guard):
    """Trips when a measured joint is beyond its position limit or overspeeding."""

    name = "joint_state_guard"

    def __init__(self, params: JointStateGuardParams) -> None:
        super().__init__()
        params.validate()
        self.lower = np.asarray(params.lower, float) - params.position_margin
        self.upper = np.asarray(params.upper, float) + params.position_margin
        self.vmax = np.asarray(params.max_velocity, float) * params.velocity_ratio

    def check(self, state: SafetyState) -> str:
        n = len(self.lower)
        joint_pos, joint_vel = state.value("joint_pos"), state.value("joint_vel")
        if joint_pos is None or joint_vel is None or len(joint_pos) != n or len(joint_vel) != n:
            return "no valid joint state"
        q, qd = np.asarray(joint_pos), np.asarray(joint_vel)
        out = np.flatnonzero((q < self.lower) | (q > self.upper))
        if len(out):
            return f"joint {int(out[0])} at {q[out[0]]:.3f} rad is beyond its limit"
        fast = np.flatnonzero(np.abs(qd) > self.vmax)
        if len(fast):
            return f"joint {int(fast[0])} at {qd[fast[0]]:.2f} rad/s is overspeeding"
        return ""


def tilt_angle(quat: np.ndarray) -> float:
    """Angle (rad) between the body z axis and world up, from a (w, x, y, z) quaternion."""
    _w, x, y, _z = np.asarray(quat, float) / max(float(np.linalg.norm(quat)), 1e-12)
    return float(np.arccos(np.clip(1.0 - 2.0 * (x * x + y * y), -1.0, 1.0)))


@dataclass
class AttitudeGuardParams(FilterParams):
    max_tilt: float
    """Body tilt (rad) beyond which the robot has fallen."""
    max_angular_velocity: float = float("inf")
    """Body angular speed (rad/s) beyond which it is falling."""

    def validate(self) -> None:
        if not 0 < self.max_tilt < np.pi or not self.max_angular_velocity > 0:
            raise ValueError("max_tilt must be in (0, pi) and max_angular_velocity > 0")


class AttitudeGuard(Guard):
    """Latched fall detection from the base attitude (quadruped)."""

    name = "fall_guard"
    latch = True

    def __init__(self, params: AttitudeGuardParams) -> None:
        super().__init__()
        params.validate()
        self.params = params

    def check(self, state: SafetyState) -> str:
        quat = state.value("base_quat")
        if quat is None or np.linalg.norm(quat) < 1e-6:
            return "no base orientation"
        tilt = tilt_angle(quat)
        if tilt > self.params.max_tilt:
            return f"fallen: tilt {np.degrees(tilt):.0f} deg > {np.degrees(self.params.max_tilt):.0f} deg"
        rate = state.value("base_ang_vel")
        if rate is not None and np.linalg.norm(rate) > self.params.max_angular_velocity:
            return f"falling: body rate {np.linalg.norm(rate):.1f} rad/s"
        return ""


@dataclass
class EffortGuardParams(FilterParams):
    max_effort: list[float]
    ratio: float = 1.0
    """Trip above this fraction of ``max_effort``..."""
    samples: int = 5
    """...sustained for this many consecutive state samples."""

    def validate(self) -> None:
        if self.ratio <= 0 or self.samples < 1:
            raise ValueError("ratio must be > 0 and samples >= 1")


class EffortGuard(Guard):
    """Latched torque protection on the *measured* joint efforts."""

    name = "effort_guard"
    latch = True

    def __init__(self, params: EffortGuardParams) -> None:
        super().__init__()
        params.validate()
        self.limit = np.asarray(params.max_effort, float) * params.ratio
        self.samples = params.samples
        self._count = 0
        self._last_stamp: float | None = None

    def check(self, state: SafetyState) -> str:
        if state.joint_effort is None or len(state.joint_effort) != len(self.limit):
            return ""  # robots without effort sensing rely on the servo effort limit
        effort = np.asarray(state.joint_effort, float)
        if state.state_stamp != self._last_stamp:  # count samples, not filter calls
            self._last_stamp = state.state_stamp
            over = ~np.isfinite(effort) | (np.abs(effort) > self.limit)
            self._count = self._count + 1 if over.any() else 0
        if self._count >= self.samples:
            return f"joint effort above {self.limit.max():.1f} Nm for {self._count} samples"
        return ""

    def reset(self) -> None:
        super().reset()
        self._count = 0


@dataclass
class BoxGuardParams(FilterParams):
    """An axis-aligned box a point (base or end effector) must stay in."""

    low: list[float]
    high: list[float]
    lookahead: float = 0.0
    """Also trip when ``p + v * lookahead`` leaves the box (s; needs a velocity)."""

    def validate(self) -> None:
        lo, hi = np.asarray(self.low, float), np.asarray(self.high, float)
        if lo.shape != (3,) or hi.shape != (3,) or not np.all(lo < hi) or self.lookahead < 0:
            raise ValueError("low/high: need 3-vectors with low < high; lookahead >= 0")


class Geofence(Guard):
    """Latched geofence on the floating base position (drone)."""

    name = "geofence"
    latch = True
    field = "base_pos"

    def __init__(self, params: BoxGuardParams) -> None:
        super().__init__()
        params.validate()
        self.low, self.high = np.asarray(params.low, float), np.asarray(params.high, float)
        self.lookahead = params.lookahead

    def check(self, state: SafetyState) -> str:
        if not state.has(self.field):
            return f"no {self.field.replace('_', ' ')}"
        p = np.asarray(getattr(state, self.field), float)
        if np.any(p < self.low) or np.any(p > self.high):
            return f"position {np.round(p, 2).tolist()} outside the fence"
        if self.lookahead > 0 and state.has("base_lin_vel"):
            ahead = p + np.asarray(state.base_lin_vel) * self.lookahead
            if np.any(ahead < self.low) or np.any(ahead > self.high):
                return f"heading out of the fence (in {self.lookahead:.1f} s at {np.round(ahead, 2).tolist()})"
        return ""


class WorkspaceGuard(Geofence):
    """Trips (unlatched) while the measured end effector is outside its box (arm)."""

    name = "workspace_guard"
    latch = False
    field = "ee_pos"
