"""Fast, exact encoding of the Go2's 500 Hz messages with numpy.

cyclonedds-python builds and parses these messages in pure Python (~0.3 ms to serialize
a LowCmd_, more for a LowState_): at 500 Hz on a small host that is a third of a core
per stream and the writer's jitter with it. This module derives, from the IdlStruct
types themselves (:mod:`.types`), two layouts of the same leaves:

* the packed C struct (natural alignment, as numpy's ``align=True``), which is what the
  firmware's CRC covers and what the code fills (``msg["motor_cmd"]["q"][:12] = q``);
* the CDR body on the wire (XCDR1/XCDR2 little endian: each primitive aligned to its
  size from the start of the body, no padding at the end of a nested struct), which
  differs from the C struct (a LowCmd_'s first motor starts at byte 22 on the wire, 24
  in C; 808 vs 812 bytes).

Encoding and decoding are then one byte gather each. The tests check the result against
``IdlStruct.serialize``/``deserialize`` byte for byte.
"""

from __future__ import annotations

import typing
from dataclasses import dataclass

import numpy as np
from cyclonedds.idl import IdlStruct
from cyclonedds.idl.types import array as idl_array

from sim2real.hardware.go2.crc import crc32_words

_PRIMITIVES: dict[str, str] = {
    "byte": "u1", "uint8": "u1", "int8": "i1", "char": "u1", "int16": "<i2", "uint16": "<u2", "int32": "<i4",
    "uint32": "<u4", "int64": "<i8", "uint64": "<u8", "float32": "<f4", "float64": "<f8",
}
ENCAPSULATIONS = (b"\x00\x01\x00\x00", b"\x00\x07\x00\x00")
"""CDR_LE (XCDR1) and CDR2_LE (XCDR2) headers: for these final structs with no member wider
than 4 bytes both bodies are the same bytes. Big-endian senders are refused."""


