"""The Go2's own base-velocity estimate inside the batched task (``base_velocity: estimated``).

A real Go2 measures no base velocity; the Go2 backend estimates it with leg odometry
(:class:`~sim2real.sim.quadruped.estimator.LegOdometry`) from each ``rt/lowstate`` frame.
With this option the task's ``base_lin_vel`` observation is that estimate, so ``eval``,
``robustness`` and training judge a policy on what the robot will give it; rewards and
metrics keep the simulator's truth.

Each physics step's sensor readings (MuJoCo's, at the step's start: the IMU's orientation,
gyro and accelerometer, the motors' encoders, the feet's touch force) become one lowstate
frame, with the noise of :class:`~sim2real.sim.quadruped.lowstate.LowstateConfig`, fed to
one odometry per environment after the step. The observation therefore sees a frame one
physics step (5 ms) old: the deployment path's ``--state-delay-ms`` of a wired Go2 (2 ms)
rounded up to the step, as there. The frame rate is the physics rate (200 Hz; the robot
sends 500). Noise draws come from one generator per task (seeded by ``estimator_seed``):
like observation noise, they are not paired across evaluated controllers.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from sim2real.sim.quadruped import constants as c
from sim2real.sim.quadruped.estimator import EstimatorConfig, LegOdometry
from sim2real.sim.quadruped.frames import rotation_matrices
from sim2real.sim.quadruped.lowstate import LowstateConfig
from sim2real.sim.quadruped.scene import robot_spec

BASE_VELOCITY_SOURCES = ("true", "estimated")
"""What a quadruped task's ``base_lin_vel`` observation carries."""


class OnboardEstimate:
    """One leg odometry per environment, fed every physics step from the sensors."""

    def __init__(self, num_envs: int, sensor_index: Callable[[list[str]], np.ndarray | slice],
                 lowstate: LowstateConfig | None = None, estimator: EstimatorConfig | None = None,
                 seed: int = 0) -> None:
        self.lowstate = lowstate or LowstateConfig()
        model = robot_spec().compile()  # kinematics only; shared by every env's odometry
        self.odometry = [LegOdometry(estimator, model) for _ in range(num_envs)]
        self.rng = np.random.default_rng(seed)
        self.fed = np.zeros(num_envs, dtype=bool)
        """Whether an environment's estimate has had a frame since its reset."""
        self._quat = sensor_index(["imu_quat"])
        self._gyro = sensor_index(["imu_gyro"])
        self._accel = sensor_index(["imu_acc"])
        self._q = sensor_index([f"{n[:-6]}_q" for n in c.JOINT_NAMES])
        self._dq = sensor_index([f"{n[:-6]}_dq" for n in c.JOINT_NAMES])
        self._touch = sensor_index([f"{leg}_touch" for leg in c.LEGS])

    def reset(self, env_id: int) -> None:
        self.odometry[env_id].reset()
        self.fed[env_id] = False

    def feed(self, readings: np.ndarray, dt: float) -> None:
        """``readings [B, nstep, nsensordata]``: each physics step's sensors, oldest first."""
        gyro, accel, q, dq = self.lowstate.with_noise(
            self.rng, readings[:, :, self._gyro], readings[:, :, self._accel], readings[:, :, self._q],
            readings[:, :, self._dq])
        quat, touch = readings[:, :, self._quat], readings[:, :, self._touch]
        nstep = readings.shape[1]
        for b, odometry in enumerate(self.odometry):
            for s in range(nstep):
                odometry.update(dt, quat[b, s], gyro[b, s], accel[b, s], q[b, s], dq[b, s], touch[b, s])
        self.fed[:] = True

    def body_velocity(self, quat: np.ndarray, truth: np.ndarray) -> np.ndarray:
        """``[B, 3]`` estimates in the body frame of orientation ``quat [B, 4]``; an
        environment not fed since its reset (the deployment path, which never feeds it,
        or the first observation of an episode) reads ``truth`` (body frame)."""
        world = np.stack([o.velocity for o in self.odometry])
        body = np.einsum("bji,bj->bi", rotation_matrices(quat), world)
        return np.where(self.fed[:, None], body, truth)


def check_source(value: object) -> str:
    """The ``base_velocity`` option, or :class:`ValueError` naming the choices."""
    if value not in BASE_VELOCITY_SOURCES:
        raise ValueError(f"must be one of {', '.join(BASE_VELOCITY_SOURCES)}, got {value!r}")
    return str(value)

