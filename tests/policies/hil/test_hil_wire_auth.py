"""The actor's side of hostile input (weights, acknowledgements) and peer authentication,
on real ZeroMQ sockets over loopback (issue 16, defect 8)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch
import zmq
from hil_helpers import free_port_pair, tiny_config
from test_hil_wire import chunk, raw_dealer

from sim2real.errors import Sim2RealError
from sim2real.policies.hil.actor import Actor
from sim2real.policies.hil.env import HilEnv
from sim2real.policies.hil.learner import Learner
from sim2real.policies.hil.sac import tensors_to_bytes
from sim2real.policies.hil.transport import ActorClient, LearnerServer

SECRET_VAR = "SIM2REAL_HIL_TEST_SECRET"


@pytest.fixture(scope="module")
def env() -> Iterator[HilEnv]:
    env = HilEnv(tiny_config().env, seed=0)
    yield env
    env.close()


@pytest.fixture
def loopback_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any bind/connect off loopback fails the test before a packet could leave."""
    for name in ("bind", "connect"):
        original = getattr(zmq.Socket, name)

        def guarded(self, addr: str, _original=original):
            assert addr.startswith("tcp://127.0.0.1:"), f"{addr} is not loopback"
            return _original(self, addr)

        monkeypatch.setattr(zmq.Socket, name, guarded)


def receive_weights(actor: Actor, server: LearnerServer, header: dict, state: dict) -> bool:
    """Publish until the actor's subscription sees it (PUB/SUB joins late); True if loaded."""
    before = (actor.weight_updates, sum(actor.weights_rejected.values()), sum(actor.client.errors.values()))
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        server.publish(header, tensors_to_bytes(state))
        time.sleep(0.05)
        loaded = actor.take_weights()
        after = (actor.weight_updates, sum(actor.weights_rejected.values()), sum(actor.client.errors.values()))
        if after != before:
            return loaded
    raise AssertionError("the weights never arrived")


def test_the_actor_refuses_bad_weights_and_keeps_its_last_good_ones(env: HilEnv) -> None:
    cfg, port = tiny_config(), free_port_pair()
    server = LearnerServer("127.0.0.1", port, log=lambda s: None)
    actor = Actor(cfg, env, None, port=port, log=lambda s: None)
    try:
        good = {k: v + 0.01 if v.is_floating_point() else v for k, v in actor.agent.policy_state().items()}
        header = {"version": 1, "fingerprint": actor.fingerprint}
        assert receive_weights(actor, server, header, good)
        key = next(k for k in good if k.startswith("actor."))
        nan = {**good, key: torch.full_like(good[key], float("nan"))}
        assert not receive_weights(actor, server, {**header, "version": 2}, nan)
        shape = {**good, key: torch.zeros(3)}
        assert not receive_weights(actor, server, {**header, "version": 3}, shape)
        missing = {k: v for k, v in good.items() if k != key}
        assert not receive_weights(actor, server, {**header, "version": 4}, missing)
        assert not receive_weights(actor, server, {**header, "version": float("inf")}, good)
        server.pub.send_multipart([b"{broken", b""])
        assert not receive_weights(actor, server, {**header, "version": "x"}, good)
        state = actor.agent.policy_state()
    finally:
        actor.close()
        server.close()
    assert actor.weights_version == 1 and actor.weight_updates == 1
    assert all(torch.equal(state[k], good[k]) for k in good)
    assert actor.weights_rejected == {"tensors": 3, "version": 2}


def test_malformed_acknowledgements_are_counted_and_ignored() -> None:
    port = free_port_pair()
    context = zmq.Context()
    router = context.socket(zmq.ROUTER)
    router.setsockopt(zmq.LINGER, 0)
    router.bind(f"tcp://127.0.0.1:{port}")
    client = ActorClient("127.0.0.1", port, "actor", resend_seconds=60, log=lambda s: None)
    try:
        time.sleep(0.2)
        client.send({"x": torch.zeros(1).numpy()})
        assert router.poll(5000)
        peer = router.recv_multipart()[0]
        for frames in ([b"ack"], [b"ack", b"0"], [b"ok", b"0", b""], [b"ack", b"inf", b""], [b"ack", b"1e3", b""],
                       [b"ack", b"99999999999999999999999", b""], [b"nack", b"\xff", b""], [b"ack", b"0", b"", b""]):
            router.send_multipart([peer, *frames])
        router.send_multipart([peer, b"ack", b"0", b""])
        deadline = time.monotonic() + 5
        while client.outbox and time.monotonic() < deadline:
            client.dealer.poll(50)
            client.pump()
    finally:
        client.close()
        router.close(0)
        context.term()
    assert not client.outbox and client.acked == 1 and not client.rejected
    assert client.errors == {"ack_frame_count": 3, "ack_status": 1, "ack_seq": 4}


