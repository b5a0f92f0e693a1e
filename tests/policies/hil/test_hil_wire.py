"""Hostile input on the real ZeroMQ transport (loopback only): every bad message is
refused and counted, and neither the learner nor the actor dies of it (issue 16, defect 8)."""

from __future__ import annotations

import io
import json
import time
import tracemalloc
import zipfile
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import zmq
from hil_helpers import free_port_pair, tiny_config

from sim2real.errors import Sim2RealError
from sim2real.policies.hil.buffers import coerce_transitions, transition_spec
from sim2real.policies.hil.env import HilEnv
from sim2real.policies.hil.learner import Learner
from sim2real.policies.hil.transport import ActorClient, pack_arrays


@pytest.fixture(scope="module")
def env() -> Iterator[HilEnv]:
    env = HilEnv(tiny_config().env, seed=0)
    yield env
    env.close()


def chunk(env: HilEnv, n: int = 4, **overrides: np.ndarray) -> dict[str, np.ndarray]:
    """``n`` well-formed transitions of ``env``'s layout, with fields replaced by ``overrides``."""
    rng = np.random.default_rng(0)
    out = {f"{p}.state": rng.normal(size=(n, env.state_dim)).astype(np.float32) for p in ("obs", "next_obs")}
    out.update(action=rng.uniform(-1, 1, (n, env.action_dim)).astype(np.float32), reward=np.zeros(n, np.float32),
               terminated=np.zeros(n, bool), intervened=np.zeros(n, bool))
    out.update(overrides)
    return out


def make_learner(tmp_path: Path, env: HilEnv, port: int, **transport: object) -> Learner:
    cfg = tiny_config()
    for key, value in transport.items():
        setattr(cfg.transport, key, value)
    return Learner(cfg, env.observation_shapes(), env.action_dim, tmp_path / "run", port=port, log=lambda s: None)


def raw_dealer(port: int) -> tuple[zmq.Context, zmq.Socket]:
    context = zmq.Context()
    sock = context.socket(zmq.DEALER)
    sock.setsockopt(zmq.LINGER, 0)
    sock.connect(f"tcp://127.0.0.1:{port}")
    return context, sock


