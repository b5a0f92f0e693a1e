"""Actor and learner over the real ZeroMQ transport on loopback: weights reach the actor,
and either side restarting loses none of the other's data."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
import torch
from hil_helpers import free_port_pair, tiny_config

from sim2real.errors import Sim2RealError
from sim2real.policies.hil.actor import Actor
from sim2real.policies.hil.devices import ScriptedOperator
from sim2real.policies.hil.env import HilEnv
from sim2real.policies.hil.learner import Learner
from sim2real.policies.hil.transport import ActorClient, LearnerServer, pack_arrays, unpack_arrays


def stored_transitions(run_dir: Path) -> dict[str, np.ndarray]:
    chunks = [unpack_arrays(p.read_bytes()) for p in sorted((run_dir / "transitions").glob("*.npz"))]
    return {k: np.concatenate([c[k] for c in chunks]) for k in chunks[0]} if chunks else {}


def test_actor_learner_on_loopback_updates_the_actors_weights(tmp_path: Path) -> None:
    torch.set_num_threads(1)
    cfg, port = tiny_config(), free_port_pair()
    env = HilEnv(cfg.env, seed=0)
    learner = Learner(cfg, env.observation_shapes(), env.action_dim, tmp_path / "run", port=port, log=lambda s: None)
    stop = threading.Event()

    def learn() -> None:
        while not stop.is_set():
            learner.step()
            time.sleep(0.002)  # leave the actor CPU on a 2-core machine

    thread = threading.Thread(target=learn, daemon=True)
    thread.start()
    device = ScriptedOperator(env.obs_layout, env.action_layout, seed=0, patience_steps=20)
    actor = Actor(cfg, env, device, port=port, log=lambda s: None)
    initial = [p.clone() for p in actor.agent.actor.parameters()]
    try:
        deadline = time.monotonic() + 60
        summary = actor.run(200)
        while actor.weights_version <= 0 and time.monotonic() < deadline:
            actor.client.pump()
            actor.take_weights()
            time.sleep(0.05)
    finally:
        stop.set()
        thread.join(10)
        actor.close()
        learner.server.close()
        env.close()
    assert summary["flushed"] and summary["unacknowledged"] == 0 and summary["rejected"] == 0
    assert actor.weights_version > 0 and learner.agent.updates > 0
    assert any(not torch.equal(a, b) for a, b in zip(initial, actor.agent.actor.parameters()))
    # Every step reached the learner, and intervened steps sit in both buffers, flagged.
    assert len(learner.online) == 200
    intervened = int(learner.online.data["intervened"][:200].sum())
    assert intervened > 0 and len(learner.demo) == intervened
    assert learner.demo.data["intervened"][:intervened].all()
    assert summary["intervention_rate"] == pytest.approx(intervened / 200)


class LearnerProcess:
    """``sim2real hil learner`` as a user starts it, its output kept in a log: a test waits
    for it to listen before timing the transport (a loaded machine takes many seconds to
    import torch), and a failure says what the learner said."""

    def __init__(self, config_file: Path, run_dir: Path, port: int, log: Path) -> None:
        cmd = [sys.executable, "-m", "sim2real", "hil", "learner", "--config", str(config_file), "--run-dir",
               str(run_dir), "--port", str(port), "--max-seconds", "120"]
        self.log = log
        with log.open("ab") as out:
            self.earlier = self.listens()  # the lines of learners before this one
            self.proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT,
                                         env={**os.environ, "OMP_NUM_THREADS": "1"})

    def said(self) -> str:
        """The log's end, for a failure's message."""
        return self.log.read_text(errors="replace")[-3000:]

    def listens(self) -> int:
        """How many learners of this log have said they listen."""
        return self.log.read_text(errors="replace").count("learner on ")

    def wait_listening(self, timeout: float = 120.0) -> None:
        """Until this learner says it listens."""
        end = time.monotonic() + timeout
        while self.listens() <= self.earlier and time.monotonic() < end:
            assert self.proc.poll() is None, f"the learner exited with {self.proc.returncode}:\n{self.said()}"
            time.sleep(0.1)
        assert self.listens() > self.earlier, f"the learner did not listen in {timeout:.0f} s:\n{self.said()}"


@pytest.mark.heavy
def test_actor_and_learner_survive_each_others_restarts(tmp_path: Path) -> None:
    torch.set_num_threads(1)
    cfg, port = tiny_config(), free_port_pair()
    config_file = tmp_path / "config.json"
    config_file.write_text(json.dumps(cfg.to_dict()))
    run_dir = tmp_path / "run"
    env = HilEnv(cfg.env, seed=0)
    actor = Actor(cfg, env, None, port=port, log=lambda s: None)
    log = tmp_path / "learner.log"
    learner = LearnerProcess(config_file, run_dir, port, log)
    try:
        learner.wait_listening()
        first = actor.run(150, flush_seconds=30)
        assert first["flushed"], (first, learner.said())
        os.kill(learner.proc.pid, signal.SIGKILL)  # no checkpoint, no goodbye
        learner.proc.wait()
        # The learner is away: the actor keeps acting with the weights it has.
        away = actor.run(100, flush_seconds=0)
        assert away["steps"] == 100 and away["unacknowledged"] > 0
        learner = LearnerProcess(config_file, run_dir, port, log)
        learner.wait_listening()
        assert actor.client.flush(30), f"the restarted learner must acknowledge what the actor kept:\n{learner.said()}"
        actor.close()
        # A second actor process (new identity) joins the same learner.
        second = Actor(cfg, HilEnv(cfg.env, seed=1), None, port=port, log=lambda s: None)
        assert second.run(50, flush_seconds=30)["flushed"], learner.said()
        second.close()
        assert learner.proc.poll() is None, learner.said()  # it kept running through the actor's restart
    finally:
        learner.proc.send_signal(signal.SIGINT)
        learner.proc.wait(30)
        env.close()
    stored = stored_transitions(run_dir)
    assert len(stored["reward"]) == 300  # every step of both actors, each exactly once
    assert (run_dir / "checkpoint.pt").exists()


def test_malformed_messages_are_refused(tmp_path: Path) -> None:
    cfg, port = tiny_config(), free_port_pair()
    env = HilEnv(cfg.env, seed=0)
    learner = Learner(cfg, env.observation_shapes(), env.action_dim, tmp_path / "run", port=port, log=lambda s: None)
    client = ActorClient("127.0.0.1", port, "tester", resend_seconds=0.2)
    try:
        client.send({"obs.state": np.full((2, env.state_dim), np.nan, np.float32)})
        deadline = time.monotonic() + 10
        while (client.outbox or not client.rejected) and time.monotonic() < deadline:
            learner.handle_messages(50)
            client.pump()
        assert len(client.rejected) == 1 and not client.outbox and len(learner.online) == 0
        client.dealer.send_multipart([b"{not json", b""])  # connected now: goes out at once
        assert learner.handle_messages(1000) == 0 and len(learner.online) == 0
        with pytest.raises(Sim2RealError, match="cannot bind"):
            LearnerServer("127.0.0.1", port)  # the port is taken: a clear error, not a hang
    finally:
        client.close()
        learner.server.close()
        env.close()
    assert unpack_arrays(pack_arrays({"a": np.arange(3)}))["a"].tolist() == [0, 1, 2]
    with pytest.raises(Sim2RealError):
        unpack_arrays(b"junk")
