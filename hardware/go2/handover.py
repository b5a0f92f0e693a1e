"""Handing a Go2 from its sport mode to low-level control, and back.

A Go2 boots in sport mode, standing, its own controller on the motors. Releasing that
controller (the motion switcher's ReleaseMode) makes the motors limp at once: a standing
robot drops. Unitree's own low-level example (``example/go2/low_level/go2_stand_example.py``
in ``unitree_sdk2_python``) therefore loops CheckMode -> the sport client's StandDown ->
ReleaseMode until no mode runs, and only then writes ``rt/lowcmd``, standing the robot
up from lying with its own gains. The sequence here is that one, with the wait made
explicit (the robot must be seen lying in ``rt/lowstate`` before it is released):

    take over:  CheckMode -> (running) StandDown -> lying? -> ReleaseMode -> CheckMode ''
                (the backend's loop then starts in damping; enable() stands it up)
    hand back:  (the backend lies it down with its own targets) -> lying? -> SelectMode
                (the mode that ran before) -> CheckMode reports it again

Nothing here releases a robot that is not lying: without the lowstate saying so the take
over fails (:class:`~sim2real.hardware.backend.HardwareError` from the backend) and sport
mode keeps the robot. A hand back with the robot not lying is skipped (it stays damped,
the reason recorded): sport mode may stand it up.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from sim2real.hardware.go2.codec import Codec, FrameError
from sim2real.hardware.go2.dds import RawReader
from sim2real.hardware.go2.motion_switcher import MotionSwitcherClient
from sim2real.hardware.go2.protocol import parse_state
from sim2real.hardware.go2.sport import SportClient
from sim2real.hardware.go2.state_machine import is_lying

LIE_DOWN_WAIT = 6.0
"""s allowed for StandDown to lay the robot down (about 1.5 s on the emulator)."""


def newest_lying(reader: RawReader, codec: Codec, wait: float = 0.2) -> bool | None:
    """Whether the newest valid ``rt/lowstate`` frame shows the robot lying (None: no
    valid frame within ``wait`` s)."""
    end, state = time.monotonic() + wait, None
    while time.monotonic() < end:
        for frame in reader.take(16):
            try:
                state = parse_state(codec, frame)
            except FrameError:
                continue
        if state is not None:
            return is_lying(state.q, state.dq)
        reader.wait(max(end - time.monotonic(), 0.0))
    return None


class HandoverError(RuntimeError):
    """Sport mode could not be released safely (the message says what the robot did)."""


@dataclass
class SportHandover:
    """The take-over and hand-back sequences over one DDS participant's two clients.
    ``lying()`` reads the newest ``rt/lowstate`` (None: no valid frame within its wait)."""

    switcher: MotionSwitcherClient
    sport: SportClient
    lying: Callable[[], bool | None]
    mode: str = ""
    """The high-level mode that ran before the take-over ('' : none), to restore."""

    def take_over(self, timeout: float) -> str:
        """Release sport mode with the robot lying; the mode that ran ('' : none did).

        Raises:
            HandoverError: no answer, or the robot not lying after StandDown, in time.
        """
        end = time.monotonic() + timeout
        while (left := end - time.monotonic()) > 0:
            mode = self.switcher.active_mode(left)
            if mode is None:
                continue  # no answer yet: ask again until the deadline
            if mode == "":
                return self.mode
            self.mode = mode
            if not self.lying():
                code = self.sport.stand_down(max(end - time.monotonic(), 0.1))
                if not self._wait_lying(min(end, time.monotonic() + LIE_DOWN_WAIT)):
                    raise HandoverError(f"sport mode '{mode}': the robot is not lying after StandDown "
                                        f"(code {code}); not releasing a standing robot")
            self.switcher.release_mode(max(end - time.monotonic(), 0.1))
        raise HandoverError("the motion switcher did not release sport mode in time")

    def hand_back(self, timeout: float) -> str:
        """SelectMode the mode that ran before the take-over, with the robot lying; ''
        when done (or nothing to restore), else why not."""
        if not self.mode:
            return ""
        end = time.monotonic() + timeout
        if not self._wait_lying(end):  # just laid down: the legs settle for a moment
            return f"sport mode '{self.mode}' not restored: the robot is not lying"
        while (left := end - time.monotonic()) > 0:
            running = self.switcher.active_mode(left)
            if running:
                return ""
            if running == "":
                self.switcher.select_mode(self.mode, max(end - time.monotonic(), 0.1))
        return f"sport mode '{self.mode}' not restored: no answer from the motion switcher"

    def _wait_lying(self, until: float) -> bool:
        while time.monotonic() < until:
            if self.lying():
                return True
            time.sleep(0.05)
        return False