def pump_until(learner: Learner, condition, seconds: float = 10.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition() and time.monotonic() < deadline:
        learner.handle_messages(50)


def send_good_chunk(learner: Learner, env: HilEnv, port: int, n: int = 4, **client_args: object) -> ActorClient:
    client = ActorClient("127.0.0.1", port, "good", resend_seconds=0.2, log=lambda s: None, **client_args)
    client.send(chunk(env, n))
    deadline = time.monotonic() + 10
    while client.outbox and time.monotonic() < deadline:
        learner.handle_messages(50)
        client.pump()
    return client


def test_hostile_headers_are_counted_and_the_next_good_chunk_is_stored(tmp_path: Path, env: HilEnv) -> None:
    port = free_port_pair()
    learner = make_learner(tmp_path, env, port)
    context, dealer = raw_dealer(port)
    payload = pack_arrays(chunk(env))
    headers = [b'{"actor": "evil", "seq": Infinity}', b'{"actor": "evil", "seq": NaN}', b'{"actor": "evil", "seq": -3}',
               b'{"actor": "evil", "seq": true}', b'{"actor": "evil", "seq": 1.5}', b'{"actor": 7, "seq": 0}',
               b'{"actor": "evil", "seq": 1, "episodes": 5}', b'[1]', b"\xff"]
    try:
        time.sleep(0.2)
        for header in headers:
            dealer.send_multipart([header, payload])
        pump_until(learner, lambda: sum(learner.rejections().values()) >= len(headers))
        client = send_good_chunk(learner, env, port)
        client.close()
    finally:
        dealer.close(0)
        context.term()
        learner.server.close()
    assert not client.outbox and len(learner.online) == 4
    assert learner.rejections() == {"seq": 5, "header": 4}
    assert len(list((tmp_path / "run" / "transitions").glob("*.npz"))) == 1


def write_bomb(uncompressed_bytes: int, state_dim: int) -> bytes:
    """An npz whose ``obs.state`` member deflates from zeros: ~1000x smaller than it unpacks."""
    rows = uncompressed_bytes // (4 * state_dim)
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(header, {"descr": "<f4", "fortran_order": False, "shape": (rows, state_dim)})
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive, \
            archive.open("obs.state.npy", "w", force_zip64=True) as member:
        member.write(header.getvalue())
        block = bytes(1 << 20)
        for _ in range(rows * 4 * state_dim // len(block)):
            member.write(block)
        member.write(bytes(rows * 4 * state_dim % len(block)))
    return buffer.getvalue()


def test_a_zip_bomb_is_refused_with_bounded_memory(tmp_path: Path, env: HilEnv) -> None:
    port = free_port_pair()
    bomb_bytes = 256 << 20
    bomb = write_bomb(bomb_bytes, env.state_dim)
    assert len(bomb) < 1 << 20  # under a MiB on the wire
    learner = make_learner(tmp_path, env, port, max_chunk_mb=8.0)
    context, dealer = raw_dealer(port)
    try:
        time.sleep(0.2)
        tracemalloc.start()
        dealer.send_multipart([json.dumps({"actor": "bomber", "seq": 0}).encode(), bomb])
        pump_until(learner, lambda: sum(learner.rejections().values()) >= 1)
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        assert dealer.poll(5000)
        status, seq, reason = dealer.recv_multipart()
        client = send_good_chunk(learner, env, port)
        client.close()
    finally:
        dealer.close(0)
        context.term()
        learner.server.close()
    assert (status, seq) == (b"nack", b"0") and b"unpacks to" in reason
    assert learner.rejections() == {"oversize": 1}
    assert peak < 32 << 20, f"peak {peak / 2**20:.0f} MiB while refusing a {bomb_bytes >> 20} MiB bomb"
    assert len(learner.online) == 4


def test_an_oversized_frame_is_dropped_and_the_learner_goes_on(tmp_path: Path, env: HilEnv) -> None:
    port = free_port_pair()
    learner = make_learner(tmp_path, env, port, max_message_mb=1.0)
    context, dealer = raw_dealer(port)
    big = pack_arrays(chunk(env, 20_000))  # a valid chunk of a few MiB: over the 1 MiB cap
    assert len(big) > 2 << 20
    try:
        time.sleep(0.2)
        dealer.send_multipart([json.dumps({"actor": "big", "seq": 0}).encode(), big])
        pump_until(learner, lambda: False, seconds=1.0)
        client = send_good_chunk(learner, env, port)
        client.close()
    finally:
        dealer.close(0)
        context.term()
        learner.server.close()
    assert len(learner.online) == 4 and not client.outbox


@pytest.mark.parametrize("field, value", [
    ("obs.state", np.full((4, 1), 1e39)),  # float64: finite before the float32 cast, inf after
    ("action", np.full((4, 1), -1e300)),
    ("action", np.full((4, 1), 1e30)),  # finite in float32 too: beyond the normalized range (issue 42, defect 11)
    ("action", np.full((4, 1), 1.5)),
    ("reward", np.array([0.0, 1e39, 0.0, 0.0])),
    ("intervened", np.array([0, 2, 1, 1])),  # not a bool
])
def test_values_are_checked_after_the_cast_even_when_intervened(tmp_path: Path, env: HilEnv, field: str,
                                                                 value: np.ndarray) -> None:
    port = free_port_pair()
    learner = make_learner(tmp_path, env, port)
    width = {"obs.state": env.state_dim, "action": env.action_dim}.get(field)
    bad = chunk(env, **{"intervened": np.ones(4, bool), field: np.tile(value, (1, width)) if width else value})
    client = ActorClient("127.0.0.1", port, "actor", resend_seconds=0.2, log=lambda s: None)
    try:
        client.send(bad)
        deadline = time.monotonic() + 10
        while client.outbox and time.monotonic() < deadline:
            learner.handle_messages(50)
            client.pump()
    finally:
        client.close()
        learner.server.close()
    assert len(client.rejected) == 1 and not client.outbox
    assert len(learner.online) == 0 and len(learner.demo) == 0 and learner.rejections() == {"values": 1}
    assert not list((tmp_path / "run" / "transitions").glob("*.npz"))


def test_images_that_wrap_in_uint8_are_refused() -> None:
    spec = transition_spec({"state": (2,), "wrist": (3, 4, 4)}, 2)
    batch = {"obs.state": np.zeros((1, 2)), "next_obs.state": np.zeros((1, 2)), "action": np.zeros((1, 2)),
             "reward": np.zeros(1), "terminated": np.zeros(1, bool), "intervened": np.ones(1, bool),
             "obs.wrist": np.full((1, 3, 4, 4), 300, np.int16), "next_obs.wrist": np.zeros((1, 3, 4, 4), np.uint8)}
    with pytest.raises(Sim2RealError, match="outside uint8"):
        coerce_transitions(batch, spec)
    batch["obs.wrist"] = np.full((1, 3, 4, 4), 200, np.int16)
    assert coerce_transitions(batch, spec)["obs.wrist"].dtype == np.uint8
