"""The Crazyflie backend's safe state: the firmware's own landing, handed over.

Why the firmware's: it lands on its own state estimate at its own rate, whatever the
host still sees. A descent flown from the host needs the host's view of the drone; when
the state is what was lost, the host can only guess the thrust (the drone's mass and
battery are not the description's), and the guess climbs or drops. The firmware's
position controller closes the loop on board.

What the firmware does (``commander.c``, ``crtp_commander_high_level.c``,
``supervisor.c``): setpoints compete by priority. The RPYT setpoints this backend flies
with hold the CRTP priority and stop the high-level planner; the high-level commander
(priority 1) offers a fresh setpoint every tick (its trajectory's, or the null setpoint
when idle: motors off), which wins once ``notify_setpoint_stop`` has relaxed the
priority. Its setpoints never age, so the commander watchdog (level out at 0.5 s without
a setpoint, motors off at 2 s, then Locked) stays quiet; the landing goes on if the link
dies. So the hand-over is, in this order:

1. ``high_level_commander.land(0, duration)``: a smooth landing from where the firmware
   estimates the drone is, to height 0, over ``duration`` = (the last known height +
   ``height_margin``) / ``descent_rate``; it ends idle: motors off;
2. ``commander.send_notify_setpoint_stop()``: the planner takes over.

Both are repeated every control period until the supervisor's log bits show the
high-level commander active (``supervisor.info`` 0x100), at most for the watchdog's 2 s:
the first may be lost (UDP; a radio link that comes back). Land comes first: a relaxed
priority with an idle planner is the null setpoint. A drone on the ground (estimated
within ``land_height``, still) gets only the notify: the idle planner's null setpoint.

The backend watches until the last landing it sent must have ended (the planner idle,
motors off), plus ``settle``; closing the link earlier would send cflib's zero setpoint,
which stops the planner mid-air.

If the link is down both ways when the hand-over starts and never comes back within
2 s, nothing reaches the drone: the firmware levels out at 0.5 s keeping its last
thrust, cuts its motors at 2 s and locks. That fall is the documented worst case.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

HL_ACTIVE_BIT = 0x100
"""``supervisor.info``: high-level control is active (a landing included)."""
CURRENT_YAW: Any = None
"""cflib's ``land(..., yaw=None)``: keep the heading the drone has (its signature says float)."""
WATCHDOG_SHUTDOWN = 2.0
"""s: the firmware stops its motors this long after the last setpoint (then locks)."""


@dataclass(frozen=True)
class DescentConfig:
    descent_rate: float = 0.3
    """m/s the firmware's landing plans for."""
    land_height: float = 0.05
    """m: at or below this estimated height, still, the drone counts as on the ground."""
    height_margin: float = 0.3
    """m added to the last known height when timing the landing: the drone may have
    climbed since the state was lost (the firmware plans from its own estimate; a longer
    duration only makes the descent slower)."""
    unknown_height: float = 2.5
    """m assumed when no height was ever known (the fence's top)."""
    settle: float = 0.5
    """s the backend keeps watching after the last landing it sent must have ended."""

    def validate(self) -> None:
        positive = (self.descent_rate, self.unknown_height)
        non_negative = (self.land_height, self.height_margin, self.settle)
        if not (all(math.isfinite(v) and v > 0 for v in positive)
                and all(math.isfinite(v) and v >= 0 for v in non_negative)):
            raise ValueError(f"invalid descent configuration: {self}")


class FirmwareLanding:
    """One hand-over to the firmware's landing, and how long to watch it.

    Args:
        start: When it began (host monotonic s).
        z, vz: The latest fresh height and vertical speed (None: not fresh).
        last_z: The last height ever known (None: never).
    """

    def __init__(self, config: DescentConfig, start: float, z: float | None, vz: float | None,
                 last_z: float | None, reason: str) -> None:
        self.config = config
        self.start = start
        self.reason = reason
        self.on_ground = z is not None and z <= config.land_height and (vz is None or abs(vz) < 0.2)
        height = last_z if last_z is not None else config.unknown_height
        self.duration = 0.0 if self.on_ground else (max(height, 0.0) + config.height_margin) / config.descent_rate
        """s the landing is planned to take."""
        self.confirmed = False
        """The firmware reported its high-level commander active after ``start``."""
        self.sent: list[float] = []
        """When the hand-over was sent."""

    @property
    def stage(self) -> str:
        return "ground" if self.on_ground else ("landing" if self.confirmed else "handing over")

    def due(self, now: float, period: float) -> bool:
        """Whether to send (again) now: at most once a ``period``; until confirmed, within
        the watchdog's 2 s (later the firmware has locked; a drone on the ground: 3 times)."""
        if self.sent and now - self.sent[-1] < 0.999 * period:
            return False
        if self.on_ground:
            return len(self.sent) < 3
        return not self.confirmed and now - self.start < WATCHDOG_SHUTDOWN

    def confirm(self, info_bits: int) -> None:
        """The supervisor's bits, logged after the hand-over began."""
        if info_bits & HL_ACTIVE_BIT:
            self.confirmed = True

    def ends(self) -> float:
        """When the last landing sent must have ended (the planner idle), plus ``settle``."""
        last = self.sent[-1] if self.sent else self.start
        return last + self.duration + self.config.settle

    def done(self, now: float) -> bool:
        if self.on_ground:
            return len(self.sent) >= 3
        return now >= self.ends() and (self.confirmed or now - self.start >= WATCHDOG_SHUTDOWN)
