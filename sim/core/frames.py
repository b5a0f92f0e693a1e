"""Rotations and what an IMU reads, for one body (batched versions live with the tasks
that need them, e.g. ``sim/drone/base.py: quat_to_mat``)."""

from __future__ import annotations

import numpy as np

GRAVITY: np.ndarray = np.array([0.0, 0.0, 9.81])
"""World-frame gravity's magnitude along +z (m/s^2), MuJoCo's default."""


def rotation(quat: np.ndarray) -> np.ndarray:
    """Body-to-world rotation matrix of a (w, x, y, z) quaternion (normalized here)."""
    w, x, y, z = np.asarray(quat, float) / max(float(np.linalg.norm(quat)), 1e-12)
    return np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
            [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
            [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
        ]
    )


def specific_force(quat: np.ndarray, velocity: np.ndarray, previous_velocity: np.ndarray, dt: float) -> np.ndarray:
    """The accelerometer's body-frame reading over the last ``dt`` seconds, from the
    world-frame velocity change (an IMU's delta-velocity output): a velocity kick (a
    simulated gust) shows in it, as an impact would on a real IMU, where ``qacc`` would
    miss it. At rest it reads ``+g`` along world up."""
    accel = (np.asarray(velocity, float) - np.asarray(previous_velocity, float)) / dt
    return rotation(quat).T @ (accel + GRAVITY)
