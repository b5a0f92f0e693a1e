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
the network never run code. Every inbound message is checked (:mod:`.wire`): frame
count, MAC, header types and ranges, sizes (ZeroMQ ``MAXMSGSIZE`` per frame, and the
uncompressed size of a payload before it is decompressed). A bad message is dropped and
counted in ``rejected`` (reason -> count); it never raises out of :meth:`receive`,
:meth:`ActorClient.pump` or :meth:`ActorClient.latest_weights`. With a shared secret each
message carries an HMAC-SHA256 frame; a non-loopback address without one is refused
before any socket binds or connects. The learner binds 127.0.0.1 unless told otherwise.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections import Counter, OrderedDict, deque
from collections.abc import Callable
from typing import Any

import numpy as np
import zmq

from sim2real.errors import Sim2RealError
from sim2real.policies.hil.wire import (
    WireError,
    chunk_header,
    pack_arrays,
    parse_header,
    require_secret,
    sign,
    unpack_arrays,
    verify,
)

__all__ = ["DEFAULT_PORT", "ActorClient", "LearnerServer", "pack_arrays", "unpack_arrays"]

DEFAULT_PORT = 5555
DEFAULT_MAX_MESSAGE_BYTES = 64 << 20
CHUNKS, ACKS, WEIGHTS = b"sim2real-hil/chunk", b"sim2real-hil/ack", b"sim2real-hil/weights"
MAX_REASON_BYTES = 1000


def _count(counter: Counter[str], log: Callable[[str], None], reason: str, detail: str) -> None:
    """Count a rejection; log the 1st, 10th, 100th... of each reason (a flood cannot flood the log)."""
    counter[reason] += 1
    n = counter[reason]
    if n == 10 ** (len(str(n)) - 1):
        log(f"rejected message #{n} ({reason}): {detail}")


