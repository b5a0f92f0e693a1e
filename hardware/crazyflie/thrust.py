"""Units and signs between the deployment's CTBR command and the Crazyflie's legacy setpoint.

The deployment commands collective thrust in newtons and body rates in rad/s (body
FLU: x forward, y left, z up). cflib's ``Commander.send_setpoint(roll, pitch, yawrate,
thrust)`` takes degrees (or deg/s in rate mode) and a 16-bit thrust command, and the
firmware bends the signs twice:

* cflib negates pitch on the wire, and the firmware's rate loop compares the wire pitch
  with ``-gyro.y``: the two cancel, so cflib's pitch rate is the body y rate.
* the legacy yaw-rate input is inverted (``attitudeRate.yaw = -values->yaw``): cflib's
  yaw rate is minus the body z rate.

Thrust: the firmware applies no power below 1000 and clamps at 60000 of 65535. The map
here is linear, as the simulated motors are (``sim/drone/constants.py``: a full command
gives ``4 * MAX_THRUST`` = 0.6 N, so hover, 0.265 N, is ~28900). A real CF2.1's thrust
is nonlinear in the command (hover near 36000, ``PID_VEL_THRUST_BASE``): give the
backend the identified ``full_scale`` (or a measured hover command) before flying one.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from sim2real.sim.drone import constants as C

PWM_FULL = 65535
"""The thrust command's full scale (uint16)."""
PWM_MIN_POWER = 1000
"""Below this the firmware gives the motors no power (``MIN_THRUST``)."""
PWM_CLAMP = 60000
"""The firmware clamps thrust commands here (``MAX_THRUST``)."""


@dataclass(frozen=True)
class ThrustMap:
    """Collective thrust (N) <-> the firmware's thrust command, linear through zero."""

    full_scale: float = C.MAX_COLLECTIVE_THRUST
    """Newtons of collective thrust at command 65535 (the simulated motors: 0.6 N)."""

    def to_pwm(self, newtons: float) -> int:
        """The command for ``newtons`` (clamped to 0..60000; non-finite gives 0)."""
        if not math.isfinite(newtons) or newtons <= 0.0:
            return 0
        return int(min(round(newtons / self.full_scale * PWM_FULL), PWM_CLAMP))

    def to_newtons(self, pwm: float) -> float:
        """What the motors produce for a command, as the firmware applies it (no power
        below 1000, clamped at 60000)."""
        if pwm < PWM_MIN_POWER:
            return 0.0
        return min(float(pwm), PWM_CLAMP) / PWM_FULL * self.full_scale


def ctbr_to_setpoint(values: np.ndarray, thrust_map: ThrustMap) -> tuple[float, float, float, int]:
    """``(roll, pitch, yawrate, thrust)`` for ``send_setpoint`` (rate mode on all axes)
    from ``[thrust N, roll rate, pitch rate, yaw rate rad/s]``."""
    p, q, r = (math.degrees(float(v)) for v in values[1:4])
    return p, q, -r, thrust_map.to_pwm(float(values[0]))


def wire_to_body_rates(roll: float, pitch: float, yaw: float) -> np.ndarray:
    """Body rates (rad/s) the firmware's rate loop tracks for the values on the wire
    (``send_setpoint`` already negated pitch): roll as is, pitch and yaw negated."""
    return np.radians([roll, -pitch, -yaw])


def wire_to_attitude(roll: float, pitch: float) -> tuple[float, float]:
    """Roll and pitch (rad, right-handed about body x and y) the firmware's attitude
    loop holds in angle mode: it compares the wire pitch with its legacy, inverted pitch."""
    return math.radians(roll), -math.radians(pitch)
