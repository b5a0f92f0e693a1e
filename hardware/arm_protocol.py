"""The arm's wire protocol (version 1): fixed-layout little-endian UDP datagrams.

Modelled on what real arm interfaces do (Franka's FCI streams state and takes commands
over UDP once per control period, each message numbered, and its controller stops the
robot when commands stop arriving): the robot streams a ``STATE`` packet every control
period to the host that holds control; the host answers with ``COMMAND`` packets in the
physical units of the ROS ``command`` topic (``policies/safety/spaces.py``). One host
controls at a time: ``HELLO`` takes control only when nobody holds it, or the holder has
been silent for the robot's lease timeout; ``RELEASE`` gives it back
(``hardware/emulator/control_lease.py``).

Every packet is ``header | payload | crc32``::

    header  <4sHHIQ  magic b"S2RA", version 1, packet type, sequence (u32), sender time (ns)
    crc32   <I       zlib.crc32 of header + payload

The payload layout is fixed per packet type, so a packet's length is known from its
type. Decoding refuses (raises :class:`PacketError` with a short ``reason``) a packet
of the wrong length, magic, version, type or CRC, with non-finite numbers, or with a
value count or mode the layout does not allow. Ordering is checked by the receiver with
a :class:`SequenceGate` (stale, duplicate and out-of-order packets are dropped).
docs/deployment.md ("Real robots") has the full table.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass, field
from enum import IntEnum, IntFlag

import numpy as np

MAGIC = b"S2RA"
VERSION = 1
HEADER = struct.Struct("<4sHHIQ")
CRC = struct.Struct("<I")
ARM_JOINT_COUNT = 9
"""joint1..joint7 and the two fingers, the order of ``joint_states``."""
MAX_COMMAND_VALUES = 13
"""The largest command vector (``ee_impedance``)."""


class PacketType(IntEnum):
    HELLO = 1
    """host -> robot: take (or keep) control and stream state to my address; payload:
    session id. Refused while another host holds control."""
    COMMAND = 2
    """host -> robot: one command in physical units."""
    STATE = 3
    """robot -> host: the measurements of one control period."""
    MISSION = 4
    """emulator -> host: the task's goal and episode counters (an operator's role; a real
    robot does not send it)."""
    RELEASE = 5
    """host -> robot: give control back now (the robot holds); payload: session id."""


class CommandMode(IntEnum):
    """The command spaces of the arm (names and units: ``COMMAND_NAMES``)."""

    EE_DELTA = 1
    EE_IMPEDANCE = 2
    JOINT_TORQUE = 3


MODE_NAMES = {CommandMode.EE_DELTA: "ee_delta", CommandMode.EE_IMPEDANCE: "ee_impedance",
              CommandMode.JOINT_TORQUE: "joint_torque"}
COMMAND_SIZES = {CommandMode.EE_DELTA: 7, CommandMode.EE_IMPEDANCE: 13, CommandMode.JOINT_TORQUE: 8}


def mode_from_name(name: str) -> CommandMode:
    for mode, mode_name in MODE_NAMES.items():
        if mode_name == name:
            return mode
    raise ValueError(f"the arm protocol has no command mode {name!r}; choose one of {sorted(MODE_NAMES.values())}")


class Status(IntFlag):
    """Bits of the state packet's status word."""

    ESTOP = 1 << 0
    """The robot's e-stop is engaged: commands are ignored, the robot holds."""
    ERROR = 1 << 1
    """The controller faulted (the emulator: the simulation diverged); the command is
    dropped and the robot holds until a new one arrives."""
    HOLDING = 1 << 2
    """No fresh valid command (none yet, or the command timeout expired): holding."""
    COMMAND_REJECTED = 1 << 3
    """At least one command packet was rejected since the previous state packet."""
    OVERRUN = 1 << 4
    """The robot's control loop missed its period since the previous state packet."""


ALL_STATUS_BITS = int(Status.ESTOP | Status.ERROR | Status.HOLDING | Status.COMMAND_REJECTED | Status.OVERRUN)
HELLO_PAYLOAD = struct.Struct("<I")
COMMAND_PAYLOAD = struct.Struct(f"<IIBB2x{MAX_COMMAND_VALUES}d")
STATE_PAYLOAD = struct.Struct(f"<IIB3x{3 * ARM_JOINT_COUNT + 14}d")
MISSION_PAYLOAD = struct.Struct("<3dII")
PAYLOADS = {PacketType.HELLO: HELLO_PAYLOAD, PacketType.COMMAND: COMMAND_PAYLOAD,
            PacketType.STATE: STATE_PAYLOAD, PacketType.MISSION: MISSION_PAYLOAD,
            PacketType.RELEASE: HELLO_PAYLOAD}
