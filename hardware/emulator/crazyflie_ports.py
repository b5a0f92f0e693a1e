"""The emulated Crazyflie firmware's answer on each CRTP port: link control (echo,
source), platform (protocol version), log and parameter tables, memory count, the
RPYT, generic and high-level commanders, localization's and the supervisor's emergency
stops.

Each handler returns ``None`` when it accepted the packet, or why not (counted by the
emulator as the packet's rejection reason).
"""

from __future__ import annotations

import math
import struct
from collections.abc import Callable

from sim2real.hardware.crazyflie import crtp
from sim2real.hardware.emulator.crazyflie_firmware import Firmware
from sim2real.hardware.emulator.crazyflie_toc import LOG_TOC, LogSubsystem, ParamSubsystem, toc_reply

PROTOCOL_VERSION = 12
"""CRTP protocol version the firmware reports (cflib 0.1.34 expects 12)."""

Reply = Callable[[int, int, bytes], None]
"""Sends ``(port, channel, data)`` to the host."""


class CrtpPorts:
    """The firmware's CRTP services over ``firmware``, ``params`` and ``logs``."""

    def __init__(self, firmware: Firmware, params: ParamSubsystem, logs: LogSubsystem, reply: Reply) -> None:
        self.firmware, self.params, self.logs, self.reply = firmware, params, logs, reply

    def handle(self, pk: crtp.Packet, now: float) -> str | None:
        """Act on one packet; ``None`` when accepted, else the reason it was not."""
        handler = self._handlers.get(pk.port)
        if handler is None:
            return "unknown_port"
        return handler(self, pk, now)

    def _link(self, pk: crtp.Packet, now: float) -> str | None:
        if pk.channel == crtp.LINK_ECHO:
            self.reply(crtp.PORT_LINKCTRL, crtp.LINK_ECHO, pk.data)
        elif pk.channel == crtp.LINK_SOURCE:
            self.reply(crtp.PORT_LINKCTRL, crtp.LINK_SOURCE, crtp.LINK_SOURCE_MAGIC.ljust(30, b"\0")[:30])
        elif pk.channel == crtp.NULL_CHANNEL:
            self.reply(crtp.PORT_LINKCTRL, crtp.NULL_CHANNEL, b"")
        return None

    def _platform(self, pk: crtp.Packet, now: float) -> str | None:
        if pk.channel == crtp.PLATFORM_VERSION:
            if not pk.data:
                return "truncated"
            if pk.data[0] == crtp.VERSION_GET_PROTOCOL:
                self.reply(crtp.PORT_PLATFORM, crtp.PLATFORM_VERSION, bytes((0, PROTOCOL_VERSION)))
        return None

    def _log(self, pk: crtp.Packet, now: float) -> str | None:
        if pk.channel == crtp.TOC_CHANNEL:
            answer = toc_reply(LOG_TOC, pk.data, log=True)
        elif pk.channel == crtp.LOG_SETTINGS:
            answer = self.logs.control(pk.data, now)
        else:
            return "unsupported"
        if answer is None:
            return "truncated"
        self.reply(crtp.PORT_LOG, pk.channel, answer)
        return None

    def _param(self, pk: crtp.Packet, now: float) -> str | None:
        if pk.channel == crtp.TOC_CHANNEL:
            answer = toc_reply(self.params.entries, pk.data, log=False)
        elif pk.channel == crtp.PARAM_READ:
            answer = self.params.read(pk.data)
        elif pk.channel == crtp.PARAM_WRITE:
            try:
                answer, _ = self.params.write(pk.data)
            except ValueError as exc:
                return str(exc)
            if answer is None:
                return "read_only"
        else:
            return "unsupported"
        if answer is None:
            return "truncated"
        self.reply(crtp.PORT_PARAM, pk.channel, answer)
        return None

    def _mem(self, pk: crtp.Packet, now: float) -> str | None:
        if pk.channel == crtp.MEM_INFO and pk.data[:1] == bytes((crtp.MEM_INFO_NBR,)):
            self.reply(crtp.PORT_MEM, crtp.MEM_INFO, bytes((crtp.MEM_INFO_NBR, 0)))
            return None
        return "unsupported"

    def _commander(self, pk: crtp.Packet, now: float) -> str | None:
        if pk.channel != 0:
            return "unsupported"
        if len(pk.data) != crtp.RPYT_FORMAT.size:
            return "truncated" if len(pk.data) < crtp.RPYT_FORMAT.size else "oversize"
        roll, pitch, yaw, thrust = crtp.RPYT_FORMAT.unpack(pk.data)
        if not all(math.isfinite(v) for v in (roll, pitch, yaw)):
            return "non_finite"
        self.firmware.rpyt(roll, pitch, yaw, thrust, now)
        return None

    def _generic(self, pk: crtp.Packet, now: float) -> str | None:
        if not pk.data:
            return "truncated"
        if pk.channel == crtp.GENERIC_SETPOINT and pk.data[0] == crtp.GENERIC_TYPE_STOP:
            self.firmware.stop_setpoint(now)
            return None
        if pk.channel == crtp.GENERIC_META and pk.data[0] == crtp.META_NOTIFY_SETPOINT_STOP:
            if len(pk.data) != 5:
                return "truncated"
            self.firmware.notify_setpoint_stop()  # the high-level commander takes over
            return None
        return "unsupported"

    def _high_level(self, pk: crtp.Packet, now: float) -> str | None:
        if pk.channel != 0:
            return "unsupported"
        return self.firmware.high_level(pk.data, now)

    def _localization(self, pk: crtp.Packet, now: float) -> str | None:
        if pk.channel == crtp.LOCALIZATION_GENERIC and pk.data[:1] == bytes((crtp.LOCALIZATION_EMERGENCY_STOP,)):
            self.firmware.emergency_stop("emergency stop (localization)")
            return None
        return "unsupported"

    def _supervisor(self, pk: crtp.Packet, now: float) -> str | None:
        if not pk.data:
            return "truncated"
        cmd = pk.data[0]
        if pk.channel == crtp.SUPERVISOR_INFO and cmd == crtp.SUPERVISOR_GET_STATE:
            self.reply(crtp.PORT_SUPERVISOR, crtp.SUPERVISOR_INFO,
                        struct.pack("<BH", cmd | crtp.SUPERVISOR_REPLY, self.firmware.info_bits()))
            return None
        if pk.channel == crtp.SUPERVISOR_COMMAND and cmd == crtp.SUPERVISOR_EMERGENCY_STOP:
            self.firmware.emergency_stop("emergency stop (supervisor)")
            return None
        return "unsupported"

    _handlers: dict[int, Callable[[CrtpPorts, crtp.Packet, float], str | None]] = {
        crtp.PORT_LINKCTRL: _link, crtp.PORT_PLATFORM: _platform, crtp.PORT_LOG: _log,
        crtp.PORT_PARAM: _param, crtp.PORT_MEM: _mem, crtp.PORT_COMMANDER: _commander,
        crtp.PORT_COMMANDER_GENERIC: _generic, crtp.PORT_LOCALIZATION: _localization,
        crtp.PORT_SUPERVISOR: _supervisor, crtp.PORT_SETPOINT_HL: _high_level,
    }
