"""The Crazyflie firmware's high-level commander as the emulator plays it, modelled on
``crtp_commander_high_level.c``, ``planner.c`` and ``commander.c`` (2026).

* Commands on CRTP port 8 (``SETPOINT_HL``), channel 0, as cflib's
  ``HighLevelCommander`` packs them: STOP 3 (``<BB``: command, group mask), TAKEOFF_2 7
  and LAND_2 8 (``<BBff?f``: command, group mask, height m, yaw rad, use current yaw,
  duration s). The group mask is not checked (one drone).
* Take-off and landing plan a rest-to-rest polynomial of the 7th order (zero velocity,
  acceleration and jerk at both ends) from the position the planner last saw to
  ``(x, y, height)`` over ``duration``. A landing asked for while one runs is refused
  (``plan_land`` answers 1); when it ends the planner is idle.
* An idle planner asks for the null setpoint (motors off); a running one for the
  trajectory's position and velocity. Each is offered every tick at the high-level
  priority (1), which only wins when nothing of higher priority holds the commander:
  any CRTP setpoint (priority 2: RPYT, generic STOP) stops the planner and takes over,
  and ``notify_setpoint_stop`` relaxes the priority to the lowest (1) so the high-level
  commander takes over again, with fresh setpoints (the commander watchdog never sees
  them age). With the supervisor locked or crashed it is blocked.
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass

import numpy as np

COMMAND_STOP, COMMAND_TAKEOFF_2, COMMAND_LAND_2 = 3, 7, 8
TAKEOFF_LAND_FORMAT = struct.Struct("<BBff?f")
STOP_FORMAT = struct.Struct("<BB")
PRIORITY_DISABLE, PRIORITY_HIGHLEVEL, PRIORITY_CRTP = 0, 1, 2
"""``COMMANDER_PRIORITY_*``; the lowest non-disabled priority equals the high-level one."""


def smoothstep7(s: float) -> tuple[float, float]:
    """Position and rate of the rest-to-rest 7th-order polynomial at ``s`` in [0, 1]."""
    s = min(max(s, 0.0), 1.0)
    return (35 * s**4 - 84 * s**5 + 70 * s**6 - 20 * s**7,
            140 * s**3 - 420 * s**4 + 420 * s**5 - 140 * s**6)


@dataclass(frozen=True)
class Trajectory:
    start: np.ndarray
    goal: np.ndarray
    begin: float
    duration: float
    landing: bool

    def at(self, now: float) -> tuple[np.ndarray, np.ndarray]:
        """Position and velocity the planner asks for at ``now``."""
        p, dp = smoothstep7((now - self.begin) / self.duration)
        delta = self.goal - self.start
        return self.start + p * delta, dp * delta / self.duration

    def finished(self, now: float) -> bool:
        return now - self.begin >= self.duration


class HighLevelCommander:
    """The planner: idle, flying (after a take-off) or landing."""

    def __init__(self) -> None:
        self.trajectory: Trajectory | None = None
        self.state = "idle"
        self.position = np.zeros(3)
        """Where the planner plans from (the state estimate while idle, as the firmware's ``pos``)."""
        self.counters = {"hl_takeoffs": 0, "hl_landings": 0, "hl_refused": 0, "hl_stops": 0}

    def command(self, data: bytes, now: float, blocked: bool) -> str | None:
        """One packet of port 8; None when understood (a refused landing included), else why not."""
        if not data:
            return "truncated"
        cmd = data[0]
        if cmd == COMMAND_STOP:
            if len(data) != STOP_FORMAT.size:
                return "truncated" if len(data) < STOP_FORMAT.size else "oversize"
            self.stop()
            return None
        if cmd not in (COMMAND_TAKEOFF_2, COMMAND_LAND_2):
            return "unsupported"
        if len(data) != TAKEOFF_LAND_FORMAT.size:
            return "truncated" if len(data) < TAKEOFF_LAND_FORMAT.size else "oversize"
        _, _, height, _, _, duration = TAKEOFF_LAND_FORMAT.unpack(data)
        if not (math.isfinite(height) and math.isfinite(duration) and duration > 0):
            return "non_finite"
        landing = cmd == COMMAND_LAND_2
        if blocked or (landing and self.state == "landing"):
            self.counters["hl_refused"] += 1  # EBUSY, or plan_land's 1: nothing changes
            return None
        goal = np.array([self.position[0], self.position[1], height])
        self.trajectory = Trajectory(self.position.copy(), goal, now, float(duration), landing)
        self.state = "landing" if landing else "flying"
        self.counters["hl_landings" if landing else "hl_takeoffs"] += 1
        return None

    def stop(self) -> None:
        """``plan_stop``: idle (a CRTP setpoint does this too)."""
        if self.state != "idle":
            self.counters["hl_stops"] += 1
        self.state, self.trajectory = "idle", None

    def setpoint(self, now: float, position: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
        """What the planner asks for now (None: the null setpoint, motors off);
        ``position``: the state estimate, which an idle planner plans from next."""
        if self.trajectory is not None and self.state == "landing" and self.trajectory.finished(now):
            self.state, self.trajectory = "idle", None
        if self.state == "idle" or self.trajectory is None:
            self.position = np.asarray(position, dtype=np.float64).copy()
            return None
        ref, vel = self.trajectory.at(now)
        self.position = ref
        return ref, vel

    def finished(self, now: float) -> bool:
        """``crtpCommanderHighLevelIsTrajectoryFinished``."""
        return self.trajectory is None or self.trajectory.finished(now)
