"""What crosses the actor/learner sockets, checked before anything trusts it.

Every inbound frame is hostile until proven otherwise: a peer (or anyone who can reach the
port) may send a header with ``seq: Infinity``, a zip bomb as the payload, a malformed
acknowledgement or unsigned frames. The functions here turn each such case into a
:class:`WireError` carrying a short ``reason`` (the counter it increments), so the sockets'
owners reject the one message, count it and carry on; neither side ever dies of a message.

Authentication: with a shared secret every frame list carries a trailing HMAC-SHA256 over
a channel label and every frame (length-prefixed, so frames cannot be re-split). A secret
is required whenever an address is not loopback; without one on loopback no MAC is sent
or expected (the loopback interface is as private as the machine).
"""

from __future__ import annotations

import hashlib
import hmac
import io
import ipaddress
import json
import os
import re
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from sim2real.errors import Sim2RealError

SAFE_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")
SECRET_ENV = "SIM2REAL_HIL_SECRET"
MIN_SECRET_BYTES = 16
MAC_BYTES = 32
MAX_SEQ = 2**62
MAX_EPISODES_PER_CHUNK = 10_000
MAX_NPZ_MEMBERS = 64
_READ_BLOCK = 1 << 20


class WireError(Sim2RealError):
    """One inbound message refused; ``reason`` names the counter it goes to."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


def is_loopback(host: str) -> bool:
    """True for ``localhost`` and loopback addresses (127.0.0.0/8, ::1)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a host name other than localhost may resolve anywhere


def load_secret(env_var: str = SECRET_ENV, file: str | None = None) -> bytes | None:
    """The shared secret from ``file`` (if named) or the environment variable ``env_var``;
    ``None`` when neither is set. Too short a secret is an error, not a weak MAC."""
    if file:
        try:
            secret = Path(file).expanduser().read_bytes().strip()
        except OSError as exc:
            raise Sim2RealError(f"cannot read the HIL secret file {file}: {exc}") from exc
    else:
        value = os.environ.get(env_var, "")
        if not value:
            return None
        secret = value.encode()
    if len(secret) < MIN_SECRET_BYTES:
        raise Sim2RealError(f"the HIL shared secret must be at least {MIN_SECRET_BYTES} bytes, got {len(secret)}")
    return secret


def require_secret(host: str, secret: bytes | None, role: str) -> None:
    """Refuse (before any socket binds or connects) to use a non-loopback address unsigned."""
    if secret is None and not is_loopback(host):
        raise Sim2RealError(f"the {role} refuses to use {host} without a shared secret (not loopback): set "
                            f"{SECRET_ENV} or transport.secret_file on both sides")


def _mac(secret: bytes, channel: bytes, frames: list[bytes]) -> bytes:
    digest = hmac.new(secret, channel, hashlib.sha256)
    for frame in frames:
        digest.update(len(frame).to_bytes(8, "big"))
        digest.update(frame)
    return digest.digest()


def sign(secret: bytes | None, channel: bytes, frames: list[bytes]) -> list[bytes]:
    """``frames`` with their MAC appended (unchanged without a secret)."""
    return frames if secret is None else [*frames, _mac(secret, channel, frames)]


def verify(secret: bytes | None, channel: bytes, frames: list[bytes], count: int) -> list[bytes]:
    """The ``count`` payload frames of a received message, after checking the frame count
    and (with a secret) the MAC; raises :class:`WireError`."""
    expected = count + (secret is not None)
    if len(frames) != expected:
        reason = "mac_missing" if secret is not None and len(frames) == count else "frame_count"
        raise WireError(reason, f"{len(frames)} frames, expected {expected}")
    if secret is None:
        return frames
    if not hmac.compare_digest(frames[-1], _mac(secret, channel, frames[:-1])):
        raise WireError("mac_bad", "bad MAC (wrong secret or altered frames)")
    return frames[:-1]


def parse_header(data: bytes) -> dict[str, Any]:
    try:
        header = json.loads(data.decode())
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise WireError("header", f"malformed message header: {exc}") from exc
    if not isinstance(header, dict):
        raise WireError("header", "message header is not a JSON object")
    return header


def valid_seq(value: Any) -> int:
    """A sequence number: an int (not bool, not float) in [0, 2**62)."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < MAX_SEQ:
        raise WireError("seq", f"bad seq {value!r}: must be an integer in [0, 2**62)")
    return value


def chunk_header(data: bytes) -> tuple[str, int, list[dict[str, Any]]]:
    """``(actor, seq, episodes)`` of a transitions header, each checked by type and range."""
    header = parse_header(data)
    actor = header.get("actor")
    if not isinstance(actor, str) or not SAFE_NAME.match(actor):
        raise WireError("header", f"bad actor id {actor!r}")
    seq = valid_seq(header.get("seq"))
    episodes = header.get("episodes", [])
    if (not isinstance(episodes, list) or len(episodes) > MAX_EPISODES_PER_CHUNK
            or not all(isinstance(e, dict) for e in episodes)):
        raise WireError("header", "episodes must be a list of objects")
    return actor, seq, episodes


def pack_arrays(arrays: dict[str, np.ndarray]) -> bytes:
    buffer = io.BytesIO()
    # The flag is passed explicitly so that no array can land in it by name; the format has
    # no pickles (unpack_arrays refuses them), so an object array fails here, not at the reader.
    np.savez(buffer, allow_pickle=False, **{k: np.asarray(v) for k, v in arrays.items()})
    return buffer.getvalue()


def unpack_arrays(data: bytes, max_bytes: int = 256 << 20) -> dict[str, np.ndarray]:
    """Arrays of an ``.npz`` (no pickles) whose members total at most ``max_bytes``
    uncompressed. The sizes in the zip directory are checked before anything is
    decompressed, and decompression stops as soon as the actual output passes them (a
    directory can lie), so a zip bomb costs at most ``max_bytes`` of memory."""
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
        members = archive.infolist()
    except Exception as exc:  # BadZipFile, ValueError, OSError... for corrupt input
        raise WireError("payload", f"malformed transitions payload: {exc}") from exc
    if len(members) > MAX_NPZ_MEMBERS:
        raise WireError("payload", f"transitions payload has {len(members)} members (at most {MAX_NPZ_MEMBERS})")
    declared = sum(m.file_size for m in members)
    if declared > max_bytes:
        raise WireError("oversize", f"transitions payload unpacks to {declared} bytes (at most {max_bytes})")
    out: dict[str, np.ndarray] = {}
    budget = max_bytes
    for member in members:
        if not member.filename.endswith(".npy"):
            raise WireError("payload", f"unexpected member {member.filename!r} in a transitions payload")
        limit = min(member.file_size, budget)
        try:
            with archive.open(member) as f:
                raw = bytearray()
                while block := f.read(min(_READ_BLOCK, limit + 1 - len(raw))):
                    raw += block
                    if len(raw) > limit:
                        raise WireError("oversize", f"member {member.filename!r} unpacks past its declared size")
            out[member.filename[:-4]] = np.lib.format.read_array(io.BytesIO(bytes(raw)), allow_pickle=False)
        except WireError:
            raise
        except Exception as exc:  # zlib.error, BadZipFile (CRC), ValueError (npy header), EOFError...
            raise WireError("payload", f"malformed transitions payload: {exc}") from exc
        budget -= len(raw)
    return out
