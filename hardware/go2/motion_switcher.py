"""Unitree's motion-switcher service, both sides: the host releases sport mode with it
before any low-level command (and selects it again when it hands the robot back), and
the emulator answers it as the robot does.

Wire protocol: the service ``motion_switcher`` of :mod:`.rpc`; API ids (Unitree's SDK,
``unitree_sdk2py/comm/motion_switcher/motion_switcher_api.py``): CheckMode 1001 (answer
``{"name": ..., "form": ...}``, an empty name when no high-level mode runs), SelectMode
1002 (parameter ``{"name": ...}``), ReleaseMode 1003. While a mode runs (sport mode,
after boot) the robot's own controller drives the motors and fights any low-level
command. Releasing it stops that controller at once: a standing robot drops (the
sequence that avoids it is :mod:`.handover`).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field

from cyclonedds.domain import DomainParticipant

from sim2real.hardware.go2.rpc import SERVER_API_NOT_IMPLEMENTED, SERVER_API_PARAMETER, RpcClient, RpcServer

SERVICE = "motion_switcher"
CHECK_MODE, SELECT_MODE, RELEASE_MODE = 1001, 1002, 1003


class MotionSwitcherClient(RpcClient):
    """The host's side."""

    def __init__(self, dp: DomainParticipant) -> None:
        super().__init__(dp, SERVICE)

    def active_mode(self, timeout: float) -> str | None:
        """The running high-level mode ('' when released), None when the call failed."""
        code, data = self.call(CHECK_MODE, timeout)
        if code != 0:
            return None
        try:
            return str(json.loads(data).get("name", ""))
        except (ValueError, AttributeError):
            return None

    def release_mode(self, timeout: float) -> int:
        """One ReleaseMode call; its status code."""
        return self.call(RELEASE_MODE, timeout)[0]

    def select_mode(self, name: str, timeout: float) -> int:
        """One SelectMode call (``name``: what CheckMode reported before the release); its code."""
        return self.call(SELECT_MODE, timeout, json.dumps({"name": name}))[0]


@dataclass
class MotionSwitcherService:
    """The robot's side, polled by the emulator's loop. ``on_change(old, new)`` runs
    whenever the mode changes (the emulator stops or starts its sport controller)."""

    dp: DomainParticipant
    mode: str = "normal"
    """The running high-level mode ('' : released, low-level commands take effect)."""
    on_change: Callable[[str, str], None] = field(default=lambda old, new: None)

    def __post_init__(self) -> None:
        self.server = RpcServer(self.dp, SERVICE, self._answer)

    @property
    def calls(self) -> dict[int, int]:
        """API id -> requests answered."""
        return self.server.calls

    def poll(self) -> None:
        self.server.poll()

    def _answer(self, api: int, parameter: str) -> tuple[int, str]:
        if api == CHECK_MODE:
            return 0, json.dumps({"name": self.mode, "form": "0"})
        if api == RELEASE_MODE:
            self._set("")
            return 0, ""
        if api == SELECT_MODE:
            try:
                name = str(json.loads(parameter)["name"])
            except (ValueError, KeyError, TypeError):
                return SERVER_API_PARAMETER, ""
            self._set(name)
            return 0, ""
        return SERVER_API_NOT_IMPLEMENTED, ""

    def _set(self, mode: str) -> None:
        old, self.mode = self.mode, mode
        if old != mode:
            self.on_change(old, mode)
