"""The Crazyflie's thrust model, in one place: collective thrust in newtons <-> the
firmware's 16-bit thrust command, and the sign conventions of the legacy setpoint.

Signs. The deployment commands collective thrust in newtons and body rates in rad/s
(body FLU: x forward, y left, z up). cflib's ``Commander.send_setpoint(roll, pitch,
yawrate, thrust)`` takes degrees (or deg/s in rate mode) and a 16-bit thrust command,
and the firmware bends the signs twice:

* cflib negates pitch on the wire, and the firmware's rate loop compares the wire pitch
  with ``-gyro.y``: the two cancel, so cflib's pitch rate is the body y rate.
* the legacy yaw-rate input is inverted (``attitudeRate.yaw = -values->yaw``): cflib's
  yaw rate is minus the body z rate.

Thrust. The firmware applies no power below 1000 and clamps at 60000 of 65535. What a
motor makes is set by its voltage, ``v_motor = vbat * duty`` (duty = PWM / 65535), as a
cubic that Bitcraze identified on their thrust stand and ship in the firmware
(``platform_defaults_cf2.h``, ``VMOTOR2THRUST0..3``, firmware 2025.09 and later; the
"PWM to Thrust" page of the firmware documentation and the Bitcraze blog "Keeping thrust
consistent as the battery drains", 2025-10). In PWM it is close to a quadratic whose
scale moves with the battery: for a 27 g drone at 4.2 V it hovers at PWM 35200, while
Förster's quadratic per motor (J. Förster, "System Identification of the Crazyflie 2.0
Nano Quadrocopter", BSc thesis, ETH Zurich 2015: ``f = 2.130295e-11 pwm^2 +
1.032633e-6 pwm + 5.484560e-4`` N) gives 36300; at 3.7 V the cubic needs 40000.

The stock firmware compensates the battery itself (``CONFIG_ENABLE_THRUST_BAT_COMPENSATED``,
default on since 2022): a command ``c`` asks each motor for ``c / 65535 * THRUST_MAX``
newtons (``THRUST_MAX`` 0.12 N), and ``motorsCompensateBatteryVoltage`` turns that into
the motor voltage through the inverted cubic and divides by the low-passed battery
voltage. The command is then linear in newtons and a 27 g drone hovers at 36160 at any
charge. A firmware built without it takes the command as the PWM duty: the host must
then do the same compensation from the battery voltage the firmware logs
(``pm.vbat``). :class:`ThrustMap` does either, with ``thrust_scale``: the real drone's
hover thrust relative to the description's (identified from a hover log,
:mod:`.identify`).
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
VBAT_FULL = 4.2
"""V of a charged LiPo cell (the firmware's compensation starts from it)."""


@dataclass(frozen=True)
class MotorCurve:
    """One motor's thrust (N) against its voltage (V): ``c0 + c1 v + c2 v^2 + c3 v^3``,
    with the firmware's ``THRUST_MIN``/``THRUST_MAX`` for its battery compensation."""

    c0: float
    c1: float
    c2: float
    c3: float
    thrust_min: float
    """N per motor below which the firmware's compensation gives no power."""
    thrust_max: float
    """N per motor the compensated firmware asks for at command 65535."""

    def thrust(self, volts: float) -> float:
        """N one motor makes at ``volts`` (never negative)."""
        v = max(float(volts), 0.0)
        return max(self.c0 + v * (self.c1 + v * (self.c2 + v * self.c3)), 0.0)

    def volts(self, thrust: float) -> float:
        """The motor voltage that makes ``thrust`` N: the cubic's one real root, by the
        closed form ``motorsCompensateBatteryVoltage`` uses (the cubic is increasing:
        ``c1/(3 c3) > (c2/(3 c3))^2`` for every published curve)."""
        if thrust <= self.thrust(0.0):
            return 0.0
        p = -self.c2 / (3.0 * self.c3)
        r = self.c1 / (3.0 * self.c3)
        q = p ** 3 + (self.c2 * self.c1 - 3.0 * self.c3 * (self.c0 - thrust)) / (6.0 * self.c3 ** 2)
        qrp = math.sqrt(q * q + (r - p * p) ** 3)
        return _cbrt(q + qrp) + _cbrt(q - qrp) + p


def _cbrt(x: float) -> float:
    return math.copysign(abs(x) ** (1.0 / 3.0), x)


CURVES: dict[str, MotorCurve] = {
    # platform_defaults_cf2.h, CONFIG_CRAZYFLIE_LEGACY_PROPELLERS: the Crazyflie 2.0/2.1's propellers.
    "cf21": MotorCurve(-0.014830744918356092, 0.04724465241828281, -0.01847364358025878, 0.005960923942142,
                       thrust_min=0.012817578393224994, thrust_max=0.12),
    # platform_defaults_cf2.h, CONFIG_CRAZYFLIE_21_PLUS: the Crazyflie 2.1+'s propellers.
    "cf21_plus": MotorCurve(-0.02476537915958403, 0.06523793527519485, -0.026792504967750107, 0.006776789303971145,
                            thrust_min=0.012817578393224994, thrust_max=0.12),
}
"""Bitcraze's published motor curves (thrust-stand fits), by propeller set."""


def firmware_duty(command: float, curve: MotorCurve, supply: float, compensated: bool) -> float:
    """The PWM duty (0..1) the firmware gives a motor for its thrust ``command``
    (0..65535): ``motorsCompensateBatteryVoltage`` when ``compensated`` (with the
    low-passed ``supply`` voltage; under 2 V, or under ``THRUST_MIN``, no power), else
    the command itself."""
    if not compensated:
        return min(max(command, 0.0), PWM_FULL) / PWM_FULL
    thrust = command / PWM_FULL * curve.thrust_max
    if supply < 2.0 or thrust < curve.thrust_min:
        return 0.0
    return min(curve.volts(thrust) / supply, 1.0)


@dataclass(frozen=True)
class ThrustMap:
    """Collective thrust (N, the deployment's, for the description's drone) <-> the
    firmware's thrust command: the one thrust model the backend and the emulator share."""

    curve: str = "cf21"
    """The motor curve (:data:`CURVES`): the drone's propellers."""
    thrust_scale: float = 1.0
    """The real drone's hover thrust over the description's (``C.HOVER_THRUST``): a
    heavier drone, a payload or worn propellers need more; identified from a hover log."""
    firmware_compensation: bool = True
    """The firmware compensates the battery (stock); False: this map does, from ``pm.vbat``."""

    def __post_init__(self) -> None:
        if self.curve not in CURVES:
            raise ValueError(f"unknown motor curve {self.curve!r}; choose from {', '.join(CURVES)}")
        if not (math.isfinite(self.thrust_scale) and self.thrust_scale > 0):
            raise ValueError(f"thrust_scale must be a positive number, got {self.thrust_scale!r}")

    @property
    def motor(self) -> MotorCurve:
        return CURVES[self.curve]

    def to_pwm(self, newtons: float, vbat: float | None = None) -> int:
        """The command for ``newtons`` (0..60000; non-finite or <= 0 gives 0). ``vbat``
        (V, the firmware's ``pm.vbat``) is needed unless the firmware compensates."""
        if not math.isfinite(newtons) or newtons <= 0.0:
            return 0
        per_motor = newtons * self.thrust_scale / 4.0
        if self.firmware_compensation:
            command = per_motor / self.motor.thrust_max * PWM_FULL
        else:
            command = self.motor.volts(per_motor) / self._supply(vbat) * PWM_FULL
        return int(min(round(command), PWM_CLAMP))

    def to_newtons(self, pwm: float, vbat: float | None = None) -> float:
        """The deployment's thrust a command gives (the inverse of :meth:`to_pwm`; no
        power below 1000, nor below ``THRUST_MIN`` when the firmware compensates; clamped
        at 60000)."""
        if not math.isfinite(pwm) or pwm < PWM_MIN_POWER:
            return 0.0
        pwm = min(float(pwm), PWM_CLAMP)
        if self.firmware_compensation:
            per_motor = pwm / PWM_FULL * self.motor.thrust_max
            per_motor = per_motor if per_motor >= self.motor.thrust_min else 0.0
        else:
            per_motor = self.motor.thrust(self._supply(vbat) * pwm / PWM_FULL)
        return 4.0 * per_motor / self.thrust_scale

    def hover_command(self, vbat: float | None = None) -> int:
        """The command that hovers the real drone (at ``vbat`` without firmware compensation)."""
        return self.to_pwm(C.HOVER_THRUST, vbat)

    @staticmethod
    def _supply(vbat: float | None) -> float:
        if vbat is None or not math.isfinite(vbat) or vbat < 2.0:
            raise ValueError(f"the thrust map compensates the battery and needs its voltage, got {vbat!r}")
        return float(vbat)


def ctbr_to_setpoint(values: np.ndarray, thrust_map: ThrustMap,
                     vbat: float | None = None) -> tuple[float, float, float, int]:
    """``(roll, pitch, yawrate, thrust)`` for ``send_setpoint`` (rate mode on all axes)
    from ``[thrust N, roll rate, pitch rate, yaw rate rad/s]``."""
    p, q, r = (math.degrees(float(v)) for v in values[1:4])
    return p, q, -r, thrust_map.to_pwm(float(values[0]), vbat)


def wire_to_body_rates(roll: float, pitch: float, yaw: float) -> np.ndarray:
    """Body rates (rad/s) the firmware's rate loop tracks for the values on the wire
    (``send_setpoint`` already negated pitch): roll as is, pitch and yaw negated."""
    return np.radians([roll, -pitch, -yaw])


def wire_to_attitude(roll: float, pitch: float) -> tuple[float, float]:
    """Roll and pitch (rad, right-handed about body x and y) the firmware's attitude
    loop holds in angle mode: it compares the wire pitch with its legacy, inverted pitch."""
    return math.radians(roll), -math.radians(pitch)
