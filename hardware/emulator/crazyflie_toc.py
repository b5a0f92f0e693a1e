"""The Crazyflie firmware's log and parameter subsystems, as cflib 0.1.34 talks to them.

Log (port 5): a table of contents (TOC) of named variables; the host creates blocks of
variables (each fetched as the type it asks, e.g. a float as FP16), starts each at its
own period (units of 10 ms) and receives one packet per block and period: block id,
a 24-bit millisecond timestamp, the values. Errors are the firmware's errno codes
(``log.c``): ENOENT for an unknown block or variable, EEXIST for a block id in use,
E2BIG for more than 26 bytes of values, ENOMEM beyond 16 blocks or 128 variables.

Params (port 2): a TOC of named values the host reads and writes by 16-bit id; a write
is answered by echoing the packet (``param_logic.c``), a read by id, status, value.
Both TOCs are protocol-v2 (16-bit ids), which cflib uses for protocol version >= 4.
"""

from __future__ import annotations

import errno
import math
import struct
import zlib
from dataclasses import dataclass, field

from sim2real.hardware.crazyflie import crtp

LOG_MAX_BLOCKS = 16
LOG_MAX_OPS = 128
LOG_MAX_PAYLOAD = 26
"""Value bytes in one log packet (30 minus block id and 3 timestamp bytes)."""

FLOAT, UINT8, INT8, UINT16 = 0x07, 0x01, 0x04, 0x02
P_UINT8, P_FLOAT = 0x08, 0x06
P_CORE = 0x20


@dataclass(frozen=True)
class TocEntry:
    group: str
    name: str
    type_code: int
    """Log type (:data:`crtp.LOG_TYPES`) or param type byte (low nibble: :data:`crtp.PARAM_TYPES`,
    plus the read-only and core flags)."""

    @property
    def full_name(self) -> str:
        return f"{self.group}.{self.name}"


def _names(group: str, names: str, type_code: int) -> list[TocEntry]:
    return [TocEntry(group, n, type_code) for n in names.split()]


LOG_TOC: tuple[TocEntry, ...] = (
    *_names("stateEstimate", "x y z vx vy vz ax ay az roll pitch yaw qx qy qz qw", FLOAT),
    *_names("gyro", "x y z", FLOAT),
    *_names("acc", "x y z", FLOAT),
    *_names("stabilizer", "roll pitch yaw thrust", FLOAT),
    *_names("motor", "m1 m2 m3 m4", UINT16),
    TocEntry("pm", "vbat", FLOAT),
    TocEntry("pm", "state", INT8),
    TocEntry("supervisor", "info", UINT16),
)
"""What a deployment logs. Units as the firmware's: m, m/s, g (acc, ``stateEstimate.a*``),
deg (with the legacy inverted ``stateEstimate.pitch``), deg/s (gyro), V."""

PARAM_DEFAULTS: tuple[tuple[TocEntry, float], ...] = (
    (TocEntry("flightmode", "althold", P_UINT8 | P_CORE), 0),
    (TocEntry("flightmode", "poshold", P_UINT8 | P_CORE), 0),
    (TocEntry("flightmode", "posSet", P_UINT8 | P_CORE), 0),
    (TocEntry("flightmode", "yawMode", P_UINT8), 2),
    (TocEntry("flightmode", "stabModeRoll", P_UINT8 | P_CORE), 1),
    (TocEntry("flightmode", "stabModePitch", P_UINT8 | P_CORE), 1),
    (TocEntry("flightmode", "stabModeYaw", P_UINT8 | P_CORE), 0),
    (TocEntry("stabilizer", "estimator", P_UINT8 | P_CORE), 2),
    (TocEntry("stabilizer", "controller", P_UINT8 | P_CORE), 1),
    (TocEntry("stabilizer", "stop", P_UINT8 | P_CORE), 0),
    (TocEntry("supervisor", "tmblChckEn", P_UINT8), 1),
    (TocEntry("pm", "lowVoltage", P_FLOAT | crtp.PARAM_READ_ONLY), 3.2),
)
"""Firmware defaults: roll and pitch in ANGLE (1), yaw in RATE (0); Kalman estimator (2),
PID controller (1). ``stabilizer.stop`` non-zero stops the motors (the param e-stop)."""


