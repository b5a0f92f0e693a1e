"""Base velocity and position of a Go2 from its low-level state alone.

The quadruped's policies observe the base's linear velocity, which ``rt/lowstate`` does
not carry (the Go2's sport mode estimates it on the robot; in low-level mode nothing
does). This estimator is the common leg-kinematics one: a foot pressing on the ground
(foot force above a threshold) is assumed still, so the base moves at minus that foot's
velocity relative to the base, ``-(J(q) dq + w x r)`` in the world frame, from the
robot's own MuJoCo model (the same kinematics the policy trained on). Stance feet are
averaged and fused with the accelerometer integrated in the world frame (a
complementary filter: the accelerometer carries the swing phases and smooths the
footfalls, the legs remove its drift). The base height is the stance feet's depth below
the base (flat ground); x and y integrate the velocity.
"""

from __future__ import annotations

from dataclasses import dataclass

import mujoco
import numpy as np

from sim2real.sim.quadruped import constants as C
from sim2real.sim.quadruped.scene import robot_spec

GRAVITY = np.array([0.0, 0.0, -9.81])


@dataclass
class EstimatorConfig:
    """How much the estimator trusts the legs against the accelerometer."""

    contact_threshold: float = 20.0
    """Foot force above which a foot counts as standing (the emulator sends newtons; a real
    Go2's ``foot_force`` is an uncalibrated count: check what it reads standing)."""
    velocity_time_constant: float = 0.03
    """Seconds over which the legs' velocity corrects the integrated accelerometer."""
    height_time_constant: float = 0.05
    """Seconds over which the stance legs correct the base height."""
    initial_height: float = C.STANDING_HEIGHT
    """Base height (m) before any foot has touched."""


class LegOdometry:
    """One robot's base velocity (world frame) and position from its legs and IMU."""

    def __init__(self, config: EstimatorConfig | None = None, model: mujoco.MjModel | None = None) -> None:
        self.config = config or EstimatorConfig()
        self.model = robot_spec().compile() if model is None else model  # read-only: estimators may share it
        self.data = mujoco.MjData(self.model)
        self.site_ids = [self.model.site(f"{leg}_foot").id for leg in C.LEGS]
        self._site_velocity = np.zeros((4, 6))
        self._base_body = int(self.model.jnt_bodyid[0])  # the free joint's
        self.velocity = np.zeros(3)
        self.position = np.array([0.0, 0.0, self.config.initial_height])
        self.stance = np.zeros(4, dtype=bool)

    def reset(self) -> None:
        self.velocity[:] = 0.0
        self.position[:] = (0.0, 0.0, self.config.initial_height)

    def feet(self, quat: np.ndarray, gyro: np.ndarray, q: np.ndarray, dq: np.ndarray
             ) -> tuple[np.ndarray, np.ndarray]:
        """Feet positions and velocities ``[4, 3]`` relative to the base, world frame.

        One pass of MuJoCo's forward kinematics and body velocities, then each foot's
        velocity in C (``mj_objectVelocity``): this runs for every state frame, 500 times a
        second, on the robot computer's real-time reader thread, where four Jacobians and
        their products in numpy cost several times more."""
        m, d = self.model, self.data
        d.qpos[0:3], d.qpos[3:7], d.qpos[7:19] = 0.0, quat / np.linalg.norm(quat), q
        d.qvel[0:3], d.qvel[3:6], d.qvel[6:18] = 0.0, gyro, dq  # free joint: angular velocity in the body frame
        mujoco.mj_kinematics(m, d)
        mujoco.mj_comPos(m, d)
        mujoco.mj_comVel(m, d)
        for row, site in zip(self._site_velocity, self.site_ids, strict=True):
            mujoco.mj_objectVelocity(m, d, mujoco.mjtObj.mjOBJ_SITE, site, row, 0)  # [angular, linear], world axes
        return d.site_xpos[self.site_ids], self._site_velocity[:, 3:].copy()

    def update(self, dt: float, quat: np.ndarray, gyro: np.ndarray, accel: np.ndarray, q: np.ndarray,
               dq: np.ndarray, foot_force: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """One state frame ``dt`` s after the previous; returns (velocity, position), world frame."""
        cfg = self.config
        dt = min(max(float(dt), 0.0), 0.05)
        pos, vel = self.feet(quat, gyro, q, dq)
        rot = self.data.xmat[self._base_body].reshape(3, 3)  # the normalized quaternion's, from feet()
        predicted = self.velocity + (rot @ accel + GRAVITY) * dt
        self.stance = np.asarray(foot_force) > cfg.contact_threshold
        standing = int(self.stance.sum())
        if standing:
            # The point that stands still is the foot sphere's contact, not its centre: a
            # rolling foot's centre moves at w x (r z) over it (the calf turns through the
            # stance), which read the trot's speed 8-9 % low.
            spin = self._site_velocity[:, :3]
            vel[:, 0] -= C.FOOT_RADIUS * spin[:, 1]
            vel[:, 1] += C.FOOT_RADIUS * spin[:, 0]
            legs = vel.T @ self.stance / -standing
            gain = dt / (cfg.velocity_time_constant + dt)
            self.velocity = predicted + gain * (legs - predicted)
            height = -float(self.stance @ pos[:, 2]) / standing + C.FOOT_RADIUS
            self.position[2] += dt / (cfg.height_time_constant + dt) * (height - self.position[2])
        else:
            self.velocity = predicted
            self.position[2] += self.velocity[2] * dt
        self.position[0:2] += self.velocity[0:2] * dt
        return self.velocity.copy(), self.position.copy()
