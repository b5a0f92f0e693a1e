"""The Go2's sport mode as the emulator plays it: the robot's own controller, which owns
the motors from boot until the motion switcher releases it.

* It boots standing (a Go2 stands up by itself after power-on) and holds the pose with
  its own gains.
* The sport service (:mod:`sim2real.hardware.go2.sport`) answers StandDown 1005 (lie
  down: the legs fold to :data:`~sim2real.hardware.go2.state_machine.LYING_POSE` over
  :data:`MOTION_SECONDS`), StandUp 1004 / BalanceStand 1002 / RecoveryStand 1006 (back
  to the standing pose), Damp 1001 (no stiffness, damping only: the robot sinks) and
  StopMove 1003 (nothing moves here); each answers 0 at once, while the motion runs on.
  Other ids: "not implemented". Released, the service is gone: nothing answers.
* ReleaseMode stops the controller at once, whatever the robot is doing: the motors go
  limp. Standing (or on the way up or down), the robot drops; each such release is
  counted (``released_standing``) and the emulator's summary reports the fastest fall
  of the base it saw.
* SelectMode starts it again from where the robot is: lying (folded, still) it keeps
  the lying pose, otherwise it stands.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np

from sim2real.hardware.go2 import sport
from sim2real.hardware.go2.rpc import SERVER_API_NOT_IMPLEMENTED
from sim2real.hardware.go2.state_machine import LYING_POSE, is_lying
from sim2real.sim.quadruped import constants as C

SPORT_KP, SPORT_KD = 60.0, 5.0
"""Gains of the emulated sport controller's poses (those of Unitree's stand example)."""
DAMP_KD = 4.0
"""Kd of its Damp (no stiffness)."""
MOTION_SECONDS = 1.5
"""Duration of a stand-down or stand-up."""


@dataclass
class Targets:
    q: np.ndarray
    kp: float
    kd: float


class SportController:
    """Posture and motor targets of sport mode; ``running`` False once released."""

    def __init__(self, running: bool) -> None:
        self.running = running
        self.posture = "standing" if running else "off"
        """standing, lying, standing_up, lying_down, damped, off (released)."""
        self.counts: Counter[str] = Counter()
        self._from = C.DEFAULT_POSE.copy()
        self._to = C.DEFAULT_POSE.copy()
        self._start = 0.0

    # -- the sport service -------------------------------------------------------------
    def answer(self, api: int, now: float, q: np.ndarray) -> tuple[int, str] | None:
        """The service's answer to ``api`` at simulated time ``now`` (``q``: the joints now)."""
        if not self.running:
            return None
        self._settle(now)
        if api == sport.STAND_DOWN:
            self.counts["stand_downs"] += 1
            self._move(now, q, LYING_POSE, "lying_down")
        elif api in (sport.STAND_UP, sport.BALANCE_STAND, sport.RECOVERY_STAND):
            self.counts["stand_ups"] += 1
            self._move(now, q, C.DEFAULT_POSE, "standing_up")
        elif api == sport.DAMP:
            self.posture = "damped"
        elif api != sport.STOP_MOVE:
            return SERVER_API_NOT_IMPLEMENTED, ""
        return 0, ""

    # -- the motion switcher -------------------------------------------------------------
    def release(self, now: float, q: np.ndarray, dq: np.ndarray) -> None:
        """ReleaseMode: the controller stops now."""
        self._settle(now)
        if self.posture != "damped" and not (self.posture == "lying" and is_lying(q, dq)):
            self.counts["released_standing"] += 1
        self.running, self.posture = False, "off"

    def select(self, now: float, q: np.ndarray, dq: np.ndarray) -> None:
        """SelectMode: the controller starts again from the robot's pose."""
        self.running = True
        if is_lying(q, dq):
            self._move(now, q, LYING_POSE, "lying_down")
        else:
            self._move(now, q, C.DEFAULT_POSE, "standing_up")

    # -- every tick ------------------------------------------------------------------------
    def targets(self, now: float) -> Targets:
        """What the controller asks of the motors now (only while running)."""
        self._settle(now)
        if self.posture == "damped":
            return Targets(np.zeros(C.NUM_JOINTS), 0.0, DAMP_KD)
        s = min(max((now - self._start) / MOTION_SECONDS, 0.0), 1.0)
        return Targets((1 - s) * self._from + s * self._to, SPORT_KP, SPORT_KD)

    def _move(self, now: float, q: np.ndarray, goal: np.ndarray, posture: str) -> None:
        self._from, self._to, self._start, self.posture = np.asarray(q, float).copy(), goal.copy(), now, posture

    def _settle(self, now: float) -> None:
        if now - self._start >= MOTION_SECONDS:
            self.posture = {"lying_down": "lying", "standing_up": "standing"}.get(self.posture, self.posture)