PACKET_SIZES = {t: HEADER.size + p.size + CRC.size for t, p in PAYLOADS.items()}


class PacketError(ValueError):
    """A packet that must not be applied; ``reason`` names the check that failed."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(f"{reason}: {message}")
        self.reason = reason


@dataclass(frozen=True)
class Header:
    type: PacketType
    sequence: int
    stamp_ns: int
    """The sender's monotonic clock (not comparable across machines; ordering uses the sequence)."""


@dataclass(frozen=True)
class Hello:
    session: int


@dataclass(frozen=True)
class Release:
    session: int


@dataclass(frozen=True)
class Command:
    session: int
    state_sequence: int
    """The newest state packet the host had when it computed this command."""
    mode: CommandMode
    values: np.ndarray


@dataclass(frozen=True)
class State:
    status: Status
    last_command_sequence: int
    """Sequence of the command applied in this period (0: none)."""
    mode: CommandMode
    joint_pos: np.ndarray
    joint_vel: np.ndarray
    joint_effort: np.ndarray
    ee_pos: np.ndarray
    ee_quat: np.ndarray
    """(w, x, y, z), like every quaternion of the protocol."""
    ee_pos_desired: np.ndarray
    ee_quat_desired: np.ndarray


@dataclass(frozen=True)
class Mission:
    goal: np.ndarray
    episodes: int
    successes: int


Payload = Hello | Release | Command | State | Mission


def _u32(value: int) -> int:
    return int(value) & 0xFFFFFFFF


def encode(payload: Payload, sequence: int, stamp_ns: int) -> bytes:
    """One datagram. Raises ValueError for values the layout cannot carry (wrong sizes,
    non-finite numbers): a sender must not put them on the wire."""
    if isinstance(payload, Hello | Release):
        kind = PacketType.HELLO if isinstance(payload, Hello) else PacketType.RELEASE
        body = HELLO_PAYLOAD.pack(_u32(payload.session))
    elif isinstance(payload, Command):
        values = np.asarray(payload.values, dtype=np.float64).ravel()
        if values.size != COMMAND_SIZES[payload.mode]:
            want = COMMAND_SIZES[payload.mode]
            raise ValueError(f"{MODE_NAMES[payload.mode]} takes {want} values, got {values.size}")
        padded = np.zeros(MAX_COMMAND_VALUES)
        padded[: values.size] = values
        _check_finite(values, "COMMAND")
        kind = PacketType.COMMAND
        body = COMMAND_PAYLOAD.pack(_u32(payload.session), _u32(payload.state_sequence), int(payload.mode),
                                    values.size, *padded)
    elif isinstance(payload, State):
        arrays = (payload.joint_pos, payload.joint_vel, payload.joint_effort, payload.ee_pos, payload.ee_quat,
                  payload.ee_pos_desired, payload.ee_quat_desired)
        sizes = (ARM_JOINT_COUNT,) * 3 + (3, 4, 3, 4)
        flat = [np.asarray(a, dtype=np.float64).ravel() for a in arrays]
        if any(a.size != n for a, n in zip(flat, sizes, strict=True)):
            raise ValueError(f"state arrays must have sizes {sizes}, got {tuple(a.size for a in flat)}")
        _check_finite(np.concatenate(flat), "STATE")
        kind = PacketType.STATE
        body = STATE_PAYLOAD.pack(int(payload.status), _u32(payload.last_command_sequence), int(payload.mode),
                                  *np.concatenate(flat))
    elif isinstance(payload, Mission):
        goal = np.asarray(payload.goal, dtype=np.float64).ravel()
        if goal.size != 3:
            raise ValueError(f"mission goal must have 3 values, got {goal.size}")
        _check_finite(goal, "MISSION")
        kind, body = PacketType.MISSION, MISSION_PAYLOAD.pack(*goal, _u32(payload.episodes), _u32(payload.successes))
    else:
        raise TypeError(f"cannot encode {type(payload).__name__}")
    head = HEADER.pack(MAGIC, VERSION, int(kind), _u32(sequence), int(stamp_ns) & 0xFFFFFFFFFFFFFFFF)
    return head + body + CRC.pack(zlib.crc32(head + body))


def _check_finite(values: np.ndarray, kind: str) -> None:
    if not np.all(np.isfinite(values)):
        raise ValueError(f"{kind} packet with non-finite values")


