"""``sensor_msgs/JointState`` -> the simulator's joint order, refusing anything a safety
filter should not see: a joint missing or unknown, duplicated names, arrays of the
wrong length, NaN or infinite values. A refused message changes nothing (the previous
state ages and the backend's staleness check takes over)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


class Refused(ValueError):
    """A joint state the backend will not use; ``reason`` is the counter's name."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason = reason


Values = Sequence[float] | np.ndarray
"""A JointState array: rclpy gives ``array.array('d')``; tests give lists or numpy."""


def reorder(names: Sequence[str], position: Values, velocity: Values, effort: Values,
            expected: Sequence[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """``(position, velocity, effort or None)`` in the order of ``expected``.

    Raises:
        Refused: the message does not name exactly ``expected`` (any order), an array's
            length differs from the names', velocities are missing, or a value is not finite.
    """
    names = list(names)
    if len(set(names)) != len(names):
        raise Refused("duplicate_joint", f"names repeat: {names}")
    unknown = sorted(set(names) - set(expected))
    if unknown:
        raise Refused("unknown_joint", f"not a joint of this arm: {unknown}")
    missing = [n for n in expected if n not in names]
    if missing:
        raise Refused("missing_joint", f"no value for {missing}")
    n = len(names)
    if len(position) != n or len(velocity) != n or len(effort) not in (0, n):
        raise Refused("length", f"{n} names, {len(position)} positions, {len(velocity)} velocities, "
                                f"{len(effort)} efforts")
    order = [names.index(name) for name in expected]
    pos = np.asarray(position, dtype=np.float64)[order]
    vel = np.asarray(velocity, dtype=np.float64)[order]
    eff = np.asarray(effort, dtype=np.float64)[order] if len(effort) else None
    if not (np.all(np.isfinite(pos)) and np.all(np.isfinite(vel)) and (eff is None or np.all(np.isfinite(eff)))):
        raise Refused("non_finite", "NaN or infinite joint value")
    return pos, vel, eff