def toc_crc(entries: tuple[TocEntry, ...] | list[TocEntry]) -> int:
    """A CRC over the TOC, as the firmware reports one (cflib caches TOCs by it)."""
    text = ";".join(f"{e.full_name}:{e.type_code}" for e in entries)
    return zlib.crc32(text.encode())


def toc_reply(entries: tuple[TocEntry, ...] | list[TocEntry], data: bytes, log: bool) -> bytes | None:
    """The answer to a TOC request (info or item, v2), or None for a malformed one."""
    if not data:
        return None
    if data[0] == crtp.TOC_INFO_V2:
        info = struct.pack("<BHI", crtp.TOC_INFO_V2, len(entries), toc_crc(entries))
        return info + (bytes((LOG_MAX_BLOCKS, LOG_MAX_OPS)) if log else b"")
    if data[0] == crtp.TOC_ITEM_V2 and len(data) >= 3:
        ident = struct.unpack_from("<H", data, 1)[0]
        if ident >= len(entries):
            return bytes((crtp.TOC_ITEM_V2,))
        e = entries[ident]
        return (struct.pack("<BHB", crtp.TOC_ITEM_V2, ident, e.type_code)
                + e.group.encode() + b"\0" + e.name.encode() + b"\0")
    return None


@dataclass
class LogBlock:
    ident: int
    ops: list[tuple[int, int]] = field(default_factory=list)
    """(variable id, fetch type) per value."""
    period: float = 0.0
    """Seconds between packets (0: stopped)."""
    next_due: float = 0.0

    def size(self) -> int:
        return sum(struct.calcsize(crtp.LOG_TYPES[t][1]) for _, t in self.ops)


class LogSubsystem:
    """Log blocks: created, appended, started, stopped, deleted by the host; encoded here."""

    def __init__(self) -> None:
        self.blocks: dict[int, LogBlock] = {}

    def reset(self) -> None:
        self.blocks.clear()

    def control(self, data: bytes, now: float) -> bytes | None:
        """Apply one settings command; the 3-byte answer (command, block id, errno), or
        None for a packet too short to carry one."""
        if len(data) < 1:
            return None
        cmd = data[0]
        if cmd == crtp.LOG_RESET:
            self.reset()
            return bytes((cmd, data[1] if len(data) > 1 else 0, 0))
        if len(data) < 2:
            return None
        ident = data[1]
        if cmd in (crtp.LOG_CREATE_BLOCK_V2, crtp.LOG_APPEND_BLOCK_V2):
            ret = self._add(ident, data[2:], create=cmd == crtp.LOG_CREATE_BLOCK_V2)
        elif cmd == crtp.LOG_START:
            if len(data) < 3:
                return None
            ret = self._start(ident, data[2] * 0.01, now)
        elif cmd == crtp.LOG_STOP:
            ret = self._set_period(ident, 0.0)
        elif cmd == crtp.LOG_DELETE_BLOCK:
            ret = 0 if self.blocks.pop(ident, None) is not None else errno.ENOENT
        else:
            ret = errno.ENOEXEC
        return bytes((cmd, ident, ret))

    def _add(self, ident: int, settings: bytes, create: bool) -> int:
        if len(settings) % 3:
            return errno.EINVAL
        if create:
            if ident in self.blocks:
                return errno.EEXIST
            if len(self.blocks) >= LOG_MAX_BLOCKS:
                return errno.ENOMEM
            block = LogBlock(ident)
        elif ident not in self.blocks:
            return errno.ENOENT
        else:
            block = self.blocks[ident]
        ops = list(block.ops)
        for i in range(0, len(settings), 3):
            kind, var = settings[i], struct.unpack_from("<H", settings, i + 1)[0]
            fetch = kind & 0x0F
            if var >= len(LOG_TOC) or fetch not in crtp.LOG_TYPES:
                return errno.ENOENT
            ops.append((var, fetch))
        if sum(len(b.ops) for b in self.blocks.values() if b is not block) + len(ops) > LOG_MAX_OPS:
            return errno.ENOMEM
        candidate = LogBlock(ident, ops, block.period, block.next_due)
        if candidate.size() > LOG_MAX_PAYLOAD:
            return errno.E2BIG
        self.blocks[ident] = candidate
        return 0

    def _start(self, ident: int, period: float, now: float) -> int:
        if ident not in self.blocks:
            return errno.ENOENT
        block = self.blocks[ident]
        block.period, block.next_due = max(period, 0.01), now
        return 0

    def _set_period(self, ident: int, period: float) -> int:
        if ident not in self.blocks:
            return errno.ENOENT
        self.blocks[ident].period = period
        return 0

    @property
    def streaming(self) -> bool:
        return any(b.period > 0 for b in self.blocks.values())

    def due(self, now: float) -> list[LogBlock]:
        """Started blocks whose period has come (their next time is advanced)."""
        out = []
        for block in self.blocks.values():
            if block.period > 0 and now >= block.next_due:
                # Keep the cadence; after a stall, restart it rather than burst.
                block.next_due = max(block.next_due + block.period, now - block.period)
                out.append(block)
        return out

    @staticmethod
    def encode(block: LogBlock, values: dict[str, float], millis: int) -> bytes:
        """One log data packet's data: id, 24-bit timestamp, the values as fetched."""
        out = bytearray((block.ident,)) + (millis & 0xFFFFFF).to_bytes(3, "little")
        for var, fetch in block.ops:
            value = values.get(LOG_TOC[var].full_name, 0.0)
            fmt = crtp.LOG_TYPES[fetch][1]
            if fmt == "<f":
                out += struct.pack(fmt, value)
            elif fmt == "<e":  # half precision saturates at 65504 (NaN passes: the host must refuse it)
                out += struct.pack(fmt, min(max(value, -65504.0), 65504.0))
            else:
                info = struct.calcsize(fmt) * 8
                lo, hi = (-(1 << (info - 1)), (1 << (info - 1)) - 1) if fmt.islower() else (0, (1 << info) - 1)
                out += struct.pack(fmt, int(min(max(round(value) if math.isfinite(value) else 0, lo), hi)))
        return bytes(out)


