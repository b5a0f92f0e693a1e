"""The drone's descent without odometry: what the hover-then-land fallback flies when
position and velocity are lost (and perhaps the IMU too).

Nothing here cuts thrust early. The descent is flown on a dead-reckoned velocity that
starts from the last known velocity. While the IMU is fresh its accelerometer drives
it (the specific force turned to the world frame, minus gravity); without it the
commanded thrust does (through the motors' lag and the thrust gain, with gravity and
the rotors' linear drag). The thrust gain is only known to lie in a band
(:class:`~.thrust_model.GainBand`: the description's, narrowed by what was learned in
flight), so without the IMU the dead reckoning runs three times, for the heaviest
plausible drone, the estimate and the lightest: the velocity is affine in the gain, so
every plausible drone lies between the two outer ones. The collective thrust holds the
estimate at the descent speed, but never so much that the lightest plausible drone
would sink slower than ``min_descent_speed`` (it must come down: a drone that climbs
blind is the worst case) and, where that allows, never so little that the heaviest
would sink faster than ``max_descent_speed``. The attitude is the IMU's while it is
fresh, otherwise the last known attitude turned by the body rates that were sent since
(the flight controller's rate loop tracks them). The thrust axis is steered to brake
the horizontal velocity (tilting at most ``max_brake_tilt``) and then to level. The
motors spin down only once every plausible drone is down (the lightest one's height)
and the last known height would have been covered at ``speed_margin`` of the descent
speed, each plus ``ground_seconds``: the drone is down by then unless the dead
reckoning was wrong by more than that margin, and even then the spin-down
(``spin_down_seconds``) lets it sink rather than drop.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sim2real.policies.safety.thrust_model import GainBand
from sim2real.policies.safety.types import SafetyState
from sim2real.sim.core.frames import rotation
from sim2real.sim.drone import constants as C
from sim2real.sim.drone.airframe import CRAZYFLIE, Airframe


def levelling_rates(R: np.ndarray, gain: float) -> tuple[float, float]:
    """Roll and pitch rates ``(-k R21, k R20)`` that turn body z toward world up:
    ``d(R22)/dt = R20 wy - R21 wx = k (R20^2 + R21^2) >= 0`` under rate tracking."""
    return -gain * float(R[2, 1]), gain * float(R[2, 0])


def pointing_rates(R: np.ndarray, axis: np.ndarray, gain: float) -> tuple[float, float]:
    """Roll and pitch rates ``k R^T (z_body x axis)`` that turn body z toward the unit
    world ``axis`` (for world up these are :func:`levelling_rates`)."""
    w = R.T @ np.cross(R[:, 2], axis)
    return gain * float(w[0]), gain * float(w[1])


def _turn(R: np.ndarray, rates: np.ndarray, dt: float) -> np.ndarray:
    """``R`` after body rates ``rates`` for ``dt`` seconds (Rodrigues)."""
    angle = float(np.linalg.norm(rates)) * dt
    if angle < 1e-12:
        return R
    k = rates / np.linalg.norm(rates)
    K = np.array([[0.0, -k[2], k[1]], [k[2], 0.0, -k[0]], [-k[1], k[0], 0.0]])
    return R @ (np.eye(3) + np.sin(angle) * K + (1.0 - np.cos(angle)) * (K @ K))


@dataclass
class BlindDescentParams:
    descent_speed: float = 0.7
    """Vertical speed (m/s) the descent aims for, on its dead-reckoned speed."""
    min_descent_speed: float = 0.25
    """Without the IMU, the lightest plausible drone sinks at least this fast (m/s)."""
    max_descent_speed: float = 1.2
    """...and, where that allows, the heaviest at most this fast (m/s; the touchdown
    bound is 1.5)."""
    speed_gain: float = 3.0
    """Vertical acceleration (m/s^2) asked per m/s of speed error."""
    max_accel: float = 3.0
    """Largest vertical acceleration (m/s^2) the speed loop asks for, up or down."""
    brake_gain: float = 1.5
    """Horizontal deceleration (m/s^2) asked per m/s of dead-reckoned horizontal speed."""
    max_brake_tilt: float = 0.35
    """Largest tilt (rad, 20 deg) the braking may ask for."""
    level_gain: float = 4.0
    """Rate (rad/s) per unit of misalignment between body z and the wanted thrust axis."""
    speed_margin: float = 0.4
    """The motors stop after the last known height at this fraction of the descent speed..."""
    ground_seconds: float = 2.0
    """...plus this many seconds."""
    spin_down_seconds: float = 4.0
    """Then the thrust ramps to zero over this long rather than stopping at once: should
    an unseen gust have kept the drone up, it sinks instead of dropping."""
    ceiling: float = 2.5
    """Height (m) assumed when no height was ever measured."""
    max_seconds: float = 30.0
    """Whatever the dead reckoning says, the motors spin down this long after the loss
    (a drone caught up somewhere, an accelerometer's bias)."""
    thrust_max: float | None = None
    """Collective thrust bound (N; None: 90 % of the airframe's)."""

    def validate(self) -> None:
        positive = (self.descent_speed, self.speed_gain, self.max_accel, self.level_gain, self.ceiling,
                    self.min_descent_speed, self.max_seconds)
        if not (min(positive) > 0 and self.brake_gain >= 0 and 0 <= self.max_brake_tilt < 1.2
                and 0 < self.speed_margin <= 1 and self.ground_seconds >= 0
                and self.spin_down_seconds >= 0 and (self.thrust_max is None or self.thrust_max > 0)
                and self.min_descent_speed <= self.descent_speed <= self.max_descent_speed):
            raise ValueError("blind descent: speeds, gains, accelerations, the ceiling and max_seconds must be "
                             "> 0 (thrust_max too), max_brake_tilt in [0, 1.2) rad, speed_margin in (0, 1], "
                             "min_descent_speed <= descent_speed <= max_descent_speed")


class BlindDescent:
    """One descent without odometry, from the last state the chain saw.

    Args:
        state: The chain's state when odometry was found missing: its ``base_*`` fields
            are the last known values, dated by ``state.stamps``.
        last_command: The command sent since (``[thrust N, body rates rad/s]``); the
            dead reckoning runs it from the loss to now (hover thrust if unknown).
        attitude_timeout: Attitude older than this (s) is dead-reckoned.
        gains: The plausible thrust gains (:meth:`.thrust_model.ThrustGain.band`).
        airframe: The vehicle dead-reckoned: its mass, drag, motor lag, resting height.
    """

    HEAVY, ESTIMATE, LIGHT = 0, 1, 2
    """Rows of the dead reckoning: the lowest gain, the estimate, the highest."""

    def __init__(self, params: BlindDescentParams, state: SafetyState, last_command: np.ndarray | None,
                 attitude_timeout: float, gains: GainBand, airframe: Airframe = CRAZYFLIE) -> None:
        params.validate()
        self.params = params
        self.airframe = af = airframe
        self.thrust_max = 0.9 * af.max_collective_thrust if params.thrust_max is None else params.thrust_max
        self.gains = gains.as_array()
        self.attitude_timeout = attitude_timeout
        pos, vel, quat = state.value("base_pos"), state.value("base_lin_vel"), state.value("base_quat")
        known = pos is not None
        lost_at = state.now - state.age("base_pos") if known and np.isfinite(state.age("base_pos")) else state.now
        self.lost_at = min(lost_at, state.now)
        self.heights = np.full(3, float(pos[2]) if pos is not None else params.ceiling)
        """Dead-reckoned heights (m) per row."""
        start = np.asarray(vel, float).copy() if vel is not None else np.zeros(3)
        self.velocities = np.tile(start, (3, 1))
        """Dead-reckoned world-frame velocities (m/s) per row."""
        self.R = rotation(quat) if quat is not None else np.eye(3)
        last = np.asarray(last_command, float) if last_command is not None else np.zeros(0)
        if last.shape != (4,) or not np.all(np.isfinite(last)):
            last = np.array([af.hover_thrust, 0.0, 0.0, 0.0])
        self.command = last.copy()
        self.thrust = float(np.clip(last[0], 0.0, self.thrust_max))
        """The thrust the motors produce (first-order lag behind the command)."""
        self.time = self.lost_at
        self.static_cut = self.lost_at + max(self.heights[0] - af.rest_height, 0.0) / (
            params.speed_margin * params.descent_speed) + params.ground_seconds
        """The last known height covered at the slowest credible speed."""
        self.down_at = np.inf
        """When the lightest plausible drone reached the ground (dead-reckoned)."""

    @property
    def velocity(self) -> np.ndarray:
        """The estimate's dead-reckoned velocity."""
        return self.velocities[self.ESTIMATE]

    @property
    def cut_at(self) -> float:
        """When the motors start to spin down: every plausible drone down, the static bound passed."""
        p = self.params
        return min(max(self.static_cut, self.down_at + p.ground_seconds), self.lost_at + p.max_seconds)

    def attitude_known(self, state: SafetyState) -> bool:
        return state.fresh("base_quat", self.attitude_timeout)

    @property
    def motors_off(self) -> bool:
        return self.time >= self.cut_at + self.params.spin_down_seconds

    def step(self, state: SafetyState, sent: np.ndarray | None = None) -> np.ndarray:
        """The command at ``state.now``: brake, level and hold the descent speed.
        ``sent``: what reached the robot since the last call (after the chain's limits),
        which the dead reckoning runs instead of what this asked for."""
        p = self.params
        if sent is not None and np.shape(sent) == (4,) and np.all(np.isfinite(sent)):
            self.command = np.asarray(sent, float).copy()
        quat = state.fresh_value("base_quat", self.attitude_timeout)
        if quat is not None:  # attitude_known(state)
            self.R = rotation(quat)
        measured = state.fresh_value("base_lin_acc", self.attitude_timeout)
        self._predict(state.now, measured)
        if self.motors_off:
            self.command = np.zeros(4)
            return self.command.copy()
        v = self.velocity
        brake = -p.brake_gain * v[:2]
        limit = C.GRAVITY * np.tan(p.max_brake_tilt)
        brake *= min(1.0, limit / max(float(np.linalg.norm(brake)), 1e-9))
        mass = self.airframe.mass
        force = mass * np.array([brake[0], brake[1], C.GRAVITY + self._climb(-p.descent_speed, v[2])])
        axis = force / np.linalg.norm(force)
        # The vertical component is what the descent needs, at any tilt up to 60 degrees;
        # the horizontal one follows the attitude, which the rates steer.
        lift = max(float(self.R[2, 2]), 0.5)
        thrust = force[2] / lift / self.gains[self.ESTIMATE]
        if measured is None:  # blind: every plausible gain must come down, the heavy ones not too fast
            vz = self.velocities[:, 2]
            lightest = mass * (C.GRAVITY + self._climb(-p.min_descent_speed, vz[self.LIGHT])) / (
                lift * self.gains[self.LIGHT])
            heaviest = mass * (C.GRAVITY + self._climb(-p.max_descent_speed, vz[self.HEAVY])) / (
                lift * self.gains[self.HEAVY])
            thrust = min(max(thrust, heaviest), lightest)
        thrust = float(np.clip(thrust, 0.0, self.thrust_max))
        if state.now > self.cut_at:  # down by every credible estimate: spin the motors down
            thrust *= max(0.0, 1.0 - (state.now - self.cut_at) / max(p.spin_down_seconds, 1e-9))
        wx, wy = pointing_rates(self.R, axis, p.level_gain)
        self.command = np.array([thrust, wx, wy, 0.0])
        return self.command.copy()

    def _climb(self, target: float, vz: float) -> float:
        """The vertical acceleration (m/s^2) the speed loop asks to bring ``vz`` to ``target``."""
        p = self.params
        return float(np.clip(p.speed_gain * (target - vz), -p.max_accel, p.max_accel))

    def _predict(self, now: float, specific_force: np.ndarray | None = None) -> None:
        """Advance the dead reckoning to ``now``: by the accelerometer's ``specific_force``
        (body frame) when given, else under the command last sent, per plausible gain."""
        span = now - self.time
        if span <= 0:
            return
        self.time = now
        af = self.airframe
        if specific_force is not None:
            accel = self.R @ np.asarray(specific_force, float)
            accel[2] -= C.GRAVITY
            self.velocities = self.velocities + accel * span
            self.heights += self.velocities[:, 2] * span
            lag = 1.0 - np.exp(-span / af.motor_time_constant)
            self.thrust += (self.command[0] - self.thrust) * lag
        else:
            steps = int(np.ceil(span / 0.005))  # motor lags are 20-40 ms: integrate finer than that
            dt = span / steps
            lag = 1.0 - np.exp(-dt / af.motor_time_constant)
            for _ in range(steps):
                self.thrust += (self.command[0] - self.thrust) * lag
                self.R = _turn(self.R, self.command[1:], dt)
                accel = (np.outer(self.gains * self.thrust / af.mass, self.R[:, 2])
                         - af.linear_drag / af.mass * self.velocities)
                accel[:, 2] -= C.GRAVITY
                self.velocities = self.velocities + accel * dt
                self.heights += self.velocities[:, 2] * dt
        if not np.isfinite(self.down_at) and self.heights[self.LIGHT] <= af.rest_height:
            self.down_at = now
