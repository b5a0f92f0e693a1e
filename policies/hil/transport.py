"""Actor/learner transport over ZeroMQ.

Two sockets per learner, at ``port`` and ``port + 1``:

- transitions: the actor's DEALER -> the learner's ROUTER. Message
  ``[header JSON, npz payload]``; header ``{"actor", "seq", "episodes"}``. The learner
  answers ``[b"ack" | b"nack", seq, reason]`` once the chunk is on its disk. The actor keeps
  every chunk until acknowledged and sends it again after ``resend_seconds``, so a
  learner restart loses nothing the actor produced; the learner drops duplicates by
  ``(actor, seq)``.
- weights: the learner's PUB -> the actor's SUB, ``[header JSON, torch payload]`` every
  few seconds; the actor keeps the newest and acts with the last weights it has while the
  learner is away.

Payloads are ``.npz`` without pickles and ``torch.load(weights_only=True)``: bytes from
the network never run code. The learner binds 127.0.0.1 unless told otherwise.
"""

from __future__ import annotations

import contextlib
import io
import json
import time
from collections import OrderedDict
from typing import Any

import numpy as np
import zmq

from sim2real.errors import Sim2RealError

DEFAULT_PORT = 5555


def pack_arrays(arrays: dict[str, np.ndarray]) -> bytes:
    buffer = io.BytesIO()
    np.savez(buffer, **{k: np.asarray(v) for k, v in arrays.items()})
    return buffer.getvalue()


def unpack_arrays(data: bytes) -> dict[str, np.ndarray]:
    try:
        with np.load(io.BytesIO(data), allow_pickle=False) as npz:
            return {k: npz[k] for k in npz.files}
    except Exception as exc:  # zipfile/ValueError/OSError for corrupt input
        raise Sim2RealError(f"malformed transitions payload: {exc}") from exc


def _header(data: bytes) -> dict[str, Any]:
    try:
        header = json.loads(data.decode())
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise Sim2RealError(f"malformed message header: {exc}") from exc
    if not isinstance(header, dict):
        raise Sim2RealError("message header is not a JSON object")
    return header


class LearnerServer:
    """The learner's end: receives transition chunks, acknowledges them, publishes weights."""

    def __init__(self, host: str = "127.0.0.1", port: int = DEFAULT_PORT) -> None:
        self.context = zmq.Context()
        self.router = self.context.socket(zmq.ROUTER)
        self.pub = self.context.socket(zmq.PUB)
        for sock in (self.router, self.pub):
            sock.setsockopt(zmq.LINGER, 0)
        try:
            self.router.bind(f"tcp://{host}:{port}")
            self.pub.bind(f"tcp://{host}:{port + 1}")
        except zmq.ZMQError as exc:
            self.close()
            raise Sim2RealError(f"learner cannot bind {host}:{port}-{port + 1}: {exc}") from exc

    def receive(self, timeout_ms: int = 0) -> list[tuple[bytes, dict[str, Any], bytes]]:
        """Waiting chunks as ``(peer, header, payload)``; malformed messages are answered
        with a nack and skipped."""
        out = []
        while self.router.poll(timeout_ms):
            timeout_ms = 0
            frames = self.router.recv_multipart()
            peer = frames[0]
            if len(frames) != 3:
                continue  # not our protocol: nothing to acknowledge
            try:
                out.append((peer, _header(frames[1]), frames[2]))
            except Sim2RealError as exc:
                self.reply(peer, False, -1, str(exc))
        return out

    def reply(self, peer: bytes, ok: bool, seq: int, reason: str = "") -> None:
        self.router.send_multipart([peer, b"ack" if ok else b"nack", str(int(seq)).encode(), reason.encode()])

    def publish(self, header: dict[str, Any], payload: bytes) -> None:
        self.pub.send_multipart([json.dumps(header).encode(), payload])

    def close(self) -> None:
        self.router.close(0)
        self.pub.close(0)
        self.context.term()


class ActorClient:
    """The actor's end: an outbox of unacknowledged chunks and the newest weights.

    Args:
        host, port: The learner's address.
        actor_id: Unique per actor process (chunk identity at the learner).
        resend_seconds: Resend a chunk not acknowledged within this long.
        max_outbox: Chunks kept while the learner is away; beyond it the oldest is dropped.
    """

    def __init__(self, host: str, port: int, actor_id: str, resend_seconds: float = 2.0,
                 max_outbox: int = 2000) -> None:
        self.context = zmq.Context()
        self.dealer = self.context.socket(zmq.DEALER)
        self.sub = self.context.socket(zmq.SUB)
        for sock in (self.dealer, self.sub):
            sock.setsockopt(zmq.LINGER, 0)
        # Queue only on live connections: while the learner is away, chunks wait in our
        # outbox (resent later), not in a pipe to a dead peer.
        self.dealer.setsockopt(zmq.IMMEDIATE, 1)
        self.sub.setsockopt(zmq.SUBSCRIBE, b"")
        self.sub.setsockopt(zmq.RCVHWM, 4)
        self.dealer.connect(f"tcp://{host}:{port}")
        self.sub.connect(f"tcp://{host}:{port + 1}")
        self.actor_id = actor_id
        self.resend_seconds, self.max_outbox = resend_seconds, max_outbox
        self.outbox: OrderedDict[int, tuple[float, list[bytes]]] = OrderedDict()
        self.seq = 0
        self.acked = 0
        self.dropped = 0
        self.rejected: list[str] = []

    def send(self, transitions: dict[str, np.ndarray], episodes: list[dict[str, Any]] | None = None) -> int:
        header = {"actor": self.actor_id, "seq": self.seq, "episodes": episodes or []}
        frames = [json.dumps(header).encode(), pack_arrays(transitions)]
        self.outbox[self.seq] = (time.monotonic(), frames)
        self._send(frames)
        self.seq += 1
        while len(self.outbox) > self.max_outbox:
            self.outbox.popitem(last=False)
            self.dropped += 1
        return self.seq - 1

    def _send(self, frames: list[bytes]) -> None:
        # zmq.Again: no live connection to the learner; the resend will retry.
        with contextlib.suppress(zmq.Again):
            self.dealer.send_multipart(frames, flags=zmq.NOBLOCK)

    def pump(self) -> None:
        """Handle acknowledgements and resend stale chunks (call every step)."""
        while self.dealer.poll(0):
            frames = self.dealer.recv_multipart()
            if len(frames) != 3:
                continue
            seq = int(frames[1])
            if self.outbox.pop(seq, None) is not None:
                if frames[0] == b"ack":
                    self.acked += 1
                else:
                    self.rejected.append(frames[2].decode(errors="replace"))
        now = time.monotonic()
        for seq, (sent, frames) in list(self.outbox.items()):
            if now - sent > self.resend_seconds:
                self.outbox[seq] = (now, frames)
                self._send(frames)

    def latest_weights(self) -> tuple[dict[str, Any], bytes] | None:
        """The newest published weights since the last call, or ``None``."""
        latest = None
        while self.sub.poll(0):
            frames = self.sub.recv_multipart()
            if len(frames) == 2:
                latest = frames
        if latest is None:
            return None
        return _header(latest[0]), latest[1]

    def flush(self, timeout_s: float) -> bool:
        """Wait up to ``timeout_s`` for every chunk to be acknowledged."""
        deadline = time.monotonic() + timeout_s
        while self.outbox and time.monotonic() < deadline:
            self.dealer.poll(50)
            self.pump()
        return not self.outbox

    def close(self) -> None:
        self.dealer.close(0)
        self.sub.close(0)
        self.context.term()
