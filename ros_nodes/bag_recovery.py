"""Recover a rosbag2 MCAP recording whose writer died (kill -9, power loss, a full disk).

Such a bag has no ``metadata.yaml`` and its ``.mcap`` file ends mid-way: no summary, no
footer, often a torn last record. Neither rosbags nor ``ros2 bag`` open it. The MCAP
records before the tear are intact, though (the recorder writes a complete, CRC-checked
chunk every ``flush_period``): :func:`recover` reads them in file order, stops at the
first incomplete or corrupt record, and writes every message it found into a new,
finalized rosbag2 folder.

MCAP layout (https://mcap.dev/spec): magic ``\\x89MCAP0\\r\\n``, then records
``opcode u8 | length u64 | body``; little endian; strings and byte arrays are
length-prefixed (u32). Chunks (0x06) hold schema, channel and message records,
compressed with zstd, lz4 or not at all.
"""

from __future__ import annotations

import struct
import sys
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

MAGIC = b"\x89MCAP0\r\n"
OP_SCHEMA, OP_CHANNEL, OP_MESSAGE, OP_CHUNK, OP_DATA_END, OP_FOOTER = 0x03, 0x04, 0x05, 0x06, 0x0F, 0x02
MAX_RECORD = 1 << 31
"""A record claiming more bytes than this is corruption, not data."""


class RecoveryError(RuntimeError):
    """Nothing recoverable: not an MCAP file, or the output exists."""


@dataclass
class Recovered:
    source: Path
    output: Path
    messages: dict[str, int] = field(default_factory=dict)
    """Messages written per topic."""
    chunks: int = 0
    """Complete chunks read."""
    complete: bool = False
    """The source was finalized (it had its data-end record): nothing was lost."""
    tail_bytes: int = 0
    """Bytes after the last complete record (the torn tail that could not be read)."""
    skipped_topics: list[str] = field(default_factory=list)
    """Topics whose message type could not be resolved (not written)."""


@dataclass
class _Schema:
    name: str
    encoding: str
    data: bytes


@dataclass
class _Channel:
    topic: str
    schema_id: int
    encoding: str


class _Torn(Exception):
    """The data ends (or is corrupt) here."""


def _take(buf: memoryview, at: int, size: int) -> tuple[memoryview, int]:
    if size < 0 or at + size > len(buf):
        raise _Torn
    return buf[at:at + size], at + size


def _string(buf: memoryview, at: int) -> tuple[str, int]:
    if at + 4 > len(buf):
        raise _Torn
    (n,) = struct.unpack_from("<I", buf, at)
    raw, at = _take(buf, at + 4, n)
    return bytes(raw).decode("utf-8", errors="strict"), at


def _records(buf: memoryview) -> Iterator[tuple[int, memoryview, int]]:
    """``(opcode, body, end offset)`` of each complete record; stops at a torn one."""
    at = 0
    while at + 9 <= len(buf):
        op, length = struct.unpack_from("<BQ", buf, at)
        if length > MAX_RECORD or at + 9 + length > len(buf):
            return
        yield op, buf[at + 9:at + 9 + length], at + 9 + length
        at += 9 + length


def _decompress(data: bytes, compression: str, size: int) -> bytes:
    if compression == "":
        return data
    if compression == "zstd":
        if sys.version_info >= (3, 14):
            from compression import zstd
        else:
            from backports import zstd
        return zstd.decompress(data)
    if compression == "lz4":
        import lz4.frame

        return lz4.frame.decompress(data)
    raise _Torn  # an unknown compression: treat the chunk as unreadable


