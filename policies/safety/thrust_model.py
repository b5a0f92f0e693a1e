"""How much vertical acceleration the drone's commanded thrust gives: a prior from the
robot's description, narrowed by what is measured in flight.

The thrust gain ``g`` is the real vertical acceleration per commanded one: ``a_z + g0 +
(c/m) v_z = g * T R22 / m`` (``T``: the commanded collective thrust through the motors'
lag, ``m``, ``c``: the description's mass and linear drag). Battery sag, a payload or
worn propellers move it away from 1 (PX4 estimates its hover thrust for the same
reason). Before any flight it is only known to lie in the description's band
(:data:`~sim2real.sim.drone.constants.HOVER_THRUST_BAND`: the hover thrust relative to
the nominal one); every odometry sample while flying narrows it. The estimate is a
Bayesian linear regression: a Gaussian prior centred on the nominal gain, wide enough
that two standard deviations cover the band, and the samples' information
(``lift^2 / noise^2`` each), the samples forgotten over ``time_constant`` s. The band
reported is two posterior standard deviations plus ``model_error`` either side of the
estimate, never outside the prior band: a descent that must work for every gain in it
(:mod:`.blind_descent`) can then be flown from the first instant of a flight.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sim2real.policies.safety.types import SafetyState
from sim2real.sim.core.frames import rotation
from sim2real.sim.drone import constants as C
from sim2real.sim.drone.airframe import CRAZYFLIE, Airframe


@dataclass(frozen=True)
class GainBand:
    """The thrust gains still plausible: ``low`` (the heaviest drone) <= ``estimate`` <= ``high`` (the lightest)."""

    low: float
    estimate: float
    high: float

    def as_array(self) -> np.ndarray:
        return np.array([self.low, self.estimate, self.high])


def prior_band(hover_thrust_band: tuple[float, float] = C.HOVER_THRUST_BAND) -> GainBand:
    """The gains the description allows: hover thrust ``h`` x nominal gives gain ``1/h``."""
    lo, hi = hover_thrust_band
    return GainBand(1.0 / hi, 1.0, 1.0 / lo)


class ThrustGain:
    """The thrust gain learned from odometry while flying, with its plausible band.

    Args:
        time_constant: Seconds over which samples are forgotten (battery sag moves the gain).
        sample_noise: m/s^2, the standard deviation of one sample's acceleration
            (velocities differenced over a control period).
        model_error: Added to either side of the band: what the model leaves out
            (quadratic drag in a fast climb, motor lag) biases the estimate by a few percent.
        prior: The band before any flight (default: the description's).
        airframe: The description: mass, drag, motor lag and resting height.
    """

    def __init__(self, time_constant: float = 2.0, sample_noise: float = 1.0, model_error: float = 0.04,
                 prior: GainBand | None = None, airframe: Airframe = CRAZYFLIE) -> None:
        self.airframe = airframe
        self.time_constant = time_constant
        self.sample_noise = sample_noise
        self.model_error = model_error
        self.prior = prior or prior_band()
        spread = max(1.0 - self.prior.low, self.prior.high - 1.0)
        self._prior_precision = (2.0 / spread) ** 2
        self.sxx = 0.0
        """Forgotten sum of lift^2 (information, times the noise variance)."""
        self.sxy = 0.0
        self.thrust = airframe.hover_thrust
        """The thrust the motors produce (first-order lag behind the commands)."""
        self._previous: tuple[float, float] | None = None
        self._sent: tuple[float, float] | None = None

    @property
    def gain(self) -> float:
        """The posterior mean: the nominal 1 until flight has told otherwise."""
        return self.band().estimate

    def band(self) -> GainBand:
        noise2 = self.sample_noise ** 2
        precision = self._prior_precision + self.sxx / noise2
        mean = (self._prior_precision * 1.0 + self.sxy / noise2) / precision
        half = 2.0 / np.sqrt(precision) + self.model_error
        lo, hi = self.prior.low, self.prior.high
        estimate = float(np.clip(mean, lo, hi))
        return GainBand(max(lo, estimate - half), estimate, min(hi, estimate + half))

    def update(self, state: SafetyState, thrust: float, max_age: float) -> None:
        """One odometry sample (its stamp must advance) and the thrust sent since."""
        if self._sent is not None:
            dt = state.now - self._sent[0]
            if dt > 0:
                self.thrust += (self._sent[1] - self.thrust) * (1.0 - np.exp(-dt / self.airframe.motor_time_constant))
        self._sent = (state.now, float(thrust) if np.isfinite(thrust) else 0.0)
        vel = state.fresh_value("base_lin_vel", max_age)
        quat = state.fresh_value("base_quat", max_age)
        pos = state.fresh_value("base_pos", max_age)
        if vel is None or quat is None or pos is None:
            self._previous = None
            return
        stamp = state.now - state.age("base_lin_vel")
        vz = float(vel[2])
        previous, self._previous = self._previous, (stamp, vz)
        if previous is None or not 0 < stamp - previous[0] <= 4 * max_age:
            return
        af = self.airframe
        lift = self.thrust * float(rotation(quat)[2, 2]) / af.mass
        if pos[2] < af.rest_height + 0.05 or lift < 0.5 * C.GRAVITY:
            return  # on (or near) the ground, or nearly falling: contact or lag would dominate
        dt = stamp - previous[0]
        accel = (vz - previous[1]) / dt + C.GRAVITY + af.linear_drag / af.mass * 0.5 * (vz + previous[1])
        if not np.isfinite(accel):
            return
        decay = float(np.exp(-dt / self.time_constant))
        self.sxx = decay * self.sxx + lift * lift
        self.sxy = decay * self.sxy + lift * accel
