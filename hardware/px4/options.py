"""The PX4 backend's options (``hardware_bridge.backend_options``)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from sim2real.sim.core.errors import ConfigError
from sim2real.sim.core.schema import Fraction, NonNegative, Positive
from sim2real.sim.drone.airframe import airframe


@dataclass
class Px4Options:
    url: str = "udpin:127.0.0.1:14540"
    """``mavutil`` connection string (loopback: PX4 SITL on this machine)."""
    home: list[float] = field(default_factory=lambda: [0.0, 0.0, 0.0])
    """Where PX4's local origin is in the task's world frame (ENU, m)."""
    airframe: str = "crazyflie"
    """The vehicle's model (:mod:`sim2real.sim.drone.airframe`): its four rotors at full are
    what normalized thrust 1 means unless ``max_thrust`` says otherwise."""
    max_thrust: NonNegative = 0.0
    """N of collective thrust at normalized thrust 1 (PX4 maps 0..1 to its motors' range);
    0: the airframe model's."""
    state_hz: Positive = 100.0
    """Hz asked of ATTITUDE_QUATERNION and LOCAL_POSITION_NED (one state per position)."""
    stream_before_s: Positive = 1.2
    """s of setpoints before asking for OFFBOARD."""
    ack_timeout: Positive = 1.5
    stale_after: Positive = 0.15
    state_timeout: Positive = 0.15
    battery_land: Fraction = 0.15
    """Charge (0..1, BATTERY_STATUS) under which the backend lands while enabled and refuses
    to enable (PX4's ``BAT_LOW_THR``; PX4 itself only warns there by default,
    ``COM_LOW_BAT_ACT`` 0)."""
    link_timeout: Positive = 1.0
    """s without any state after which the link counts as lost (DISCONNECTED)."""

    def validate(self) -> None:
        if not str(self.url).startswith(("udpin:", "udpout:", "udp:", "tcp:", "serial:", "/dev/")):
            raise ConfigError("url", f"not a mavutil connection string: {self.url!r}")
        airframe(self.airframe)
        if len(self.home) != 3 or not all(math.isfinite(float(v)) for v in self.home):
            raise ConfigError("home", f"three finite numbers (m), got {self.home!r}")
