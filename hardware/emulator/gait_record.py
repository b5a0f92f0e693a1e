"""How well a legged robot walks, seen by its emulator (the simulator's truth): what
``sim2real deploy --backend real --emulate`` reports as the quadruped's task success.

While the robot is powered (some joint stiffness commanded) and upright, the base's
velocity in its heading frame is compared with the operator's command; a fall is the
base dropping below :data:`FALLEN_HEIGHT` (or tilting past 60 deg) while powered. Each
fall keeps the host's clock time at which it came (``fall_times``): a robot the host lies
down at the end of a run, its stiffness still on, drops below that height too, and only
the one who knows when the run ended can tell that from a fall.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

FALLEN_HEIGHT = 0.15
"""m: below this a powered Go2 (standing 0.29 m) is down."""
UPRIGHT_COS = 0.5
"""cos 60 deg: the body's z axis at least this close to vertical."""
SAMPLE_EVERY = 10
"""Physics ticks between samples (50 Hz at the Go2's 500 Hz)."""


@dataclass
class GaitRecord:
    """Velocity tracking and falls of a walking robot."""

    settle_seconds: float = 2.0
    """Powered, upright time before tracking counts (standing up, getting into the gait)."""
    _ticks: int = 0
    _powered_since: float = math.nan
    _errors: list[float] = field(default_factory=list)
    _speeds: list[float] = field(default_factory=list)
    falls: int = 0
    fall_times: list[float] = field(default_factory=list)
    """The clock (``time.monotonic()``, shared by the machine's processes) at each fall."""
    _was_up: bool = False

    def sample(self, t: float, qpos: np.ndarray, qvel: np.ndarray, cmd_vel: np.ndarray, powered: bool,
               now: float) -> None:
        """One physics tick at simulated time ``t`` (free-joint ``qpos``/``qvel`` first) and
        clock time ``now``."""
        self._ticks += 1
        if self._ticks % SAMPLE_EVERY:
            return
        w, x, y, z = qpos[3:7]
        up = 1 - 2 * (x * x + y * y) > UPRIGHT_COS and qpos[2] > FALLEN_HEIGHT
        if powered and self._was_up and not up:
            self.falls += 1
            self.fall_times.append(now)
        self._was_up = up and powered
        if not (powered and up):
            self._powered_since = math.nan
            return
        if math.isnan(self._powered_since):
            self._powered_since = t
        if t - self._powered_since < self.settle_seconds:
            return
        yaw = math.atan2(2 * (w * z + x * y), 1 - 2 * (y * y + z * z))
        c, s = math.cos(yaw), math.sin(yaw)
        vx, vy = c * qvel[0] + s * qvel[1], -s * qvel[0] + c * qvel[1]
        self._errors.append(math.hypot(vx - cmd_vel[0], vy - cmd_vel[1]))
        self._speeds.append(vx)

    def summary(self) -> dict[str, float | int | list[float]]:
        n = len(self._errors)
        return {"walking_s": round(n * SAMPLE_EVERY * 0.002, 1), "falls": self.falls, "fall_times": self.fall_times,
                "mean_vx": round(float(np.mean(self._speeds)), 3) if n else math.nan,
                "velocity_error_rms": round(float(np.sqrt(np.mean(np.square(self._errors)))), 3) if n else math.nan}