def decode(data: bytes) -> tuple[Header, Payload]:
    """Header and payload of one datagram, or :class:`PacketError`."""
    if len(data) < HEADER.size + CRC.size:
        raise PacketError("length", f"{len(data)} bytes is shorter than a header")
    magic, version, kind, sequence, stamp = HEADER.unpack_from(data)
    if magic != MAGIC:
        raise PacketError("magic", f"magic {magic!r} != {MAGIC!r}")
    if version != VERSION:
        raise PacketError("version", f"protocol version {version} (this end speaks {VERSION})")
    if kind not in PAYLOADS:
        raise PacketError("type", f"unknown packet type {kind}")
    kind = PacketType(kind)
    if len(data) != PACKET_SIZES[kind]:
        raise PacketError("length", f"{kind.name} packet of {len(data)} bytes, expected {PACKET_SIZES[kind]}")
    (crc,) = CRC.unpack_from(data, len(data) - CRC.size)
    if crc != zlib.crc32(data[: -CRC.size]):
        raise PacketError("crc", "CRC32 mismatch")
    fields = PAYLOADS[kind].unpack_from(data, HEADER.size)
    header = Header(kind, sequence, stamp)
    if kind == PacketType.HELLO:
        return header, Hello(fields[0])
    if kind == PacketType.RELEASE:
        return header, Release(fields[0])
    if kind == PacketType.MISSION:
        goal = _finite(fields[:3])
        return header, Mission(goal, fields[3], fields[4])
    if kind == PacketType.COMMAND:
        session, state_seq, mode, count = fields[:4]
        mode = _mode(mode)
        if count != COMMAND_SIZES[mode]:
            want = COMMAND_SIZES[mode]
            raise PacketError("count", f"{MODE_NAMES[mode]} command with {count} values, expected {want}")
        values = _finite(fields[4:])
        if np.any(values[count:] != 0.0):
            raise PacketError("count", "non-zero padding after the command values")
        return header, Command(session, state_seq, mode, values[:count])
    status, last_cmd, mode = fields[:3]
    if status & ~ALL_STATUS_BITS:  # a bit this version does not define: do not guess what it means
        raise PacketError("status", f"undefined status bits {status & ~ALL_STATUS_BITS:#x}")
    mode = _mode(mode)
    v = _finite(fields[3:])
    n = ARM_JOINT_COUNT
    return header, State(Status(status), last_cmd, mode, v[:n], v[n:2 * n], v[2 * n:3 * n],
                         v[3 * n:3 * n + 3], v[3 * n + 3:3 * n + 7], v[3 * n + 7:3 * n + 10], v[3 * n + 10:3 * n + 14])


def _mode(value: int) -> CommandMode:
    if value not in COMMAND_SIZES:
        raise PacketError("mode", f"unknown command mode {value}")
    return CommandMode(value)


def _finite(values: tuple[float, ...]) -> np.ndarray:
    out = np.array(values, dtype=np.float64)
    if not np.all(np.isfinite(out)):
        raise PacketError("non_finite", "NaN or infinite value")
    return out


def sequence_newer(sequence: int, last: int) -> bool:
    """Serial-number order (RFC 1982) on u32: ``sequence`` follows ``last`` within half the range,
    so the counter may wrap (after 49 days at 1 kHz) without a stall."""
    return 0 < (_u32(sequence) - _u32(last)) % 2**32 < 2**31


@dataclass
class SequenceGate:
    """Accepts only packets newer than the last accepted one (per packet stream)."""

    last: int | None = None

    def accept(self, sequence: int) -> bool:
        if self.last is not None and not sequence_newer(sequence, self.last):
            return False
        self.last = sequence
        return True

    def reset(self) -> None:
        self.last = None


@dataclass
class PacketStats:
    """Packets accepted per type and rejected per reason (both ends keep one)."""

    accepted: dict[str, int] = field(default_factory=dict)
    rejected: dict[str, int] = field(default_factory=dict)

    def accept(self, kind: PacketType) -> None:
        self.accepted[kind.name.lower()] = self.accepted.get(kind.name.lower(), 0) + 1

    def reject(self, reason: str) -> None:
        self.rejected[reason] = self.rejected.get(reason, 0) + 1

    @property
    def rejected_total(self) -> int:
        return sum(self.rejected.values())

    def flat(self) -> dict[str, int]:
        """``{accepted_<type>: n, rejected_<reason>: n, rejected: total}`` for diagnostics."""
        return {**{f"accepted_{k}": v for k, v in sorted(self.accepted.items())},
                **{f"rejected_{k}": v for k, v in sorted(self.rejected.items())}, "rejected": self.rejected_total}
