"""The Go2's own base-velocity estimate in a simulated loop: what ``rt/lowstate`` carries,
read from a MuJoCo model (ours or a foreign one), with the sensors' noise and the link's
latency, fed to the robot's leg odometry (:class:`~sim2real.sim.quadruped.estimator.LegOdometry`).

A real Go2 measures no base velocity; the Go2 backend estimates it from each lowstate
frame. :class:`EstimatorInTheLoop` does the same beside a simulation: after each physics
step it takes a frame at (at most) the robot's state rate: the trunk's IMU (orientation,
body-frame gyro, body-frame specific force: the model's accelerometer sensor on the trunk
where it has one, else computed from the trunk's acceleration and gravity, as that sensor
would), joint angles and velocities and each foot's contact force (the normal force of
MuJoCo's contacts between the foot geom and the world, newtons). Noise is added to the
gyro, accelerometer and joints; the frame reaches the estimator ``delay_ms`` later (rounded
up to the physics step), as the host receives it.

MuJoCo computes the IMU, contacts and accelerometer of a step at the step's start, so they
are one physics step older than the joint angles read after it, as in the Go2 emulator.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, fields

import mujoco
import numpy as np

from sim2real.sim.core.errors import ConfigError
from sim2real.sim.quadruped.estimator import EstimatorConfig, LegOdometry
from sim2real.sim.quadruped.foreign import ForeignQuadruped


@dataclass(frozen=True)
class LowstateConfig:
    """The simulated lowstate's rate, latency and sensor noise (Gaussian standard deviations).

    The defaults are near a real Go2's: its low-level state at 500 Hz over wired DDS (a
    couple of milliseconds from the motor boards to the host), a MEMS IMU of the BMI088 class
    (gyro noise density 0.014 deg/s/sqrt(Hz), accelerometer 175 ug/sqrt(Hz), over the
    250 Hz bandwidth of a 500 Hz stream: about 0.004 rad/s and 0.03 m/s^2, rounded up for
    vibration) and the motors' encoders (joint velocity differentiated on the motor board)."""

    state_rate_hz: float = 500.0
    """Frames per second at most (the physics step limits it: our model's 5 ms step gives 200)."""
    delay_ms: float = 2.0
    """Milliseconds from a frame's sampling to the estimator (rounded up to the physics step)."""
    gyro_noise: float = 0.005
    """rad/s."""
    accel_noise: float = 0.05
    """m/s^2."""
    joint_noise: float = 0.001
    """rad."""
    joint_vel_noise: float = 0.05
    """rad/s."""

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            rate = f.name == "state_rate_hz"
            if not math.isfinite(value) or value < 0 or (rate and value == 0):
                raise ConfigError(f.name, f"{value!r} must be finite and {'positive' if rate else '>= 0'}")

    def with_noise(self, rng: np.random.Generator, gyro: np.ndarray, accel: np.ndarray, q: np.ndarray,
                   dq: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The sensors as the robot reports them: each reading plus its Gaussian noise
        (any leading shape: one frame, or a batch of frames)."""
        noise = rng.normal
        return (gyro + noise(0.0, self.gyro_noise, gyro.shape), accel + noise(0.0, self.accel_noise, accel.shape),
                q + noise(0.0, self.joint_noise, q.shape), dq + noise(0.0, self.joint_vel_noise, dq.shape))


def _rigid_to(model: mujoco.MjModel, body: int, root: int) -> bool:
    """Whether ``body`` moves rigidly with ``root`` (no joint between them)."""
    while body != root:
        if body == 0 or model.body_jntnum[body]:
            return False
        body = int(model.body_parentid[body])
    return True


class SimulatedLowstate:
    """One frame of a Go2's lowstate from a model's MuJoCo data, in our joint order."""

    def __init__(self, robot: ForeignQuadruped) -> None:
        m = self.model = robot.model
        self.robot, self.base = robot, robot.base
        acc = [s for s in range(m.nsensor) if m.sensor_type[s] == mujoco.mjtSensor.mjSENS_ACCELEROMETER
               and _rigid_to(m, int(m.site_bodyid[m.sensor_objid[s]]), robot.root)]
        self.accel_sensor = acc[0] if acc else None
        """The model's accelerometer on the trunk (None: the specific force is computed)."""
        self._is_foot = np.zeros(m.ngeom, dtype=bool)
        self._is_foot[robot.feet] = True
        self._leg_of = np.full(m.ngeom, -1)
        self._leg_of[robot.feet] = np.arange(4)
        self._robot_geom = robot.robot[m.geom_bodyid]
        self._six = np.zeros(6)
        self._qvel: np.ndarray | None = None

    def start(self, data: mujoco.MjData) -> None:
        """Before the first physics step (an episode's start): the velocities it starts from."""
        self._qvel = data.qvel.copy()

    def stepped(self, data: mujoco.MjData) -> None:
        """After every physics step, read or not: its velocities start the next one."""
        if self._qvel is None:
            self._qvel = data.qvel.copy()
        else:
            self._qvel[:] = data.qvel

    def specific_force(self, data: mujoco.MjData) -> np.ndarray:
        """The accelerometer (body frame, m/s^2; +9.81 up when still) at the start of the
        physics step just taken, where MuJoCo computed its accelerations."""
        m, s = self.model, self.accel_sensor
        rot = data.xmat[self.base].reshape(3, 3)
        if s is not None:
            site = int(m.sensor_objid[s])
            reading = data.sensordata[m.sensor_adr[s]:m.sensor_adr[s] + 3]
            return rot.T @ (data.site_xmat[site].reshape(3, 3) @ reading)
        # What MuJoCo runs for an accelerometer sensor (cacc), on the step's starting velocities
        # (the step has already integrated qvel; cacc's Coriolis term reads it).
        now = data.qvel.copy()
        if self._qvel is not None:
            data.qvel[:] = self._qvel
        mujoco.mj_rnePostConstraint(m, data)
        data.qvel[:] = now
        mujoco.mj_objectAcceleration(m, data, mujoco.mjtObj.mjOBJ_XBODY, self.base, self._six, 1)
        return self._six[3:6].copy()

    def foot_force(self, data: mujoco.MjData) -> np.ndarray:
        """Per foot (FR, FL, RR, RL), the summed normal force of its contacts with the world (N)."""
        out = np.zeros(4)
        n = data.ncon
        if not n:
            return out
        pairs = np.array(data.contact.geom[:n], dtype=int).reshape(n, 2)
        foot = self._is_foot[pairs] & ~self._robot_geom[pairs[:, ::-1]]
        for i in np.flatnonzero(foot.any(axis=1)):
            mujoco.mj_contactForce(self.model, data, int(i), self._six)
            out[self._leg_of[pairs[i][foot[i]][0]]] += self._six[0]
        return out

    def read(self, data: mujoco.MjData) -> tuple[np.ndarray, ...]:
        """(quat w x y z, gyro, specific force, q, dq, foot force): the state after a physics step."""
        mujoco.mj_objectVelocity(self.model, data, mujoco.mjtObj.mjOBJ_XBODY, self.base, self._six, 1)
        gyro = self._six[0:3].copy()
        r = self.robot
        return (data.xquat[self.base].copy(), gyro, self.specific_force(data), data.qpos[r.qpos].copy(),
                data.qvel[r.dof].copy(), self.foot_force(data))


class EstimatorInTheLoop:
    """The robot's leg odometry fed with a simulated lowstate; call :meth:`physics_step`
    after every physics step (``ForeignQuadruped.step_control(..., on_physics_step=...)``)."""

    def __init__(self, robot: ForeignQuadruped, lowstate: LowstateConfig | None = None,
                 estimator: EstimatorConfig | None = None, rng: np.random.Generator | None = None) -> None:
        self.config = lowstate or LowstateConfig()
        self.sensor = SimulatedLowstate(robot)
        self.odometry = LegOdometry(estimator)
        self.rng = rng or np.random.default_rng()
        self._queue: deque[tuple[float, tuple[np.ndarray, ...]]] = deque()
        self._period = 1.0 / self.config.state_rate_hz
        self._next_sample = -math.inf
        self._last_fed: float | None = None

    @property
    def velocity(self) -> np.ndarray:
        """The newest estimate of the base's velocity (world frame, m/s)."""
        return self.odometry.velocity.copy()

    def start(self, data: mujoco.MjData) -> None:
        """At the episode's start, before the first physics step."""
        self.sensor.start(data)

    def physics_step(self, data: mujoco.MjData) -> None:
        cfg, timestep = self.config, float(self.sensor.model.opt.timestep)
        stamp = float(data.time) - timestep  # the step's start, where MuJoCo computed the IMU and contacts
        if stamp >= self._next_sample - 1e-9:
            self._next_sample = stamp + self._period
            quat, gyro, accel, q, dq, feet = self.sensor.read(data)
            frame = (quat, *cfg.with_noise(self.rng, gyro, accel, q, dq), feet)
            self._queue.append((stamp, frame))
        self.sensor.stepped(data)
        arrived = float(data.time) - cfg.delay_ms * 1e-3
        while self._queue and self._queue[0][0] <= arrived + 1e-9:
            when, frame = self._queue.popleft()
            dt = self._period if self._last_fed is None else when - self._last_fed
            self._last_fed = when
            self.odometry.update(dt, *frame)
