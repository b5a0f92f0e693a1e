"""The host side of the arm protocol: one UDP socket to the robot.

:class:`ArmLink` says ``HELLO`` (the robot then streams state to this socket, unless
another host holds control), ``RELEASE`` when it closes, sends
commands numbered from 1 in a random session, and receives packets, dropping (and
counting) malformed ones, packets from another address and stale or out-of-order ones.
It has no thread and no ROS: ``ros_nodes/hardware_bridge.py`` drives it.
"""

from __future__ import annotations

import contextlib
import secrets
import socket
import time
from dataclasses import dataclass

import numpy as np

from sim2real.hardware.arm_protocol import (
    COMMAND_SIZES,
    Command,
    CommandMode,
    Header,
    Hello,
    Mission,
    PacketError,
    PacketStats,
    PacketType,
    Release,
    SequenceGate,
    State,
    decode,
    encode,
)


@dataclass(frozen=True)
class Received:
    header: Header
    payload: State | Mission
    received_at: float
    """Host monotonic time (s) of arrival."""


class ArmLink:
    """UDP link to one arm.

    Args:
        robot: ``(host, port)`` of the robot.
        mode: The command space this host sends.
        local: ``(host, port)`` to bind (port 0: any free port); loopback by default.
    """

    def __init__(self, robot: tuple[str, int], mode: CommandMode,
                 local: tuple[str, int] = ("127.0.0.1", 0)) -> None:
        self.robot = (socket.gethostbyname(robot[0]), int(robot[1]))
        self.mode = mode
        self.session = secrets.randbits(32) or 1
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(local)
        self.stats = PacketStats()
        self._gates = {PacketType.STATE: SequenceGate(), PacketType.MISSION: SequenceGate()}
        self._sequence = 0
        self._hello_sequence = 0

    @property
    def local_address(self) -> tuple[str, int]:
        return self.sock.getsockname()

    def hello(self) -> None:
        """Ask the robot to stream state here (repeat it until states arrive)."""
        self._hello_sequence += 1
        self.sock.sendto(encode(Hello(self.session), self._hello_sequence, time.monotonic_ns()), self.robot)

    def send_command(self, values: np.ndarray, state_sequence: int) -> int:
        """Send one command computed from state packet ``state_sequence``; returns its sequence.

        Raises:
            ValueError: wrong size or non-finite values (nothing is sent).
        """
        values = np.asarray(values, dtype=np.float64).ravel()
        if values.size != COMMAND_SIZES[self.mode]:
            raise ValueError(f"{self.mode.name.lower()} command needs {COMMAND_SIZES[self.mode]} values, "
                             f"got {values.size}")
        data = encode(Command(self.session, state_sequence, self.mode, values), self._sequence + 1,
                      time.monotonic_ns())
        self._sequence += 1
        self.sock.sendto(data, self.robot)
        return self._sequence

    def receive(self, timeout: float) -> Received | None:
        """The next valid packet within ``timeout`` seconds (None if none); invalid ones are
        counted in :attr:`stats` and skipped."""
        end = time.monotonic() + timeout
        while (left := end - time.monotonic()) > 0:
            self.sock.settimeout(left)
            try:
                data, addr = self.sock.recvfrom(2048)
            except (TimeoutError, BlockingIOError):
                return None
            except OSError:  # closed under us (shutdown)
                return None
            arrived = time.monotonic()
            if addr != self.robot:
                self.stats.reject("peer")
                continue
            try:
                header, payload = decode(data)
            except PacketError as exc:
                self.stats.reject(exc.reason)
                continue
            if not isinstance(payload, State | Mission):
                self.stats.reject("type")
                continue
            if isinstance(payload, State) and payload.mode != self.mode:
                self.stats.reject("mode")
                continue
            if not self._gates[header.type].accept(header.sequence):
                self.stats.reject("sequence")
                continue
            self.stats.accept(header.type)
            return Received(header, payload, arrived)
        return None

    def release(self) -> None:
        """Give control back to the robot at once (it holds; another host may take over)."""
        self._hello_sequence += 1
        self.sock.sendto(encode(Release(self.session), self._hello_sequence, time.monotonic_ns()), self.robot)

    def close(self) -> None:
        """Release control (best effort: the robot's lease timeout covers a lost packet) and close."""
        with contextlib.suppress(OSError):  # already closed, or the network is gone
            self.release()
        self.sock.close()
