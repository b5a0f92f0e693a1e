"""The offboard setpoints the backend streams, and how each goes on the wire.

PX4's offboard mode takes (v1.14 docs, "Offboard Mode", MAVLink messages):

* ``SET_ATTITUDE_TARGET`` with body rates and normalized thrust (:class:`RatesSetpoint`,
  the ``ctbr`` commands), or with an attitude and normalized thrust
  (:class:`AttitudeSetpoint`: PX4's attitude controller turns it into rates, its rate
  fields ignored);
* ``SET_POSITION_TARGET_LOCAL_NED`` in ``MAV_FRAME_LOCAL_NED`` with a position (optionally a
  velocity feed-forward) or a velocity alone (:class:`LocalSetpoint`), the ``type_mask``
  saying which fields count; PX4's position controller flies them.

Ours are in the task's world ENU; :mod:`.frames` turns them into PX4's local NED, whose
origin is ``home``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sim2real.hardware.px4 import frames

IGNORE_POSITION = 0b111
"""SET_POSITION_TARGET_LOCAL_NED type_mask bits 0-2: x, y, z ignored."""
IGNORE_VELOCITY = 0b111 << 3
"""Bits 3-5: vx, vy, vz ignored."""
IGNORE_ACCELERATION = 0b111 << 6
"""Bits 6-8: afx, afy, afz ignored (the backend never sends accelerations)."""
IGNORE_YAW, IGNORE_YAW_RATE = 1 << 10, 1 << 11
"""Bits 10 and 11: the heading is left to PX4 (it keeps the current one)."""


@dataclass(frozen=True)
class RatesSetpoint:
    """Body rates (FLU, rad/s) and normalized collective thrust (0..1)."""

    thrust: float
    rates: np.ndarray


@dataclass(frozen=True)
class AttitudeSetpoint:
    """An attitude (body FLU in world ENU, quaternion w x y z, unit) and normalized
    collective thrust (0..1)."""

    thrust: float
    attitude: np.ndarray

    def __post_init__(self) -> None:
        q = np.asarray(self.attitude)
        if q.shape != (4,) or not np.all(np.isfinite(q)) or abs(float(np.linalg.norm(q)) - 1.0) > 1e-3:
            raise ValueError(f"an attitude setpoint is a unit quaternion (w, x, y, z), got {self.attitude!r}")
        if not 0.0 <= self.thrust <= 1.0:
            raise ValueError(f"normalized thrust is in [0, 1], got {self.thrust!r}")

    def ned(self) -> np.ndarray:
        """The attitude as PX4 takes it: body FRD in local NED."""
        return frames.quat_enu_flu_to_ned_frd(np.asarray(self.attitude, dtype=np.float64))


@dataclass(frozen=True)
class LocalSetpoint:
    """A position (world ENU, m) with an optional velocity feed-forward, or a velocity alone
    (world ENU, m/s); at least one of the two."""

    position: np.ndarray | None
    velocity: np.ndarray | None

    def __post_init__(self) -> None:
        if self.position is None and self.velocity is None:
            raise ValueError("a local setpoint needs a position, a velocity or both")
        for name in ("position", "velocity"):
            value = getattr(self, name)
            if value is not None and (np.shape(value) != (3,) or not np.all(np.isfinite(value))):
                raise ValueError(f"a setpoint's {name} is 3 finite numbers (ENU), got {value!r}")

    def type_mask(self) -> int:
        mask = IGNORE_ACCELERATION | IGNORE_YAW | IGNORE_YAW_RATE
        if self.position is None:
            mask |= IGNORE_POSITION
        if self.velocity is None:
            mask |= IGNORE_VELOCITY
        return mask

    def ned(self, home: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(position, velocity) in PX4's local NED from ``home`` (zeros where ignored)."""
        position = np.zeros(3) if self.position is None else frames.enu_to_ned(np.asarray(self.position) - home)
        velocity = np.zeros(3) if self.velocity is None else frames.enu_to_ned(np.asarray(self.velocity))
        return position, velocity


Setpoint = RatesSetpoint | AttitudeSetpoint | LocalSetpoint
