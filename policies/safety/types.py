"""The data the safety filters exchange: the robot's state as the filters see it,
and what each filter reports about what it did.

Everything is plain numpy and dataclasses: the ROS 2 node fills :class:`SafetyState`
from topics, the tests fill it directly.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np


@dataclass
class SafetyState:
    """The latest measurements and clocks a filter may read.

    Times are seconds on one monotonic clock (the node's clock). A field is ``None``
    when the robot does not publish it; a filter that needs a missing field trips
    (fails closed) rather than guessing.
    """

    now: float
    """Time of this filter call."""
    state_stamp: float | None = None
    """When the latest state message arrived (``None``: never)."""
    command_stamp: float | None = None
    """When the latest *valid* command arrived (``None``: never)."""
    joint_pos: np.ndarray | None = None
    joint_vel: np.ndarray | None = None
    joint_effort: np.ndarray | None = None
    ee_pos: np.ndarray | None = None
    """Measured end-effector position (world frame, m)."""
    ee_quat: np.ndarray | None = None
    """Measured end-effector orientation (w, x, y, z), world frame."""
    ee_pos_desired: np.ndarray | None = None
    """The arm controller's current Cartesian setpoint (m), when published."""
    ee_quat_desired: np.ndarray | None = None
    """Orientation of the controller's setpoint (w, x, y, z)."""
    base_pos: np.ndarray | None = None
    """Floating base position (world frame, m)."""
    base_quat: np.ndarray | None = None
    """Floating base orientation (w, x, y, z), body to world."""
    base_lin_vel: np.ndarray | None = None
    """Floating base linear velocity, world frame (m/s)."""
    base_ang_vel: np.ndarray | None = None
    """Floating base angular velocity, body frame (rad/s)."""
    base_lin_acc: np.ndarray | None = None
    """Specific force the IMU's accelerometer measures, body frame (m/s^2; at rest it
    reads +g along world up)."""
    stamps: dict[str, float] = field(default_factory=dict)
    """When each measurement field above was last written (same clock as ``now``). A
    field written by two streams (the drone's attitude comes from ``odom`` and from
    ``imu``) carries the newer of the two."""

    def set(self, stamp: float, **values: np.ndarray | None) -> None:
        """Write measurement fields and date each of them ``stamp``."""
        for name, value in values.items():
            setattr(self, name, value)
            self.stamps[name] = stamp

    def age(self, name: str) -> float:
        """Seconds since the field was written (``inf``: never dated). A field without a
        stamp of its own is as old as the state (``state_stamp``)."""
        stamp = self.stamps.get(name, self.state_stamp)
        return float("inf") if stamp is None else self.now - stamp

    def fresh(self, name: str, max_age: float) -> bool:
        """The field is present, finite and between 0 and ``max_age`` seconds old (a
        stamp in the future means the clock stepped back: not fresh)."""
        return self.fresh_value(name, max_age) is not None

    def has(self, *names: str) -> bool:
        """True when every named field is present and finite."""
        return all(self.value(name) is not None for name in names)

    def value(self, name: str) -> np.ndarray | None:
        """The named field when it is present and finite (the rule of :meth:`has`), else
        ``None``. Filters bind it to a local and trip on ``None``: the checked value is
        the one they use."""
        value = getattr(self, name)
        # One reduction instead of isfinite + all: a NaN or inf anywhere makes the sum
        # non-finite (and so, fail-closed, does a sum overflowing past 1e308).
        if value is None or not math.isfinite(float(np.add.reduce(value, axis=None))):
            return None
        return value

    def fresh_value(self, name: str, max_age: float) -> np.ndarray | None:
        """The named field when it is :meth:`fresh` (present, finite, between 0 and
        ``max_age`` seconds old), else ``None``."""
        return self.value(name) if 0.0 <= self.age(name) <= max_age else None


@dataclass
class FilterReport:
    """What one filter did to one command."""

    name: str
    acted: bool = False
    """The output differs from the input (or the input was replaced)."""
    tripped: bool = False
    """The filter asks for the robot's safe action (stale data, e-stop, fall, ...)."""
    reason: str = ""
    """Human-readable cause when ``acted`` or ``tripped``."""
    change: float = 0.0
    """Largest absolute change the filter made to a finite element (command units)."""
    elements: list[int] = field(default_factory=list)
    """Indices of the elements the filter changed."""


def compare(name: str, before: np.ndarray, after: np.ndarray, reason: str) -> FilterReport:
    """A report from the input and output of a clamping filter."""
    if (before == after).all():  # the common case (NaN never compares equal)
        return FilterReport(name)
    finite = np.isfinite(before)
    changed = ~finite | (np.where(finite, before, 0.0) != after)
    if not changed.any():
        return FilterReport(name)
    diff = np.abs(np.where(finite, before, after) - after)
    return FilterReport(
        name,
        acted=True,
        reason=reason if finite.all() else f"non-finite input replaced; {reason}",
        change=float(diff.max()),
        elements=[int(i) for i in np.flatnonzero(changed)],
    )


@dataclass
class ChainOutput:
    """The result of one pass through a :class:`~sim2real.policies.safety.chain.SafetyChain`."""

    command: np.ndarray | None
    """The command to send to the robot; ``None`` only before any state has arrived."""
    mode: str
    """``"nominal"`` (the policy's command, possibly clamped), ``"safe"`` (the safe action)
    or ``"idle"`` (nothing to send yet)."""
    reports: list[FilterReport]
    reason: str = ""
    """Why the safe action is active, or why the input was rejected."""
    rejected: bool = False
    """The incoming command was refused (wrong length, non-finite) and not used."""
    change: float = 0.0
    """Largest absolute difference between the policy's command and the output."""

    @property
    def intervened(self) -> bool:
        """Any filter acted, the input was rejected, or the safe action is active."""
        return self.rejected or self.mode == "safe" or any(r.acted or r.tripped for r in self.reports)

    def acted_names(self) -> list[str]:
        return [r.name for r in self.reports if r.acted or r.tripped]