class ParamSubsystem:
    """Parameter values by id, read and written as the firmware answers."""

    def __init__(self) -> None:
        self.entries = [e for e, _ in PARAM_DEFAULTS]
        self.values = [float(v) for _, v in PARAM_DEFAULTS]
        self._index = {e.full_name: i for i, e in enumerate(self.entries)}

    def get(self, name: str) -> float:
        return self.values[self._index[name]]

    def set(self, name: str, value: float) -> None:
        self.values[self._index[name]] = float(value)

    def _pack(self, i: int) -> bytes:
        fmt = crtp.PARAM_TYPES[self.entries[i].type_code & 0x0F][1]
        value = self.values[i]
        return struct.pack(fmt, value if fmt == "<f" else int(value))

    def read(self, data: bytes) -> bytes | None:
        """Answer a read (id, status, value), or None when too short to carry an id."""
        if len(data) < 2:
            return None
        ident = struct.unpack_from("<H", data)[0]
        if ident >= len(self.entries):
            return data[:2] + bytes((errno.ENOENT,))
        return data[:2] + b"\0" + self._pack(ident)

    def write(self, data: bytes) -> tuple[bytes | None, str | None]:
        """Apply a write; the answer (the echoed packet; none for a read-only param) and
        the changed name. Raises ValueError for a value of the wrong size."""
        if len(data) < 2:
            raise ValueError("truncated")
        ident = struct.unpack_from("<H", data)[0]
        if ident >= len(self.entries):
            return data[:2] + bytes((errno.ENOENT,)), None
        entry = self.entries[ident]
        fmt = crtp.PARAM_TYPES[entry.type_code & 0x0F][1]
        if len(data) != 2 + struct.calcsize(fmt):
            raise ValueError("truncated" if len(data) < 2 + struct.calcsize(fmt) else "oversize")
        if entry.type_code & crtp.PARAM_READ_ONLY:
            return None, None
        value = struct.unpack_from(fmt, data, 2)[0]
        if not math.isfinite(value):
            raise ValueError("non_finite")
        self.values[ident] = float(value)
        return bytes(data), entry.full_name
