"""Limit filters: they clamp a command into what the robot may be asked to do.

Every limit filter returns a finite command inside its bounds for *any* input,
including NaN, +-inf and huge values (property-tested in
``tests/policies/safety``). NaN elements are replaced by a hold value (the
filter's previous output, or the measured state for position targets); +-inf
saturate at the bound they point to.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sim2real.policies.safety.base import FilterParams, SafetyFilter, clamp
from sim2real.policies.safety.types import FilterReport, SafetyState, compare


def _vec(values: float | list[float] | tuple[float, ...] | np.ndarray, size: int, name: str) -> np.ndarray:
    v = np.broadcast_to(np.asarray(values, dtype=np.float64), (size,)).copy()
    if not np.all(np.isfinite(v)):
        raise ValueError(f"{name}: every value must be finite, got {v.tolist()}")
    return v


@dataclass
class BoxLimitParams(FilterParams):
    """Fixed per-element bounds (joint position limits, effort limits, thrust range)."""

    lower: list[float]
    upper: list[float]
    hold: list[float] | None = None
    """Value a NaN element takes before any output exists (default: midpoint of the box)."""

    def validate(self) -> None:
        lo, hi = np.asarray(self.lower, float), np.asarray(self.upper, float)
        if lo.shape != hi.shape or lo.ndim != 1:
            raise ValueError(f"lower/upper: need equal-length vectors, got {lo.shape} and {hi.shape}")
        if not (np.all(np.isfinite(lo)) and np.all(np.isfinite(hi)) and np.all(lo <= hi)):
            raise ValueError("lower/upper: need finite bounds with lower <= upper")


class BoxLimit(SafetyFilter):
    """Clamp every element into ``[lower, upper]``."""

    kind = "limit"

    def __init__(self, params: BoxLimitParams, name: str = "box_limit") -> None:
        params.validate()
        self.name = name
        self.params = params
        self.lower = np.asarray(params.lower, dtype=np.float64)
        self.upper = np.asarray(params.upper, dtype=np.float64)
        mid = 0.5 * (self.lower + self.upper)
        self._default = np.clip(_vec(params.hold, len(mid), "hold") if params.hold is not None else mid,
                                self.lower, self.upper)
        self._prev: np.ndarray | None = None

    def filter(self, command: np.ndarray, state: SafetyState) -> tuple[np.ndarray, FilterReport]:
        hold = self._default if self._prev is None else self._prev
        out = clamp(command, self.lower, self.upper, hold)
        self.last_interval = (self.lower, self.upper)
        return out, compare(self.name, command, out, "outside the limits")

    def observe_output(self, command: np.ndarray, state: SafetyState) -> None:
        self._prev = np.clip(command, self.lower, self.upper)

    def reset(self) -> None:
        self._prev = None


@dataclass
class RateLimitParams(FilterParams):
    """Bounds on how fast the command may change (per second of elapsed time)."""

    max_rate: list[float] | float
    """Largest change per second, per element (command units / s)."""
    max_accel: list[float] | float | None = None
    """Largest change of that rate per second (command units / s^2): bounds the jerk of
    a position target or the acceleration of a velocity command. ``None``: off."""
    max_dt: float = 0.1
    """Elapsed time is capped at this (s), so a long pause never licenses a big jump."""
    initial: str = "zero"
    """Reference before the first output: ``"zero"``, ``"joint_pos"`` (measured joint
    positions, for position targets) or ``"free"`` (the first command passes)."""

    def validate(self) -> None:
        if self.initial not in ("zero", "joint_pos", "free"):
            raise ValueError(f"initial: must be zero, joint_pos or free, got {self.initial!r}")
        if not (np.isfinite(self.max_dt) and self.max_dt > 0):
            raise ValueError(f"max_dt: must be > 0, got {self.max_dt}")
        for name in ("max_rate", "max_accel"):
            value = getattr(self, name)
            if value is not None and not np.all(np.asarray(value, float) > 0):
                raise ValueError(f"{name}: must be > 0, got {value}")


class RateLimit(SafetyFilter):
    """Limit the change from the previous *final* output (the chain reports it back
    through :meth:`observe_output`) to ``max_rate * dt`` and, when ``max_accel`` is set,
    the change of rate to ``max_accel * dt``. Guarantee: relative to the previous output,
    ``|out - prev| <= max_rate * dt`` and ``|(out - prev)/dt - prev_rate| <= max_accel * dt``."""

    kind = "limit"

    def __init__(self, params: RateLimitParams, size: int, name: str = "rate_limit") -> None:
        params.validate()
        self.name = name
        self.params = params
        self.size = size
        self.max_rate = _vec(params.max_rate, size, "max_rate")
        self.max_accel = None if params.max_accel is None else _vec(params.max_accel, size, "max_accel")
        self._prev: np.ndarray | None = None
        self._prev_rate = np.zeros(size)
        self._t_prev = 0.0

    def reference(self, state: SafetyState) -> tuple[np.ndarray | None, float]:
        """The previous output and the elapsed time since it (``None``: unconstrained)."""
        if self._prev is not None:
            return self._prev, float(np.clip(state.now - self._t_prev, 0.0, self.params.max_dt))
        if self.params.initial == "zero":
            return np.zeros(self.size), self.params.max_dt
        q = state.value("joint_pos") if self.params.initial == "joint_pos" else None
        if q is not None and len(q) == self.size:
            return np.asarray(q, dtype=np.float64), self.params.max_dt
        return None, self.params.max_dt

    def bounds(self, state: SafetyState) -> tuple[np.ndarray, np.ndarray] | None:
        """The interval the next output must lie in (``None``: unconstrained)."""
        ref, dt = self.reference(state)
        if ref is None:
            return None
        lo_rate, hi_rate = -self.max_rate, self.max_rate
        if self.max_accel is not None and self._prev is not None:
            rate = np.clip(self._prev_rate, -self.max_rate, self.max_rate)
            lo_rate = np.maximum(lo_rate, rate - self.max_accel * dt)
            hi_rate = np.minimum(hi_rate, rate + self.max_accel * dt)
        return ref + lo_rate * dt, ref + hi_rate * dt

    def filter(self, command: np.ndarray, state: SafetyState) -> tuple[np.ndarray, FilterReport]:
        box = self.last_interval = self.bounds(state)
        if box is None:
            out = np.where(np.isfinite(command), command, 0.0)
            return out, compare(self.name, command, out, "changing faster than allowed")
        lo, hi = box
        out = clamp(command, lo, hi, 0.5 * (lo + hi))
        return out, compare(self.name, command, out, "changing faster than allowed")

    def observe_output(self, command: np.ndarray, state: SafetyState) -> None:
        ref, dt = self.reference(state)
        if ref is not None and dt > 0:
            self._prev_rate = (command - ref) / dt
        self._prev = np.array(command, dtype=np.float64)
        self._t_prev = state.now

    def reset(self) -> None:
        self._prev = None
        self._prev_rate = np.zeros(self.size)


@dataclass
class TargetVelocityLimitParams(FilterParams):
    """Position targets may lead the measured joints by at most ``max_velocity * horizon``."""

    max_velocity: list[float] | float
    """Joint speed limits (rad/s)."""
    horizon: float
    """Seconds of motion one target may ask for (the control period)."""

    def validate(self) -> None:
        if not np.all(np.asarray(self.max_velocity, float) > 0) or not self.horizon > 0:
            raise ValueError("max_velocity and horizon must be > 0")


class TargetVelocityLimit(SafetyFilter):
    """Joint velocity limit for position targets: ``|target - q| <= v_max * horizon``."""

    kind = "limit"

    def __init__(self, params: TargetVelocityLimitParams, size: int, name: str = "joint_velocity_limit") -> None:
        params.validate()
        self.name = name
        self.step = _vec(params.max_velocity, size, "max_velocity") * params.horizon
        self.size = size

    def filter(self, command: np.ndarray, state: SafetyState) -> tuple[np.ndarray, FilterReport]:
        self.last_interval = None
        joint_pos = state.value("joint_pos")
        if joint_pos is None or len(joint_pos) != self.size:
            return np.zeros(self.size), FilterReport(self.name, acted=True, tripped=True, reason="no joint positions")
        q = np.asarray(joint_pos, dtype=np.float64)
        lo, hi = self.last_interval = (q - self.step, q + self.step)
        out = clamp(command, lo, hi, q)
        return out, compare(self.name, command, out, "target too far from the measured position")


@dataclass
class ServoEffortLimitParams(FilterParams):
    """Torque protection for joint position servos ``tau = kp (q_t - q) - kd qdot``."""

    max_effort: list[float] | float
    kp: list[float] | float
    kd: list[float] | float

    def validate(self) -> None:
        if not (np.all(np.asarray(self.max_effort, float) > 0) and np.all(np.asarray(self.kp, float) > 0)):
            raise ValueError("max_effort and kp must be > 0")
        if not np.all(np.asarray(self.kd, float) >= 0):
            raise ValueError("kd must be >= 0")


class ServoEffortLimit(SafetyFilter):
    """Clamp position targets so the servo's torque stays within ``max_effort``:
    ``q_t in [q + (kd qdot - tau_max)/kp, q + (kd qdot + tau_max)/kp]``."""

    kind = "limit"

    def __init__(self, params: ServoEffortLimitParams, size: int, name: str = "effort_limit") -> None:
        params.validate()
        self.name = name
        self.size = size
        self.tau = _vec(params.max_effort, size, "max_effort")
        self.kp = _vec(params.kp, size, "kp")
        self.kd = _vec(params.kd, size, "kd")

    def servo_effort(self, target: np.ndarray, state: SafetyState) -> np.ndarray:
        """The torque the servo would apply for ``target`` in ``state``."""
        return self.kp * (target - state.joint_pos) - self.kd * state.joint_vel

    def filter(self, command: np.ndarray, state: SafetyState) -> tuple[np.ndarray, FilterReport]:
        self.last_interval = None
        joint_pos, joint_vel = state.value("joint_pos"), state.value("joint_vel")
        if joint_pos is None or joint_vel is None or len(joint_pos) != self.size or len(joint_vel) != self.size:
            return np.zeros(self.size), FilterReport(self.name, acted=True, tripped=True, reason="no joint state")
        q, qd = np.asarray(joint_pos, float), np.asarray(joint_vel, float)
        center = q + self.kd * qd / self.kp
        lo, hi = self.last_interval = (center - self.tau / self.kp, center + self.tau / self.kp)
        out = clamp(command, lo, hi, center)
        return out, compare(self.name, command, out, "servo torque above the limit")


@dataclass
class WorkspaceBoxParams(FilterParams):
    """A box for Cartesian velocity commands (the arm's end effector in ``ee_delta``, a
    drone's base in ``velocity``)."""

    low: list[float]
    high: list[float]
    horizon: float
    """Seconds a velocity command is integrated for (the arm: the control period; a drone:
    the time it may take to reach the box's face at its speed, a brake)."""
    max_age: float = float("inf")
    """A position older than this (s) is not used: the controller's setpoint
    (``ee_pos_desired``), else the measured end effector within the same age."""
    fields: tuple[str, ...] = ("ee_pos_desired", "ee_pos")
    """The state's positions the box is checked from (every fresh one bounds the command)."""

    def validate(self) -> None:
        lo, hi = np.asarray(self.low, float), np.asarray(self.high, float)
        if lo.shape != (3,) or hi.shape != (3,) or not np.all(lo < hi) or not self.horizon > 0:
            raise ValueError("low/high: need 3-vectors with low < high, and horizon > 0")
        if not self.max_age > 0:
            raise ValueError(f"max_age: must be > 0, got {self.max_age}")


class WorkspaceBox(SafetyFilter):
    """Clamp the linear velocity (elements 0-2) so the setpoint ``p + v * horizon`` stays
    in the box; outside the box only motion back toward it is allowed. ``p`` is the
    controller's setpoint when published and fresh, else the measured end effector
    when fresh; with neither it trips. Both positions must be inside the bounds' logic:
    the interval is the intersection of what each fresh position allows, so a frozen
    or lagging setpoint cannot license motion past the box."""

    kind = "limit"

    def __init__(self, params: WorkspaceBoxParams, size: int, name: str = "workspace_box") -> None:
        params.validate()
        self.name = name
        self.size = size
        self.low = np.asarray(params.low, float)
        self.high = np.asarray(params.high, float)
        self.horizon = float(params.horizon)
        self.max_age = float(params.max_age)
        self.fields = tuple(params.fields)

    def positions(self, state: SafetyState) -> list[np.ndarray]:
        """The fresh positions the box is checked from (setpoint and/or measurement)."""
        return [np.asarray(getattr(state, f), float) for f in self.fields if state.fresh(f, self.max_age)]

    def bounds(self, p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return np.minimum((self.low - p) / self.horizon, 0.0), np.maximum((self.high - p) / self.horizon, 0.0)

    def interval(self, state: SafetyState) -> tuple[np.ndarray, np.ndarray] | None:
        """The velocity interval from every fresh position (``None``: none is fresh)."""
        ps = self.positions(state)
        if not ps:
            return None
        lo, hi = np.full(self.size, -np.inf), np.full(self.size, np.inf)
        for p in ps:
            b_lo, b_hi = self.bounds(p)
            lo[:3], hi[:3] = np.maximum(lo[:3], b_lo), np.minimum(hi[:3], b_hi)
        # Both bounds contain 0 (each side is min(.,0) / max(.,0)), so the intersection is never empty.
        return lo, hi

    def filter(self, command: np.ndarray, state: SafetyState) -> tuple[np.ndarray, FilterReport]:
        box = self.last_interval = self.interval(state)
        out = np.array(command, dtype=np.float64)
        if box is None:
            out[:3] = 0.0
            out = np.where(np.isfinite(out), out, 0.0)
            return out, FilterReport(self.name, acted=True, tripped=True,
                                     reason=f"no fresh position ({' or '.join(self.fields)})")
        out[:3] = clamp(out[:3], box[0][:3], box[1][:3], np.zeros(3))
        return out, compare(self.name, command[:3], out[:3], "would leave the workspace box")