class LearnerServer:
    """The learner's end: receives transition chunks, acknowledges them, publishes weights.

    Args:
        host, port: Address to bind (``port`` and ``port + 1``).
        secret: Shared secret (HMAC on every frame); required when ``host`` is not loopback.
        max_message_bytes: Largest inbound frame (ZeroMQ drops the connection beyond it).
    """

    def __init__(self, host: str = "127.0.0.1", port: int = DEFAULT_PORT, secret: bytes | None = None,
                 max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES, log: Callable[[str], None] = print) -> None:
        require_secret(host, secret, "learner")  # before anything binds
        self.secret, self.log = secret, log
        self.rejected: Counter[str] = Counter()
        self.context = zmq.Context()
        self.router = self.context.socket(zmq.ROUTER)
        self.pub = self.context.socket(zmq.PUB)
        for sock in (self.router, self.pub):
            sock.setsockopt(zmq.LINGER, 0)
        self.router.setsockopt(zmq.MAXMSGSIZE, int(max_message_bytes))
        try:
            self.router.bind(f"tcp://{host}:{port}")
            self.pub.bind(f"tcp://{host}:{port + 1}")
        except zmq.ZMQError as exc:
            self.close()
            raise Sim2RealError(f"learner cannot bind {host}:{port}-{port + 1}: {exc}") from exc

    def receive(self, timeout_ms: int = 0) -> list[tuple[bytes, dict[str, Any], bytes]]:
        """Waiting chunks as ``(peer, header, payload)`` with a checked header (``actor`` a
        safe name, ``seq`` an int in range, ``episodes`` a list of objects). Unauthenticated
        messages are dropped silently (counted); other malformed ones are answered with a
        nack (seq -1) and counted."""
        out = []
        while self.router.poll(timeout_ms):
            timeout_ms = 0
            frames = self.router.recv_multipart()
            peer = frames[0]
            try:
                header_frame, payload = verify(self.secret, CHUNKS, frames[1:], 2)
            except WireError as exc:
                _count(self.rejected, self.log, exc.reason, str(exc))
                continue  # not our protocol, or not our peer: nothing to acknowledge
            try:
                actor, seq, episodes = chunk_header(header_frame)
            except WireError as exc:
                _count(self.rejected, self.log, exc.reason, str(exc))
                self.reply(peer, False, -1, str(exc))
                continue
            out.append((peer, {"actor": actor, "seq": seq, "episodes": episodes}, payload))
        return out

    def reply(self, peer: bytes, ok: bool, seq: int, reason: str = "") -> None:
        frames = [b"ack" if ok else b"nack", str(int(seq)).encode(), reason.encode()[:MAX_REASON_BYTES]]
        self.router.send_multipart([peer, *sign(self.secret, ACKS, frames)])

    def publish(self, header: dict[str, Any], payload: bytes) -> None:
        self.pub.send_multipart(sign(self.secret, WEIGHTS, [json.dumps(header).encode(), payload]))

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
        secret: Shared secret (HMAC on every frame); required when ``host`` is not loopback.
        max_message_bytes: Largest inbound acknowledgement frame.
        max_weights_bytes: Largest inbound weights frame (default ``max_message_bytes``);
            the actor sizes it from its own network, which frozen backbones can make large.
    """

    def __init__(self, host: str, port: int, actor_id: str, resend_seconds: float = 2.0,
                 max_outbox: int = 2000, secret: bytes | None = None,
                 max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES, log: Callable[[str], None] = print,
                 max_weights_bytes: int | None = None) -> None:
        require_secret(host, secret, "actor")  # before anything connects
        self.secret, self.log = secret, log
        self.context = zmq.Context()
        self.dealer = self.context.socket(zmq.DEALER)
        self.sub = self.context.socket(zmq.SUB)
        for sock in (self.dealer, self.sub):
            sock.setsockopt(zmq.LINGER, 0)
        self.dealer.setsockopt(zmq.MAXMSGSIZE, int(max_message_bytes))
        self.sub.setsockopt(zmq.MAXMSGSIZE, int(max_weights_bytes or max_message_bytes))
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
        self.rejected: deque[str] = deque(maxlen=100)
        """Reasons of the learner's latest nacks (chunks it refused); bounded, a long run
        of refusals must not grow memory. ``rejected_total`` counts them all."""
        self.rejected_total = 0
        self.errors: Counter[str] = Counter()
        """Inbound messages this end refused, by reason (``ack_*``, ``weights_*``)."""

    def send(self, transitions: dict[str, np.ndarray], episodes: list[dict[str, Any]] | None = None) -> int:
        header = {"actor": self.actor_id, "seq": self.seq, "episodes": episodes or []}
        frames = sign(self.secret, CHUNKS, [json.dumps(header).encode(), pack_arrays(transitions)])
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

    def _ack(self, frames: list[bytes]) -> None:
        """Apply one acknowledgement; raises :class:`WireError` for a malformed one."""
        status, seq_frame, reason = verify(self.secret, ACKS, frames, 3)
        if status not in (b"ack", b"nack"):
            raise WireError("status", f"unknown acknowledgement status {status[:20]!r}")
        text = seq_frame.decode("ascii", errors="replace")
        if not (text.isdigit() or text == "-1") or len(text) > 19:
            raise WireError("seq", f"bad acknowledged seq {seq_frame[:20]!r}")
        seq = int(text)
        if seq == -1 and status == b"nack":
            self.rejected.append(reason.decode(errors="replace"))  # the learner could not read a header
            self.rejected_total += 1
        elif self.outbox.pop(seq, None) is not None:  # else a duplicate answer to a resend
            if status == b"ack":
                self.acked += 1
            else:
                self.rejected.append(reason.decode(errors="replace"))
                self.rejected_total += 1

    def pump(self) -> None:
        """Handle acknowledgements and resend stale chunks (call every step); a malformed
        acknowledgement is counted in ``errors`` and ignored."""
        while self.dealer.poll(0):
            try:
                self._ack(self.dealer.recv_multipart())
            except WireError as exc:
                _count(self.errors, self.log, f"ack_{exc.reason}", str(exc))
        now = time.monotonic()
        for seq, (sent, frames) in list(self.outbox.items()):
            if now - sent > self.resend_seconds:
                self.outbox[seq] = (now, frames)
                self._send(frames)

    def latest_weights(self) -> tuple[dict[str, Any], bytes] | None:
        """The newest well-formed published weights since the last call, or ``None``
        (malformed or unauthenticated messages are counted in ``errors`` and skipped)."""
        latest = None
        while self.sub.poll(0):
            try:
                header, payload = verify(self.secret, WEIGHTS, self.sub.recv_multipart(), 2)
                latest = parse_header(header), payload
            except WireError as exc:
                _count(self.errors, self.log, f"weights_{exc.reason}", str(exc))
        return latest

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


def free_port_pair(host: str = "127.0.0.1") -> int:
    """A port p with p and p + 1 free on ``host`` (a learner's two sockets)."""
    import socket

    for _ in range(50):
        with socket.socket() as a:
            a.bind((host, 0))
            port = a.getsockname()[1]
            try:
                with socket.socket() as b:
                    b.bind((host, port + 1))
            except OSError:
                continue
            return port
    raise RuntimeError("no free port pair")
