"""Batched rotation helpers (quaternions are MuJoCo's ``w, x, y, z``; arrays ``[..., 4]``)."""

from __future__ import annotations

import numpy as np


def quat_mul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Hamilton product ``a * b`` (apply ``b`` first, then ``a``)."""
    aw, ax, ay, az = np.moveaxis(np.asarray(a, dtype=float), -1, 0)
    bw, bx, by, bz = np.moveaxis(np.asarray(b, dtype=float), -1, 0)
    return np.stack(
        [
            aw * bw - ax * bx - ay * by - az * bz,
            aw * bx + ax * bw + ay * bz - az * by,
            aw * by - ax * bz + ay * bw + az * bx,
            aw * bz + ax * by - ay * bx + az * bw,
        ],
        axis=-1,
    )


def quat_conj(q: np.ndarray) -> np.ndarray:
    """Inverse of a unit quaternion."""
    return np.asarray(q, dtype=float) * np.array([1.0, -1.0, -1.0, -1.0])


def quat_to_rotvec(q: np.ndarray) -> np.ndarray:
    """Rotation vector (axis * angle, angle in [0, pi]) of unit quaternions, ``[..., 3]``."""
    q = np.asarray(q, dtype=float)
    # q and -q are the same rotation; pick w >= 0 so the angle is at most pi.
    q = np.where(q[..., :1] < 0, -q, q)
    w = np.clip(q[..., 0], -1.0, 1.0)
    v = q[..., 1:]
    s = np.linalg.norm(v, axis=-1)
    angle = 2.0 * np.arctan2(s, w)
    # angle / s -> 2 / w as s -> 0 (first-order expansion), avoiding 0/0.
    scale = np.where(s > 1e-9, angle / np.maximum(s, 1e-12), 2.0 / np.maximum(w, 1e-12))
    return v * scale[..., None]


def rotvec_to_quat(v: np.ndarray) -> np.ndarray:
    """Unit quaternions of rotation vectors ``[..., 3]``."""
    v = np.asarray(v, dtype=float)
    angle = np.linalg.norm(v, axis=-1)
    half = 0.5 * angle
    # sin(half) / angle -> 1/2 as angle -> 0.
    k = np.where(angle > 1e-9, np.sin(half) / np.maximum(angle, 1e-12), 0.5)
    return np.concatenate([np.cos(half)[..., None], v * k[..., None]], axis=-1)


def quat_to_mat(q: np.ndarray) -> np.ndarray:
    """Rotation matrices ``[..., 3, 3]`` of unit quaternions."""
    w, x, y, z = np.moveaxis(np.asarray(q, dtype=float), -1, 0)
    return np.stack(
        [
            np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)], axis=-1),
            np.stack([2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)], axis=-1),
            np.stack([2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)], axis=-1),
        ],
        axis=-2,
    )


def quat_to_rot6d(q: np.ndarray) -> np.ndarray:
    """Continuous 6D orientation (Zhou et al. 2019): the first two columns of the
    rotation matrix, ``[..., 6]`` as (x-axis, y-axis) of the body frame in the world."""
    m = quat_to_mat(q)
    return np.concatenate([m[..., :, 0], m[..., :, 1]], axis=-1)


def rot6d_to_mat(r: np.ndarray) -> np.ndarray:
    """Rotation matrices from 6D vectors (Gram-Schmidt on the two columns)."""
    r = np.asarray(r, dtype=float)
    a, b = r[..., :3], r[..., 3:6]
    x = a / np.linalg.norm(a, axis=-1, keepdims=True)
    b = b - np.sum(x * b, axis=-1, keepdims=True) * x
    y = b / np.linalg.norm(b, axis=-1, keepdims=True)
    z = np.cross(x, y)
    return np.stack([x, y, z], axis=-1)


def mat_to_quat(m: np.ndarray) -> np.ndarray:
    """Unit quaternions (w >= 0) of rotation matrices ``[..., 3, 3]`` (Shepperd's method:
    divide by the largest of the four candidate components for numerical stability)."""
    m = np.asarray(m, dtype=float)
    m00, m01, m02 = m[..., 0, 0], m[..., 0, 1], m[..., 0, 2]
    m10, m11, m12 = m[..., 1, 0], m[..., 1, 1], m[..., 1, 2]
    m20, m21, m22 = m[..., 2, 0], m[..., 2, 1], m[..., 2, 2]
    candidates = np.stack(
        [
            np.stack([1 + m00 + m11 + m22, m21 - m12, m02 - m20, m10 - m01], axis=-1),
            np.stack([m21 - m12, 1 + m00 - m11 - m22, m01 + m10, m02 + m20], axis=-1),
            np.stack([m02 - m20, m01 + m10, 1 - m00 + m11 - m22, m12 + m21], axis=-1),
            np.stack([m10 - m01, m02 + m20, m12 + m21, 1 - m00 - m11 + m22], axis=-1),
        ],
        axis=-2,
    )
    # Row k has 4 q_k * q; the row with the largest diagonal entry is the best conditioned.
    diag = np.stack([candidates[..., k, k] for k in range(4)], axis=-1)
    best = np.argmax(diag, axis=-1)
    q = np.take_along_axis(candidates, best[..., None, None].repeat(4, axis=-1), axis=-2)[..., 0, :]
    q = q / np.linalg.norm(q, axis=-1, keepdims=True)
    return np.where(q[..., :1] < 0, -q, q)
