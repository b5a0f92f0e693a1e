"""The leg odometry's kinematics against finite differences of MuJoCo's own foot
positions: the velocities it computes in one pass (it runs 500 times a second on the
real-time reader) are the feet's true velocities relative to the base."""

from __future__ import annotations

import mujoco
import numpy as np

from sim2real.sim.quadruped import constants as C
from sim2real.sim.quadruped.estimator import LegOdometry


def _rotate(quat: np.ndarray, gyro: np.ndarray, dt: float) -> np.ndarray:
    """``quat`` turned by the body-frame angular velocity ``gyro`` for ``dt`` s."""
    out = quat.copy()
    mujoco.mju_quatIntegrate(out, gyro, dt)
    return out


def test_feet_velocities_are_the_derivative_of_their_positions() -> None:
    odometry, rng, eps = LegOdometry(), np.random.default_rng(7), 1e-6
    for _ in range(10):
        quat = rng.normal(size=4)
        quat /= np.linalg.norm(quat)
        gyro, q, dq = rng.normal(size=3), C.DEFAULT_POSE + 0.3 * rng.normal(size=12), rng.normal(size=12)
        position, velocity = odometry.feet(quat, gyro, q, dq)
        position = position.copy()
        ahead, _ = odometry.feet(_rotate(quat, gyro, eps), gyro, q + eps * dq, dq)
        np.testing.assert_allclose(velocity, (ahead - position) / eps, atol=1e-4)


def test_standing_still_reads_no_motion_and_the_standing_height() -> None:
    odometry = LegOdometry()
    standing = np.full(4, 100.0)
    for _ in range(500):
        velocity, position = odometry.update(0.002, np.array([1.0, 0.0, 0.0, 0.0]), np.zeros(3),
                                             np.array([0.0, 0.0, 9.81]), C.DEFAULT_POSE, np.zeros(12), standing)
    np.testing.assert_allclose(velocity, 0.0, atol=1e-9)
    assert abs(position[2] - C.STANDING_HEIGHT) < 0.03
