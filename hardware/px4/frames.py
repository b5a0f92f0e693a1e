"""Our frames <-> PX4's, in one place (both the emulator and the backend use it).

Ours: world ENU (x east, y north, z up), body FLU (x forward, y left, z up),
quaternions (w, x, y, z) body to world. PX4's (MAVLink ``LOCAL_POSITION_NED``,
``ATTITUDE_QUATERNION``, ``HIGHRES_IMU``, ``SET_ATTITUDE_TARGET``): local NED (x north,
y east, z down), body FRD (x forward, y right, z down), quaternions (w, x, y, z) FRD to
NED. The same rotations as MAVROS's ``ftf`` (ENU<->NED: swap x and y, negate z;
FLU<->FRD: negate y and z).
"""

from __future__ import annotations

import mujoco
import numpy as np

ENU_TO_NED = np.array([[0.0, 1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, -1.0]])
"""A world vector in ENU -> the same vector in NED (its own inverse)."""
FLU_TO_FRD = np.diag([1.0, -1.0, -1.0])
"""A body vector in FLU -> the same vector in FRD (its own inverse)."""


def enu_to_ned(v: np.ndarray) -> np.ndarray:
    """A world vector (position, velocity, acceleration) from ENU to NED (or back)."""
    return ENU_TO_NED @ np.asarray(v, dtype=np.float64)


ned_to_enu = enu_to_ned


def flu_to_frd(v: np.ndarray) -> np.ndarray:
    """A body vector (rates, specific force) from FLU to FRD (or back)."""
    return FLU_TO_FRD @ np.asarray(v, dtype=np.float64)


frd_to_flu = flu_to_frd


def _quat(matrix: np.ndarray) -> np.ndarray:
    q = np.zeros(4)
    mujoco.mju_mat2Quat(q, np.ascontiguousarray(matrix, dtype=np.float64).reshape(9))
    return q if q[0] >= 0 else -q


def _matrix(quat: np.ndarray) -> np.ndarray:
    m = np.zeros(9)
    mujoco.mju_quat2Mat(m, np.asarray(quat, dtype=np.float64))
    return m.reshape(3, 3)


def quat_enu_flu_to_ned_frd(quat: np.ndarray) -> np.ndarray:
    """Attitude FLU->ENU (w, x, y, z) as PX4's FRD->NED (w, x, y, z), scalar non-negative."""
    return _quat(ENU_TO_NED @ _matrix(quat) @ FLU_TO_FRD)


def quat_ned_frd_to_enu_flu(quat: np.ndarray) -> np.ndarray:
    """PX4's attitude FRD->NED as ours, FLU->ENU."""
    return _quat(ENU_TO_NED @ _matrix(quat) @ FLU_TO_FRD)
