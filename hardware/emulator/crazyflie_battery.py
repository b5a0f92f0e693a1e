"""The Crazyflie's battery and the firmware's power management, for the emulator.

Battery: a 250 mAh one-cell LiPo (Bitcraze's Crazyflie 2.1 datasheet). Its rest voltage
follows the firmware's own charge curve (``LiPoTypicalChargeCurve`` in
``pm_stm32f4.c``: 3.00 V empty ... 4.10 V at 90 %, and 4.2 V charged), and it sags
under load by ``internal_resistance x current``. The current is a modelled figure:
``hover_current`` at the thrust that lifts the description's drone, growing with thrust
as ``(T / T_hover)^1.5`` (momentum theory: induced power goes with thrust^1.5).
``hover_current`` 2.1 A drains the battery in Bitcraze's "up to 7 minutes" of flight;
0.1 ohm for the power path sags 0.2 V at hover and 0.7 V at full thrust, the most the
firmware's health test passes in a power path (``BAT_LOADING_SAG_THRESHOLD`` 0.70 V).

Power management (``pm_stm32f4.c``, platform defaults of the CF2): the voltage below
``pm.lowVoltage`` (3.2 V) for 5 s puts the state to ``lowPower`` (``pm.state`` 3; the
firmware plays its low-battery melody and LED sequence and flies on); in ``lowPower``,
below ``pm.criticalLowVoltage`` (3.0 V) for 5 s shuts the system down only when built
with ``CONFIG_PM_AUTO_SHUTDOWN`` (off in the stock build). The thrust a motor can make
falls with the voltage on its own: that is what ends a flight on an empty battery.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sim2real.hardware.crazyflie.thrust import VBAT_FULL
from sim2real.sim.drone import constants as C

CHARGE_CURVE = np.array([3.00, 3.78, 3.83, 3.87, 3.89, 3.92, 3.96, 4.00, 4.04, 4.10, VBAT_FULL])
"""V at rest at 0, 10, ..., 100 % charge (the firmware's ``LiPoTypicalChargeCurve``, then full)."""
PM_BATTERY, PM_LOW_POWER, PM_SHUTDOWN = 0, 3, 4
"""``pm.state`` values (``PMStates``: battery, charging, charged, lowPower, shutDown)."""
LOW_DURATION = 5.0
"""s below a threshold before the firmware acts (``DEFAULT_BAT_LOW_DURATION_TO_TRIGGER_SEC``)."""


@dataclass
class BatteryConfig:
    charge: float = 1.0
    """State of charge at boot (0..1)."""
    capacity_mah: float = 250.0
    internal_resistance: float = 0.1
    """ohm, the cell and the power path."""
    hover_current: float = 2.1
    """A at the description's hover thrust."""
    low_voltage: float = 3.2
    critical_low_voltage: float = 3.0
    auto_shutdown: bool = False
    """``CONFIG_PM_AUTO_SHUTDOWN`` (off in the stock build)."""


class Battery:
    """The cell under the motors' load, and the firmware's ``pm`` state machine."""

    def __init__(self, config: BatteryConfig | None = None) -> None:
        self.config = cfg = config or BatteryConfig()
        if not 0.0 <= cfg.charge <= 1.0:
            raise ValueError(f"battery charge must be in 0..1, got {cfg.charge}")
        self.charge = float(cfg.charge)
        self.current = 0.0
        self.state = PM_BATTERY
        self._above_low = 0.0
        self._above_critical = 0.0
        self.shut_down = False

    def rest_voltage(self) -> float:
        return float(np.interp(self.charge, np.linspace(0.0, 1.0, len(CHARGE_CURVE)), CHARGE_CURVE))

    def voltage(self) -> float:
        """V at the terminals now (what ``pm.vbat`` reads and the motors get)."""
        return max(self.rest_voltage() - self.config.internal_resistance * self.current, 0.0)

    def step(self, now: float, dt: float, rotor_thrusts: np.ndarray) -> None:
        """Draw the current of ``rotor_thrusts`` (N) for ``dt`` s and run the pm checks."""
        total = float(np.sum(np.maximum(rotor_thrusts, 0.0)))
        self.current = self.config.hover_current * (total / C.HOVER_THRUST) ** 1.5
        self.charge = max(self.charge - self.current * dt / 3.6 / self.config.capacity_mah, 0.0)
        v = self.voltage()
        if v > self.config.low_voltage:
            self._above_low = now
        if v > self.config.critical_low_voltage:
            self._above_critical = now
        if self.state == PM_BATTERY and now - self._above_low > LOW_DURATION:
            self.state = PM_LOW_POWER
        elif self.state == PM_LOW_POWER and now - self._above_critical > LOW_DURATION and self.config.auto_shutdown:
            self.state, self.shut_down = PM_SHUTDOWN, True

    def start(self, now: float) -> None:
        """The pm task starts (its timestamps begin at boot)."""
        self._above_low = self._above_critical = now