class _Scan:
    def __init__(self) -> None:
        self.schemas: dict[int, _Schema] = {}
        self.channels: dict[int, _Channel] = {}
        self.messages: list[tuple[int, int, bytes]] = []
        """(channel id, log time ns, data) in file order."""

    def record(self, op: int, body: memoryview) -> None:
        if op == OP_SCHEMA:
            (sid,) = struct.unpack_from("<H", body, 0)
            name, at = _string(body, 2)
            encoding, at = _string(body, at)
            (n,) = struct.unpack_from("<I", body, at)
            data, _ = _take(body, at + 4, n)
            self.schemas[sid] = _Schema(name, encoding, bytes(data))
        elif op == OP_CHANNEL:
            cid, sid = struct.unpack_from("<HH", body, 0)
            topic, at = _string(body, 4)
            encoding, _ = _string(body, at)
            self.channels[cid] = _Channel(topic, sid, encoding)
        elif op == OP_MESSAGE:
            if len(body) < 22:
                raise _Torn
            cid, _seq, log_time, _pub = struct.unpack_from("<HIQQ", body, 0)
            self.messages.append((cid, log_time, bytes(body[22:])))

    def chunk(self, body: memoryview) -> None:
        _start, _end, size, crc = struct.unpack_from("<QQQI", body, 0)
        compression, at = _string(body, 28)
        (n,) = struct.unpack_from("<Q", body, at)
        data, _ = _take(body, at + 8, n)
        raw = _decompress(bytes(data), compression, size)
        if len(raw) != size or (crc and zlib.crc32(raw) != crc):
            raise _Torn
        # Parse into a scratch scan first: a chunk counts whole or not at all.
        inner = _Scan()
        inner.schemas, inner.channels = dict(self.schemas), dict(self.channels)
        view = memoryview(raw)
        end = 0
        for op, rec, rec_end in _records(view):
            inner.record(op, rec)
            end = rec_end
        if end != len(raw):
            raise _Torn
        self.schemas, self.channels = inner.schemas, inner.channels
        self.messages.extend(inner.messages)


def mcap_file(path: Path) -> Path:
    """The ``.mcap`` file of a rosbag2 folder (or the file itself)."""
    if path.is_file():
        return path
    files = sorted(path.glob("*.mcap"))
    if not files:
        raise RecoveryError(f"{path}: no .mcap file (only MCAP recordings can be recovered)")
    if len(files) > 1:
        raise RecoveryError(f"{path}: {len(files)} .mcap files; recover them one at a time")
    return files[0]


def recover(path: Path | str, output: Path | str | None = None) -> Recovered:
    """Write every message of the complete records of ``path`` (a rosbag2 folder or its
    ``.mcap`` file) into the new rosbag2 folder ``output`` (default: ``<path>-recovered``)."""
    from rosbags.rosbag2 import StoragePlugin, Writer
    from rosbags.typesys import Stores, get_typestore

    source = mcap_file(Path(path))
    folder = source.parent if Path(path).is_dir() else source.with_suffix("")
    out = Path(output) if output is not None else folder.with_name(folder.name + "-recovered")
    if out.exists():
        raise RecoveryError(f"{out} exists; choose a new output folder")
    data = source.read_bytes()
    if not data.startswith(MAGIC):
        raise RecoveryError(f"{source}: not an MCAP file (bad magic)")
    report = Recovered(source, out)
    scan = _Scan()
    view = memoryview(data)[len(MAGIC):]
    end = 0
    for op, body, rec_end in _records(view):
        try:
            if op == OP_CHUNK:
                scan.chunk(body)
                report.chunks += 1
            elif op in (OP_DATA_END, OP_FOOTER):
                report.complete = True
                end = rec_end
                break
            else:
                scan.record(op, body)
        except (_Torn, struct.error, UnicodeDecodeError, ValueError, RuntimeError, OSError):
            break  # corrupt from here on: keep what came before
        end = rec_end
    report.tail_bytes = len(view) - end if not report.complete else 0

    store = get_typestore(Stores.ROS2_KILTED)
    writer = Writer(out, version=9, storage_plugin=StoragePlugin.MCAP)
    writer.open()
    connections = {}
    try:
        for cid, channel in sorted(scan.channels.items()):
            schema = scan.schemas.get(channel.schema_id)
            msgtype = schema.name if schema is not None else ""
            if msgtype not in store.fielddefs:
                report.skipped_topics.append(channel.topic)
                continue
            connections[cid] = writer.add_connection(channel.topic, msgtype, typestore=store)
        for cid, stamp, payload in scan.messages:
            conn = connections.get(cid)
            if conn is None:
                continue
            writer.write(conn, stamp, payload)
            report.messages[conn.topic] = report.messages.get(conn.topic, 0) + 1
    finally:
        writer.close()
    return report