class FrameError(ValueError):
    """A frame that is not a valid message of its type; ``reason`` is the counter's name."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason = reason


def _members(cls: type[IdlStruct]) -> list[tuple[str, typing.Any]]:
    hints = typing.get_type_hints(cls, include_extras=True)
    return [(name, hint) for name, hint in hints.items() if not name.startswith("_")]


def _leaf(hint: typing.Any) -> tuple[str | type[IdlStruct], int]:
    """(primitive numpy code or struct class, count) of one member."""
    if isinstance(hint, type) and issubclass(hint, IdlStruct):
        return hint, 1
    args = typing.get_args(hint)
    if len(args) == 2 and isinstance(args[1], idl_array):
        sub, count = _leaf(args[1].subtype)
        return sub, count * args[1].length
    if len(args) == 2 and isinstance(args[1], str) and args[1] in _PRIMITIVES:
        return _PRIMITIVES[args[1]], 1
    raise TypeError(f"unsupported member type {hint!r} (fixed-size structs only)")


def c_dtype(cls: type[IdlStruct]) -> np.dtype:
    """The packed C struct of ``cls`` as a numpy dtype (natural alignment, trailing padding)."""
    fields = []
    for name, hint in _members(cls):
        sub, count = _leaf(hint)
        base = c_dtype(sub) if not isinstance(sub, str) else np.dtype(sub)
        fields.append((name, base, (count,)) if count > 1 else (name, base))
    return np.dtype(fields, align=True)


def _walk(cls: type[IdlStruct], c_base: int, cdr_pos: int, out: list[tuple[int, int, int]]) -> int:
    """Append (c_offset, cdr_offset, size) of every primitive of ``cls`` in wire order;
    returns the CDR position after it."""
    offsets = {name: spec[1] for name, spec in (c_dtype(cls).fields or {}).items()}
    for name, hint in _members(cls):
        sub, count = _leaf(hint)
        c_off = offsets[name]
        if isinstance(sub, str):
            size = np.dtype(sub).itemsize
            cdr_pos += -cdr_pos % size
            out.append((c_base + c_off, cdr_pos, size * count))
            cdr_pos += size * count
        else:
            stride = c_dtype(sub).itemsize
            for i in range(count):
                cdr_pos = _walk(sub, c_base + c_off + i * stride, cdr_pos, out)
    return cdr_pos


@dataclass(frozen=True)
class Codec:
    """Encoder/decoder of one fixed-size message type (wire bytes <-> C-struct array)."""

    cls: type[IdlStruct]
    dtype: np.dtype
    """The C struct (what :meth:`new` returns and the CRC covers)."""
    wire_size: int
    """Bytes on the wire, the 4-byte encapsulation header included."""
    to_wire: np.ndarray
    """For each body byte on the wire, its index in the C struct (``dtype.itemsize``: a zero pad byte)."""
    from_wire: np.ndarray
    """For each C-struct byte, its index in the wire body (``wire_size - 4``: a zero pad byte)."""
    padding: np.ndarray
    """The C struct's padding bytes (bool mask). numpy copies structured arrays field by
    field and leaves padding as it finds it, so the CRC zeroes them itself."""

    @classmethod
    def of(cls, idl: type[IdlStruct]) -> Codec:
        dtype = c_dtype(idl)
        leaves: list[tuple[int, int, int]] = []
        body = _walk(idl, 0, 0, leaves)
        to_wire = np.full(body, dtype.itemsize, dtype=np.intp)
        from_wire = np.full(dtype.itemsize, body, dtype=np.intp)
        for c_off, cdr_off, size in leaves:
            to_wire[cdr_off:cdr_off + size] = np.arange(c_off, c_off + size)
            from_wire[c_off:c_off + size] = np.arange(cdr_off, cdr_off + size)
        return cls(idl, dtype, body + 4, to_wire, from_wire, from_wire == body)

    def new(self) -> np.ndarray:
        """A zeroed message (a 0-d structured array of the C layout)."""
        return np.zeros((), dtype=self.dtype)

    def c_bytes(self, msg: np.ndarray) -> np.ndarray:
        """The packed C struct of ``msg`` as bytes (padding zero)."""
        raw = np.frombuffer(msg.tobytes(), dtype=np.uint8).copy()
        raw[self.padding] = 0
        return raw

    def crc(self, msg: np.ndarray) -> int:
        """The firmware's CRC32 of ``msg`` (over every word but the trailing ``crc``)."""
        return crc32_words(self.c_bytes(msg)[: self.dtype.itemsize - 4])

    def encode(self, msg: np.ndarray) -> bytes:
        """The CDR frame (XCDR1 little endian, as cyclonedds writes it) of ``msg``."""
        ext = np.frombuffer(self.c_bytes(msg).tobytes() + b"\0", dtype=np.uint8)  # the pad byte last
        return ENCAPSULATIONS[0] + ext[self.to_wire].tobytes()

    def decode(self, frame: bytes) -> np.ndarray:
        """The message in ``frame`` (a new C-struct array).

        Raises:
            FrameError: ``truncated``/``oversize`` (wrong length) or ``encoding`` (not little-endian CDR).
        """
        if len(frame) < self.wire_size:
            raise FrameError("truncated", f"{len(frame)} of {self.wire_size} bytes")
        if len(frame) > self.wire_size + 3:  # writers pad to a multiple of 4
            raise FrameError("oversize", f"{len(frame)} bytes, expected {self.wire_size}")
        if frame[:4] not in ENCAPSULATIONS:
            raise FrameError("encoding", f"encapsulation {frame[:4].hex()}")
        body = np.frombuffer(frame[4:self.wire_size] + b"\0", dtype=np.uint8)  # the pad byte last
        c = body[self.from_wire]
        return c.view(self.dtype).reshape(())

    def to_idl(self, msg: np.ndarray) -> IdlStruct:
        """``msg`` as the IdlStruct (slow; for tests and the rare non-hot path)."""
        return self.cls.deserialize(self.encode(msg))

    def from_idl(self, sample: IdlStruct) -> np.ndarray:
        return self.decode(sample.serialize())