def test_with_a_secret_unauthenticated_frames_are_refused(tmp_path: Path, env: HilEnv,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(SECRET_VAR, "correct horse battery staple")
    cfg, port = tiny_config(), free_port_pair()
    cfg.transport.secret_env = SECRET_VAR
    learner = Learner(cfg, env.observation_shapes(), env.action_dim, tmp_path / "run", port=port, log=lambda s: None)
    context, dealer = raw_dealer(port)
    intruder = ActorClient("127.0.0.1", port, "intruder", resend_seconds=0.2, secret=b"wrong secret, 16+ bytes",
                           log=lambda s: None)
    friend = ActorClient("127.0.0.1", port, "friend", resend_seconds=0.2, secret=b"correct horse battery staple",
                         log=lambda s: None)
    try:
        time.sleep(0.2)
        dealer.send_multipart([json.dumps({"actor": "anon", "seq": 0}).encode(), b"x"])  # no MAC
        intruder.send(chunk(env))  # a MAC with the wrong secret
        friend.send(chunk(env))
        deadline = time.monotonic() + 10
        while (friend.outbox or sum(learner.rejections().values()) < 2) and time.monotonic() < deadline:
            learner.handle_messages(50)
            friend.pump()
        learner.publish()
        weights = None
        while weights is None and time.monotonic() < deadline:
            learner.publish()
            time.sleep(0.05)
            weights = friend.latest_weights()
        intruder.pump()
        forged = intruder.latest_weights()
    finally:
        for c in (intruder, friend):
            c.close()
        dealer.close(0)
        context.term()
        learner.server.close()
    assert not friend.outbox and friend.acked == 1 and len(learner.online) == 4
    assert learner.rejections() == {"mac_missing": 1, "mac_bad": 1}
    assert intruder.outbox and intruder.acked == 0 and forged is None  # it trusts nothing signed by others
    assert weights is not None and weights[0]["fingerprint"] == learner.fingerprint
    assert intruder.errors["weights_mac_bad"] >= 1


def test_off_loopback_without_a_secret_nothing_starts(tmp_path: Path, env: HilEnv, loopback_only: None,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SIM2REAL_HIL_SECRET", raising=False)
    cfg = tiny_config()
    for host in ("0.0.0.0", "192.0.2.1", "learner.example"):
        with pytest.raises(Sim2RealError, match="without a shared secret"):
            Learner(cfg, env.observation_shapes(), env.action_dim, tmp_path / "run", host=host, log=lambda s: None)
        with pytest.raises(Sim2RealError, match="without a shared secret"):
            Actor(cfg, env, None, host=host, log=lambda s: None)
    monkeypatch.setenv("SIM2REAL_HIL_SECRET", "short")
    with pytest.raises(Sim2RealError, match="at least 16 bytes"):
        Actor(cfg, env, None, log=lambda s: None)


def test_the_secret_can_come_from_a_file(tmp_path: Path, env: HilEnv, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SIM2REAL_HIL_SECRET", raising=False)
    secret_file = tmp_path / "secret"
    secret_file.write_text("a file secret of enough bytes\n")
    cfg, port = tiny_config(), free_port_pair()
    cfg.transport.secret_file = str(secret_file)
    learner = Learner(cfg, env.observation_shapes(), env.action_dim, tmp_path / "run", port=port, log=lambda s: None)
    signed = ActorClient("127.0.0.1", port, "signed", resend_seconds=0.2, secret=b"a file secret of enough bytes",
                         log=lambda s: None)
    try:
        signed.send(chunk(env))
        deadline = time.monotonic() + 10
        while signed.outbox and time.monotonic() < deadline:
            learner.handle_messages(50)
            signed.pump()
    finally:
        signed.close()
        learner.server.close()
    assert signed.acked == 1 and len(learner.online) == 4 and not learner.rejections()
    cfg.transport.secret_file = str(tmp_path / "missing")
    with pytest.raises(Sim2RealError, match="cannot read the HIL secret file"):
        Actor(cfg, env, None, log=lambda s: None)
