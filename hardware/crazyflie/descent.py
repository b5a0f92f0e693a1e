"""The Crazyflie backend's safe state: a controlled descent the backend flies itself.

Why not let the firmware's commander watchdog do it: without setpoints a flying
Crazyflie levels out after 0.5 s *keeping its last thrust* (it climbs or sinks at
whatever rate that thrust gives) and stops its motors after 2 s, then locks until
rebooted: from any height that is a fall. So the backend never relies on it. On any
fault it keeps sending setpoints itself, at the control rate (>= 10 Hz), so the
watchdog never trips:

1. descend: level attitude (roll and pitch in ANGLE mode at 0 deg; until the mode
   switch is confirmed, rates that level the drone from its estimated attitude), yaw rate
   0, thrust a little below hover from a vertical-velocity loop (``-descent_rate``) on the
   latest estimate, until the estimate is within ``land_height`` of the ground or
   ``timeout`` passes. Without a fresh estimate the thrust is ``open_loop`` x hover
   until the last known height has had time to come down at ``descent_rate``;
2. idle: thrust 0 setpoints for ``landed_idle`` s, longer than the firmware's 2 s
   "is flying" hysteresis, so the supervisor sees the drone landed (not flying) before
   setpoints stop: the watchdog ignores a landed drone;
3. done: ``send_notify_setpoint_stop``.

If the backend itself dies (process killed, host down) nothing is sent and the firmware
decides: level at 0.5 s, motors off at 2 s, Locked. That fall is the documented
worst case; the operator's e-stop (:meth:`CrazyflieBackend.estop`) is motors-off at once.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from sim2real.sim.drone import constants as C


@dataclass(frozen=True)
class DescentConfig:
    hover_thrust: float = C.HOVER_THRUST
    """N that holds the drone's weight (the simulated drone's: 0.265 N)."""
    descent_rate: float = 0.3
    """m/s of the controlled descent."""
    velocity_gain: float = 0.8
    """Fraction of hover thrust added per m/s of vertical-velocity error."""
    thrust_limits: tuple[float, float] = (0.6, 1.15)
    """Thrust bounds during the descent, as fractions of hover."""
    open_loop: float = 0.92
    """Thrust (fraction of hover) without a fresh estimate."""
    land_height: float = 0.05
    """m: at or below this estimated height the drone counts as landed."""
    timeout: float = 10.0
    """s after which the descent stops whatever the estimate says."""
    landed_idle: float = 2.2
    """s of zero-thrust setpoints after touchdown (> the firmware's 2 s is-flying hysteresis)."""
    level_gain: float = 6.0
    """1/s, tilt -> levelling rate while the ANGLE-mode switch is unconfirmed."""

    def validate(self) -> None:
        lo, hi = self.thrust_limits
        positive = (self.hover_thrust, self.descent_rate, self.timeout, self.level_gain)
        if not (all(math.isfinite(v) and v > 0 for v in positive) and 0 < lo < 1 < hi
                and 0 < self.open_loop < 1 and self.land_height >= 0 and self.landed_idle >= 0):
            raise ValueError(f"invalid descent configuration: {self}")


class Descent:
    """One controlled descent; :meth:`thrust` is called once per setpoint period."""

    def __init__(self, config: DescentConfig, start: float, z: float | None, reason: str) -> None:
        self.config = config
        self.start = start
        self.reason = reason
        self.stage = "descend"
        """descend, idle, done."""
        self.idle_since: float | None = None
        self.last_z = z
        self.last_fresh = start
        self.touchdown: float | None = None

    def thrust(self, now: float, z: float | None, vz: float | None) -> float:
        """Newtons to command now (``z``, ``vz``: the latest fresh estimate, or None)."""
        cfg = self.config
        if self.stage == "descend":
            if z is not None and vz is not None:
                self.last_z, self.last_fresh = z, now
                landed = z <= cfg.land_height
                thrust = cfg.hover_thrust * (1.0 + cfg.velocity_gain * (-cfg.descent_rate - vz))
            else:
                height = cfg.land_height if self.last_z is None else self.last_z
                landed = now - self.last_fresh > max(height - cfg.land_height, 0.0) / cfg.descent_rate + 1.0
                thrust = cfg.open_loop * cfg.hover_thrust
            if landed or now - self.start > cfg.timeout:
                self.stage, self.idle_since, self.touchdown = "idle", now, now
            else:
                lo, hi = cfg.thrust_limits
                return min(max(thrust, lo * cfg.hover_thrust), hi * cfg.hover_thrust)
        if self.stage == "idle" and self.idle_since is not None and now - self.idle_since >= cfg.landed_idle:
            self.stage = "done"
        return 0.0

    @property
    def done(self) -> bool:
        return self.stage == "done"
