"""Body-rate PID and motor mixer of the quadrotor, vectorised over a batch.

This is the inner loop behind the ``ctbr`` action mode (collective thrust and
body rates), the same split as on the Crazyflie and PX4: the policy (or the
cascaded PID in ``sim2real.policies.classical.drone``) commands thrust and body
rates at 50 Hz; this loop turns them into four rotor thrusts every ``dt``.

Rate loop, per axis ``i`` (roll, pitch, yaw), with ``e = w_cmd - w``:

    alpha_i = kp_i e_i + ki_i integral(e_i) - kd_i dw_i/dt
    tau     = J alpha                     (J: nominal principal inertia)

The derivative acts on the measured rate, not on the error, so rate-command
steps do not kick the motors. With a first-order motor of time constant ``T``
the closed loop of one axis is ``T s^2 + (1 + kd) s + kp``; kd = 1 and kp = 50
give damping ~0.7 at ~35 rad/s with T = 40 ms. Yaw has ~20x less control
authority (6 mm torque arm against 33 mm), hence smaller gains.

Mixer: rotor thrusts ``f = MIXER @ (T, tau_x, tau_y, tau_z)``, with saturation
handled in priority order, as attitude matters more than altitude for a short
while and yaw matters least: (1) roll/pitch differentials are scaled down if
their spread exceeds the rotor range; (2) the collective is shifted so they fit
within ``[0, f_max]``; (3) yaw gets whatever headroom is left.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from sim2real.sim.drone import constants as C


@dataclass
class RateGains:
    """PID gains of the body-rate loop per axis (roll, pitch, yaw), as angular
    accelerations: kp in 1/s, ki in 1/s^2, kd dimensionless."""

    kp: np.ndarray = field(default_factory=lambda: np.array([50.0, 50.0, 20.0]))
    ki: np.ndarray = field(default_factory=lambda: np.array([150.0, 150.0, 30.0]))
    kd: np.ndarray = field(default_factory=lambda: np.array([1.0, 1.0, 0.3]))
    integral_limit: np.ndarray = field(default_factory=lambda: np.array([1.0, 1.0, 1.0]))
    """rad, clamp on the integrated rate error (anti-windup)."""


def mix(
    collective: np.ndarray,
    torque: np.ndarray,
    max_thrust: float = C.MAX_THRUST,
    mixer: np.ndarray = C.MIXER,
) -> np.ndarray:
    """Rotor thrusts ``[B, 4]`` in ``[0, max_thrust]`` from collective thrust ``[B]``
    (N) and body torques ``[B, 3]`` (N m), saturating in priority order (see module
    docstring). Runs every inner period, so it avoids ``np.clip``'s overhead."""
    per_rotor = np.asarray(collective, dtype=np.float64)[:, None] * mixer[:, 0]
    torque = np.asarray(torque, dtype=np.float64)
    roll_pitch = torque[:, :2] @ mixer[:, 1:3].T
    yaw = torque[:, 2:3] * mixer[:, 3]

    low = roll_pitch.min(axis=1, keepdims=True)
    high = roll_pitch.max(axis=1, keepdims=True)
    shrink = np.minimum(1.0, max_thrust / np.maximum(high - low, 1e-12))
    roll_pitch = roll_pitch * shrink
    # Shift the collective so the roll/pitch differential fits inside [0, max_thrust].
    base = np.minimum(np.maximum(per_rotor, -low * shrink), max_thrust - high * shrink) + roll_pitch

    # Largest yaw fraction in [0, 1] that keeps every rotor inside [0, max_thrust].
    room = np.where(yaw > 0.0, max_thrust - base, base) / np.maximum(np.abs(yaw), 1e-15)
    yaw_scale = np.maximum(np.minimum(room.min(axis=1, keepdims=True), 1.0), 0.0)
    prioritised = np.minimum(np.maximum(base + yaw_scale * yaw, 0.0), max_thrust)
    # Where nothing saturates, the exact allocation wins (the priority path would needlessly shift thrust).
    exact = per_rotor + torque @ mixer[:, 1:].T
    fits = ((exact >= 0.0) & (exact <= max_thrust)).all(axis=1, keepdims=True)
    return np.where(fits, exact, prioritised)


class BodyRateController:
    """Batched body-rate PID plus mixer (see module docstring).

    Args:
        num_envs: Batch size ``B``.
        dt: Period of :meth:`__call__` in seconds.
        gains: PID gains; defaults tuned for the nominal model.
        inertia: Principal inertia used to turn angular accelerations into torques.
        max_thrust: Per-rotor thrust limit in N.
        mixer: (collective, torques) -> rotor thrusts of the airframe's geometry.
    """

    def __init__(
        self,
        num_envs: int,
        dt: float,
        gains: RateGains | None = None,
        inertia: tuple[float, float, float] = C.INERTIA,
        max_thrust: float = C.MAX_THRUST,
        mixer: np.ndarray = C.MIXER,
    ) -> None:
        self.dt = dt
        self.mixer = mixer
        self.gains = gains or RateGains()
        self.inertia = np.asarray(inertia, dtype=np.float64)
        self.max_thrust = max_thrust
        self.integral = np.zeros((num_envs, 3))
        self.prev_rate = np.zeros((num_envs, 3))
        self._fresh = np.ones(num_envs, dtype=bool)

    def reset(self, env_ids: np.ndarray | list[int] | int | None = None) -> None:
        """Clear the integrator and derivative memory of the given envs (default: all)."""
        ids = slice(None) if env_ids is None else env_ids
        self.integral[ids] = 0.0
        self.prev_rate[ids] = 0.0
        self._fresh[ids] = True

    def torque(self, rate_cmd: np.ndarray, rate: np.ndarray) -> np.ndarray:
        """Body torques ``[B, 3]`` (N m) that track ``rate_cmd`` from measured ``rate`` (rad/s)."""
        g = self.gains
        error = rate_cmd - rate
        self.integral = np.minimum(np.maximum(self.integral + error * self.dt, -g.integral_limit), g.integral_limit)
        # No derivative on the first call after a reset: there is no previous sample.
        prev = np.where(self._fresh[:, None], rate, self.prev_rate)
        rate_dot = (rate - prev) / self.dt
        self.prev_rate = np.array(rate, dtype=np.float64)
        self._fresh[:] = False
        alpha = g.kp * error + g.ki * self.integral - g.kd * rate_dot
        return alpha * self.inertia

    def __call__(self, collective: np.ndarray, rate_cmd: np.ndarray, rate: np.ndarray) -> np.ndarray:
        """Rotor thrusts ``[B, 4]`` (N) for collective thrust ``[B]`` (N) and body
        rate commands ``[B, 3]`` given measured body rates ``[B, 3]``."""
        return mix(collective, self.torque(rate_cmd, rate), self.max_thrust, self.mixer)
