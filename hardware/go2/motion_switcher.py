"""Unitree's motion-switcher service, both sides: the host releases sport mode with it
before any low-level command, and the emulator answers it as the robot does.

Wire protocol (Unitree's RPC over DDS, ``unitree_sdk2py/rpc``): requests
(``unitree_api::msg::dds_::Request_``) on ``rt/api/motion_switcher/request``, answers
(``Response_``) on ``rt/api/motion_switcher/response``, matched by
``header.identity.id``; API ids CheckMode 1001 (answer ``{"name": ..., "form": ...}``,
an empty name when no high-level mode runs), SelectMode 1002, ReleaseMode 1003. While a
mode runs (sport mode, after boot) the robot's own controller drives the motors and
fights any low-level command.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field

from cyclonedds.domain import DomainParticipant
from cyclonedds.pub import DataWriter
from cyclonedds.sub import DataReader
from cyclonedds.topic import Topic

from sim2real.hardware.go2.dds import SERVICE_QOS
from sim2real.hardware.go2.types import Request_, Response_, request, response

REQUEST_TOPIC = "rt/api/motion_switcher/request"
RESPONSE_TOPIC = "rt/api/motion_switcher/response"
CHECK_MODE, SELECT_MODE, RELEASE_MODE = 1001, 1002, 1003
SERVER_API_NOT_IMPLEMENTED = 3203
CLIENT_API_TIMEOUT = 3104


class MotionSwitcherClient:
    """The host's side: calls with a timeout, answers matched by request id."""

    def __init__(self, dp: DomainParticipant) -> None:
        self.writer = DataWriter(dp, Topic(dp, REQUEST_TOPIC, Request_), SERVICE_QOS)
        self.reader = DataReader(dp, Topic(dp, RESPONSE_TOPIC, Response_), SERVICE_QOS)
        self._next_id = time.monotonic_ns()

    def call(self, api_id: int, timeout: float, parameter: str = "{}") -> tuple[int, str]:
        """(status code, data); ``CLIENT_API_TIMEOUT`` when nothing answered in ``timeout`` s.
        The request is repeated every 0.25 s (a request written before discovery
        finished is lost)."""
        self._next_id += 1
        rid, end, resend = self._next_id, time.monotonic() + timeout, 0.0
        while time.monotonic() < end:
            if time.monotonic() >= resend:
                self.writer.write(request(rid, api_id, parameter))
                resend = time.monotonic() + 0.25
            for answer in self.reader.take(16):
                if isinstance(answer, Response_) and answer.header.identity.id == rid:
                    return int(answer.header.status.code), str(answer.data)
            time.sleep(0.005)
        return CLIENT_API_TIMEOUT, ""

    def active_mode(self, timeout: float) -> str | None:
        """The running high-level mode ('' when released), None when the call failed."""
        code, data = self.call(CHECK_MODE, timeout)
        if code != 0:
            return None
        try:
            return str(json.loads(data).get("name", ""))
        except (ValueError, AttributeError):
            return None

    def release(self, timeout: float) -> None:
        """Release every high-level mode (CheckMode -> ReleaseMode until none runs).

        Raises:
            TimeoutError: still a mode running, or no answer, after ``timeout`` s.
        """
        end = time.monotonic() + timeout
        while (left := end - time.monotonic()) > 0:
            mode = self.active_mode(left)
            if mode == "":
                return
            if mode is not None:
                self.call(RELEASE_MODE, max(end - time.monotonic(), 0.0))
        raise TimeoutError("the motion switcher did not release sport mode")


@dataclass
class MotionSwitcherService:
    """The robot's side, polled by the emulator's loop."""

    dp: DomainParticipant
    mode: str = "normal"
    """The running high-level mode ('' : released, low-level commands take effect)."""
    calls: dict[int, int] = field(default_factory=dict)
    """API id -> requests answered."""

    def __post_init__(self) -> None:
        self.reader = DataReader(self.dp, Topic(self.dp, REQUEST_TOPIC, Request_), SERVICE_QOS)
        self.writer = DataWriter(self.dp, Topic(self.dp, RESPONSE_TOPIC, Response_), SERVICE_QOS)

    def poll(self) -> None:
        for req in self.reader.take(16):
            if not isinstance(req, Request_):
                continue
            identity = req.header.identity
            api = int(identity.api_id)
            if api == CHECK_MODE:
                code, data = 0, json.dumps({"name": self.mode, "form": "0"})
            elif api == RELEASE_MODE:
                self.mode, code, data = "", 0, ""
            elif api == SELECT_MODE:
                try:
                    self.mode, code, data = str(json.loads(req.parameter)["name"]), 0, ""
                except (ValueError, KeyError, TypeError):
                    code, data = 3204, ""  # RPC_ERR_SERVER_API_PARAMETER
            else:
                code, data = SERVER_API_NOT_IMPLEMENTED, ""
            self.calls[api] = self.calls.get(api, 0) + 1
            if not req.header.policy.noreply:
                self.writer.write(response(identity, code, data))
