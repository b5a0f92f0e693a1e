"""Unitree's request/response services over DDS, both sides (``unitree_sdk2py/rpc``).

A service ``NAME`` takes requests (``unitree_api::msg::dds_::Request_``) on
``rt/api/NAME/request`` and answers (``Response_``) on ``rt/api/NAME/response``, matched by
``header.identity.id``; ``header.identity.api_id`` names the call and ``parameter`` /
``data`` carry JSON. The motion switcher (:mod:`.motion_switcher`) and the sport service
(:mod:`.sport`) are two such services.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from cyclonedds.domain import DomainParticipant
from cyclonedds.pub import DataWriter
from cyclonedds.sub import DataReader
from cyclonedds.topic import Topic

from sim2real.hardware.go2.dds import SERVICE_QOS
from sim2real.hardware.go2.types import Request_, Response_, request, response

CLIENT_API_TIMEOUT = 3104
"""The SDK client's code for "no answer within the timeout" (``RPC_ERR_CLIENT_API_TIMEOUT``)."""
SERVER_API_NOT_IMPLEMENTED = 3203
"""``RPC_ERR_SERVER_API_NOT_IMPL``."""
SERVER_API_PARAMETER = 3204
"""``RPC_ERR_SERVER_API_PARAMETER``."""


def topics(service: str) -> tuple[str, str]:
    """The request and response topics of ``service`` (the SDK's ``GetClientChannelName``)."""
    return f"rt/api/{service}/request", f"rt/api/{service}/response"


class RpcClient:
    """The host's side of one service: calls with a timeout, answers matched by request id."""

    def __init__(self, dp: DomainParticipant, service: str) -> None:
        request_topic, response_topic = topics(service)
        self.service = service
        self.writer = DataWriter(dp, Topic(dp, request_topic, Request_), SERVICE_QOS)
        self.reader = DataReader(dp, Topic(dp, response_topic, Response_), SERVICE_QOS)
        self._next_id = time.monotonic_ns()

    def call(self, api_id: int, timeout: float, parameter: str = "{}") -> tuple[int, str]:
        """(status code, data); :data:`CLIENT_API_TIMEOUT` when nothing answered in
        ``timeout`` s. The request is repeated every 0.25 s (a request written before
        discovery finished is lost); every service here is idempotent."""
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


Handler = Callable[[int, str], "tuple[int, str] | None"]
"""``(api_id, parameter) -> (code, data)``, or None for no answer at all (a service that
is not running)."""


@dataclass
class RpcServer:
    """The robot's side of one service, polled by the emulator's loop."""

    dp: DomainParticipant
    service: str
    handler: Handler
    calls: dict[int, int] = field(default_factory=dict)
    """API id -> requests received."""

    def __post_init__(self) -> None:
        request_topic, response_topic = topics(self.service)
        self.reader = DataReader(self.dp, Topic(self.dp, request_topic, Request_), SERVICE_QOS)
        self.writer = DataWriter(self.dp, Topic(self.dp, response_topic, Response_), SERVICE_QOS)
        self._answered: dict[int, tuple[int, str]] = {}

    def poll(self) -> None:
        for req in self.reader.take(16):
            if not isinstance(req, Request_):
                continue
            identity = req.header.identity
            rid, api = int(identity.id), int(identity.api_id)
            answer = self._answered.get(rid)
            if answer is None:  # a repeated request (the client resends) is answered, not run, again
                self.calls[api] = self.calls.get(api, 0) + 1
                answer = self.handler(api, str(req.parameter))
                if answer is None:
                    continue
                self._answered[rid] = answer
                if len(self._answered) > 256:
                    del self._answered[next(iter(self._answered))]
            if not req.header.policy.noreply:
                self.writer.write(response(identity, *answer))
