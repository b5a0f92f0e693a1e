"""Batched frame conversions for the floating base (quaternions are w, x, y, z)."""

from __future__ import annotations

import numpy as np


def _quadratic_form() -> np.ndarray:
    """``[16, 9]`` map from the outer product ``q q^T`` (flattened) to the 9 entries of
    the rotation matrix, which are quadratic forms of the quaternion."""
    w, x, y, z = range(4)
    entries = [  # (coefficient, i, j) per entry, row-major
        [(1, w, w), (1, x, x), (-1, y, y), (-1, z, z)],
        [(2, x, y), (-2, w, z)],
        [(2, x, z), (2, w, y)],
        [(2, x, y), (2, w, z)],
        [(1, w, w), (-1, x, x), (1, y, y), (-1, z, z)],
        [(2, y, z), (-2, w, x)],
        [(2, x, z), (-2, w, y)],
        [(2, y, z), (2, w, x)],
        [(1, w, w), (-1, x, x), (-1, y, y), (1, z, z)],
    ]
    table = np.zeros((4, 4, 9))
    for k, terms in enumerate(entries):
        for coef, i, j in terms:
            table[i, j, k] += coef
    return table.reshape(16, 9)


_QUAT_TO_ROT = _quadratic_form()


def rotation_matrices(quat: np.ndarray) -> np.ndarray:
    """Body-to-world rotation matrices ``[B, 3, 3]`` of unit quaternions ``[B, 4]``.

    One outer product and one matrix product for the whole batch: the per-step
    cost of these small arrays is the number of numpy calls, not the arithmetic."""
    outer = (quat[:, :, None] * quat[:, None, :]).reshape(-1, 16)
    return (outer @ _QUAT_TO_ROT).reshape(-1, 3, 3)


def yaw_quat(angle: float) -> np.ndarray:
    """Quaternion of a rotation by ``angle`` about the world z axis."""
    return np.array([np.cos(angle / 2), 0.0, 0.0, np.sin(angle / 2)])


def world_to_heading(yaw_angle: np.ndarray, vec_xy: np.ndarray) -> np.ndarray:
    """Rotate world-frame xy vectors ``[B, ..., 2]`` into the heading (yaw-only) frame."""
    cos = np.cos(yaw_angle)[:, None] if vec_xy.ndim == 3 else np.cos(yaw_angle)
    sin = np.sin(yaw_angle)[:, None] if vec_xy.ndim == 3 else np.sin(yaw_angle)
    x, y = vec_xy[..., 0], vec_xy[..., 1]
    return np.stack([cos * x + sin * y, -sin * x + cos * y], axis=-1)
