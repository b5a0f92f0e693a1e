"""CRTP, the Crazyflie's packet protocol, as cflib 0.1.34's UDP link carries it.

One datagram is one packet: a header byte (port in the high nibble, two legacy bits
``0b1100`` set by cflib, channel in the low two bits) and 0 to 30 data bytes. No
handshake, no checksum, no resend: a malformed datagram can only be dropped (and
counted). Numbers below are the firmware's and cflib's (``crtpstack.py``,
``log.py``, ``param.py``, ``commander.py``, ``supervisor.py``, ``localization.py``).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

MAX_DATA = 30
"""Bytes of data after the header (``CRTP_MAX_DATA_SIZE`` in the firmware)."""

# -- ports -------------------------------------------------------------------------------
PORT_CONSOLE = 0x0
PORT_PARAM = 0x2
PORT_COMMANDER = 0x3
"""Legacy roll/pitch/yaw-rate/thrust setpoints (``crtp_commander_rpyt.c``)."""
PORT_MEM = 0x4
PORT_LOG = 0x5
PORT_LOCALIZATION = 0x6
PORT_COMMANDER_GENERIC = 0x7
PORT_SETPOINT_HL = 0x8
PORT_SUPERVISOR = 0x9
PORT_PLATFORM = 0xD
PORT_LINKCTRL = 0xF

# -- channels and commands ---------------------------------------------------------------
TOC_CHANNEL = 0
"""Log and param ports: the table of contents."""
TOC_ITEM_V2, TOC_INFO_V2 = 2, 3
"""TOC commands of protocol >= 4 (16-bit ids)."""

LOG_SETTINGS, LOG_DATA = 1, 2
LOG_DELETE_BLOCK, LOG_START, LOG_STOP, LOG_RESET = 2, 3, 4, 5
LOG_CREATE_BLOCK_V2, LOG_APPEND_BLOCK_V2 = 6, 7

PARAM_READ, PARAM_WRITE, PARAM_MISC = 1, 2, 3

MEM_INFO = 0
MEM_INFO_NBR = 1

GENERIC_SETPOINT, GENERIC_META = 0, 1
"""Generic commander channels; meta command 0 is notify-setpoints-stop."""
META_NOTIFY_SETPOINT_STOP = 0
GENERIC_TYPE_STOP = 0

LOCALIZATION_GENERIC = 1
LOCALIZATION_EMERGENCY_STOP = 3
LOCALIZATION_EMERGENCY_STOP_WATCHDOG = 4

SUPERVISOR_INFO, SUPERVISOR_COMMAND = 0, 1
SUPERVISOR_GET_STATE = 0x0C
SUPERVISOR_EMERGENCY_STOP = 0x03
SUPERVISOR_REPLY = 0x80

PLATFORM_VERSION = 1
VERSION_GET_PROTOCOL = 0

LINK_ECHO, LINK_SOURCE = 0, 1
NULL_CHANNEL = 3
"""Port 15 channel 3 carries null packets (0xFF: cflib's UDP scan probe)."""
LINK_SOURCE_MAGIC = b"Bitcraze Crazyflie"

RPYT_FORMAT = struct.Struct("<fffH")
"""Legacy setpoint: roll, pitch, yaw (floats, deg or deg/s), thrust (uint16)."""

# -- TOC type codes ----------------------------------------------------------------------
LOG_TYPES: dict[int, tuple[str, str]] = {
    0x01: ("uint8_t", "<B"), 0x02: ("uint16_t", "<H"), 0x03: ("uint32_t", "<I"), 0x04: ("int8_t", "<b"),
    0x05: ("int16_t", "<h"), 0x06: ("int32_t", "<i"), 0x07: ("float", "<f"), 0x08: ("FP16", "<e"),
}
"""Log variable type code -> (C name, struct format)."""
PARAM_TYPES: dict[int, tuple[str, str]] = {
    0x08: ("uint8_t", "<B"), 0x09: ("uint16_t", "<H"), 0x0A: ("uint32_t", "<I"), 0x00: ("int8_t", "<b"),
    0x01: ("int16_t", "<h"), 0x02: ("int32_t", "<i"), 0x06: ("float", "<f"),
}
"""Param type code (low nibble) -> (C name, struct format)."""
PARAM_READ_ONLY = 0x40


class CrtpError(ValueError):
    """A datagram that is not a CRTP packet (``reason`` is the counter's name)."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


@dataclass(frozen=True)
class Packet:
    """One CRTP packet."""

    port: int
    channel: int
    data: bytes = b""


def header(port: int, channel: int) -> int:
    """The header byte cflib writes (with the two legacy bits ``0b1100`` set)."""
    return ((port & 0x0F) << 4) | 0x0C | (channel & 0x03)


def encode(port: int, channel: int, data: bytes = b"") -> bytes:
    """One datagram.

    Raises:
        CrtpError: more than :data:`MAX_DATA` bytes of data.
    """
    if len(data) > MAX_DATA:
        raise CrtpError("oversize", f"{len(data)} data bytes, at most {MAX_DATA}")
    return bytes((header(port, channel),)) + bytes(data)


def decode(datagram: bytes) -> Packet:
    """The packet in one datagram.

    Raises:
        CrtpError: empty or longer than a CRTP packet.
    """
    if not datagram:
        raise CrtpError("empty", "empty datagram")
    if len(datagram) > MAX_DATA + 1:
        raise CrtpError("oversize", f"{len(datagram)} bytes, a CRTP packet has at most {MAX_DATA + 1}")
    h = datagram[0]
    return Packet((h >> 4) & 0x0F, h & 0x03, bytes(datagram[1:]))
