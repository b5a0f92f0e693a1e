"""The real drone's thrust scale and hover command, from a short hover log.

A hover log is what the backend saw while flying: each command it sent (the
deployment's collective thrust in N), the state estimate (height, vertical velocity,
attitude) and the battery voltage. With the thrust map in force (scale ``s``) a command
``T`` makes ``G T`` newtons of the description's drone, and the vertical motion says how
much: ``a_z + g + (c/m) v_z = G T_lag R22 / m`` (``T_lag``: the commands through the
motors' 40 ms lag; ``m``, ``c``: the description's mass and drag). ``G`` is the least-
squares gain over the samples in the air; the map that makes the real drone answer as the
description is ``s / G``, and its hover command follows (:meth:`ThrustMap.hover_command`).

This is the regression the safety filter's fallback runs online
(:class:`sim2real.policies.safety.thrust_model.ThrustGain`) run once over a log: after
identification the filter's gain starts at 1 within its prior band.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np

from sim2real.hardware.crazyflie.thrust import ThrustMap
from sim2real.sim.drone import constants as C

MIN_SAMPLES = 50
"""Samples in the air (0.5 s at 100 Hz) the fit needs."""


@dataclass
class HoverLog:
    """Arrays ``[N]`` of one flight, in time order."""

    times: np.ndarray
    """s (host clock) of each state sample."""
    thrust: np.ndarray
    """N, the newest command sent before each sample."""
    height: np.ndarray
    vz: np.ndarray
    """m/s, world vertical velocity."""
    tilt: np.ndarray
    """R22: cos of the tilt (the body z axis' vertical component)."""
    vbat: np.ndarray
    """V, the firmware's ``pm.vbat``."""


@dataclass(frozen=True)
class HoverFit:
    gain: float
    """Real vertical acceleration per commanded one under the map in force."""
    thrust_scale: float
    """The identified :attr:`ThrustMap.thrust_scale`."""
    hover_command: int
    """The command that hovers the real drone at ``vbat``."""
    vbat: float
    """V, the median battery voltage of the samples used."""
    samples: int
    residual: float
    """m/s^2, RMS of the fit's residual acceleration."""

    def thrust_map(self, current: ThrustMap) -> ThrustMap:
        return dataclasses.replace(current, thrust_scale=self.thrust_scale)


class IdentificationError(ValueError):
    """A log the fit cannot use (one line: what is missing)."""


def identify_hover(log: HoverLog, current: ThrustMap, min_height: float = C.REST_HEIGHT + 0.1,
                   span: float = 0.1) -> HoverFit:
    """Fit the thrust gain over the samples in the air (accelerations over ``span`` s)
    and the map that removes it."""
    t = np.asarray(log.times, dtype=float)
    if len(t) < 3:
        raise IdentificationError(f"a hover log needs samples: got {len(t)}")
    thrust = np.asarray(log.thrust, dtype=float)
    lagged = np.empty_like(thrust)
    lagged[0] = thrust[0]
    for k in range(1, len(t)):  # the motors' first-order lag, as the filter's estimate runs it
        a = 1.0 - math.exp(-max(t[k] - t[k - 1], 0.0) / C.MOTOR_TIME_CONSTANT)
        lagged[k] = lagged[k - 1] + (thrust[k - 1] - lagged[k - 1]) * a
    # Accelerations over ``span`` s, not one sample: arrival times jitter by milliseconds.
    n = max(1, round(span / float(np.median(np.diff(t)))))
    if len(t) <= n:
        raise IdentificationError(f"a hover log needs more than {span:.2f} s of samples: got {len(t)}")
    dt = t[n:] - t[:-n]
    vz = np.asarray(log.vz, dtype=float)
    drag = C.LINEAR_DRAG / C.MASS * _window_mean(vz, n)
    accel = (vz[n:] - vz[:-n]) / np.where(dt > 0, dt, np.nan) + C.GRAVITY + drag
    lift = _window_mean(lagged * np.asarray(log.tilt, dtype=float), n) / C.MASS
    height = np.minimum(np.asarray(log.height, dtype=float)[n:], np.asarray(log.height, dtype=float)[:-n])
    use = np.isfinite(accel) & np.isfinite(lift) & (height > min_height) & (lift > 0.5 * C.GRAVITY) & (dt < 2 * span)
    if int(use.sum()) < MIN_SAMPLES:
        raise IdentificationError(f"{int(use.sum())} samples in the air above {min_height:.2f} m; the fit needs "
                                  f"{MIN_SAMPLES} (hover at least {MIN_SAMPLES / 100:.1f} s)")
    x, y = lift[use], accel[use]
    gain = float(np.dot(x, y) / np.dot(x, x))
    if not (math.isfinite(gain) and gain > 0):
        raise IdentificationError(f"the log gives no positive thrust gain ({gain})")
    vbat = float(np.median(np.asarray(log.vbat, dtype=float)[n:][use]))
    fitted = dataclasses.replace(current, thrust_scale=current.thrust_scale / gain)
    return HoverFit(gain=gain, thrust_scale=fitted.thrust_scale,
                    hover_command=fitted.hover_command(vbat if math.isfinite(vbat) else None), vbat=vbat,
                    samples=int(use.sum()), residual=float(np.sqrt(np.mean((y - gain * x) ** 2))))


def _window_mean(x: np.ndarray, n: int) -> np.ndarray:
    """The mean of ``x`` over each interval ``[k, k + n]`` (trapezoidal), ``[len(x) - n]``."""
    c = np.concatenate([[0.0], np.cumsum(0.5 * (x[1:] + x[:-1]))])
    return (c[n:] - c[:-n]) / n
