"""The learner process: receives transitions, trains, publishes weights, checkpoints.

Run folder::

    RUN/
      config.json          the HilConfig
      checkpoint.pt        agent weights + optimisers (atomic; loaded on restart)
      transitions/         every acknowledged chunk, ``<actor>-<seq>.npz`` (atomic; replayed on restart)
      episodes.jsonl       one line per finished actor episode (return, success, interventions)
      learner.jsonl        one line per log interval (updates, losses, buffer sizes)

A chunk is acknowledged only after it is on disk, so a learner killed at any moment comes
back with every transition the actor saw acknowledged; the actor resends the rest.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch

from sim2real.errors import Sim2RealError
from sim2real.policies.common import atomic
from sim2real.policies.hil.buffers import MixedSampler, ReplayBuffer, coerce_transitions, transition_spec
from sim2real.policies.hil.config import HilConfig
from sim2real.policies.hil.sac import HilAgent, tensors_from_bytes, tensors_to_bytes
from sim2real.policies.hil.transport import LearnerServer, pack_arrays, unpack_arrays
from sim2real.policies.hil.wire import WireError, load_secret
from sim2real.stopping import stop_on_signals


def policy_fingerprint(obs_shapes: dict[str, tuple[int, ...]], action_dim: int) -> str:
    """Identifies the network layout: an actor refuses weights for another layout."""
    return json.dumps({"obs": {k: list(v) for k, v in sorted(obs_shapes.items())}, "action_dim": action_dim})


class Learner:
    """Learner state and one iteration of its loop (:meth:`step`); :meth:`run` loops.

    Args:
        config: The run's configuration.
        obs_shapes, action_dim: Observation shapes and action size (from a :class:`HilEnv`).
        run_dir: The run folder (resumed when it holds a checkpoint).
        demos: Demonstration transitions for the demo buffer.
        host, port: Address to bind (127.0.0.1 by default; 0.0.0.0 for other machines).
    """

    def __init__(self, config: HilConfig, obs_shapes: dict[str, tuple[int, ...]], action_dim: int,
                 run_dir: str | Path, demos: dict[str, np.ndarray] | None = None, host: str = "127.0.0.1",
                 port: int = 5555, log: Callable[[str], None] = print) -> None:
        self.config, self.log = config, log
        self.run_dir = Path(run_dir)
        self.chunk_dir = self.run_dir / "transitions"
        self.chunk_dir.mkdir(parents=True, exist_ok=True)
        atomic.remove_stale_temporaries(self.chunk_dir)
        atomic.write_json(self.run_dir / "config.json", config.to_dict())
        self.rng = np.random.default_rng(config.seed)
        self.agent = HilAgent(obs_shapes, action_dim, config.learner, seed=config.seed)
        self.fingerprint = policy_fingerprint(obs_shapes, action_dim)
        self.spec = transition_spec(obs_shapes, action_dim)
        self.online = ReplayBuffer(self.spec, config.learner.buffer_capacity)
        self.demo = ReplayBuffer(self.spec, config.learner.buffer_capacity)
        self.sampler = MixedSampler(self.online, self.demo, config.learner.demo_fraction)
        if demos is not None:
            self.demo.add(demos)
        self.seen: set[str] = set()
        self.rejected: Counter[str] = Counter()
        """Chunks refused after their header was read, by reason (the server counts the rest)."""
        self.max_chunk_bytes = int(config.transport.max_chunk_mb * (1 << 20))
        secret = load_secret(config.transport.secret_env, config.transport.secret_file)
        # Checked before _restore and any bind: a non-loopback address needs a secret.
        self.server = LearnerServer(host, port, secret, int(config.transport.max_message_mb * (1 << 20)), log)
        try:
            self._restore()
        except BaseException:
            self.server.close()
            raise
        self.last_publish = self.last_checkpoint = self.last_log = 0.0
        self.stop = False

    # -- persistence ---------------------------------------------------------------
    def _restore(self) -> None:
        checkpoint = self.run_dir / "checkpoint.pt"
        if checkpoint.exists():
            self.agent.load_full_state(tensors_from_bytes(checkpoint.read_bytes()))
            self.log(f"resumed from {checkpoint} at update {self.agent.updates}")
        chunks = sorted(self.chunk_dir.glob("*.npz"), key=lambda p: p.stat().st_mtime)
        for path in chunks:
            try:
                self._add(coerce_transitions(unpack_arrays(path.read_bytes(), self.max_chunk_bytes), self.spec))
            except Sim2RealError as exc:  # written by an older version that checked less: kept, not used
                self.rejected["stored_chunk"] += 1
                self.log(f"skipped stored chunk {path.name}: {exc}")
            self.seen.add(path.stem)
        if chunks:
            self.log(f"replayed {len(chunks)} chunks: {len(self.online)} online, {len(self.demo)} demo transitions")

    def _add(self, transitions: dict[str, np.ndarray]) -> None:
        self.online.add(transitions)
        flagged = np.asarray(transitions["intervened"], bool)
        if flagged.any():  # the operator's steps also go to the demo buffer
            self.demo.add({k: np.asarray(v)[flagged] for k, v in transitions.items()})

    def checkpoint(self) -> None:
        atomic.write_bytes(self.run_dir / "checkpoint.pt", tensors_to_bytes(self.agent.full_state()))

    # -- the loop ------------------------------------------------------------------
    def rejections(self) -> dict[str, int]:
        """Every message refused so far, by reason (transport and content)."""
        return dict(self.server.rejected + self.rejected)

    def handle_messages(self, timeout_ms: int) -> int:
        """Store and acknowledge waiting chunks; a bad chunk is nacked and counted, never raised."""
        received = 0
        for peer, header, payload in self.server.receive(timeout_ms):
            actor, seq = header["actor"], header["seq"]
            name = f"{actor}-{seq:09d}"
            try:
                if name not in self.seen:
                    try:
                        transitions = coerce_transitions(unpack_arrays(payload, self.max_chunk_bytes), self.spec)
                    except WireError:
                        raise
                    except Sim2RealError as exc:
                        raise WireError("values", str(exc)) from exc
                    atomic.write_bytes(self.chunk_dir / f"{name}.npz", pack_arrays(transitions))
                    self._add(transitions)
                    self.seen.add(name)
                    received += len(transitions["reward"])
                    self._log_episodes(header["episodes"])
                self.server.reply(peer, True, seq)
            except Exception as exc:  # one chunk's failure (even a disk error) must not stop the learner
                reason = exc.reason if isinstance(exc, WireError) else "error"
                self.rejected[reason] += 1
                self.log(f"rejected chunk {name} ({reason}): {exc}")
                self.server.reply(peer, False, seq, str(exc))
        return received

    def _log_episodes(self, episodes: list[Any]) -> None:
        if episodes:
            with open(self.run_dir / "episodes.jsonl", "a") as f:
                for episode in episodes:
                    f.write(json.dumps(episode) + "\n")

    def publish(self) -> None:
        header = {"version": self.agent.updates, "fingerprint": self.fingerprint}
        self.server.publish(header, tensors_to_bytes(self.agent.policy_state()))

    def step(self) -> dict[str, float] | None:
        """Receive, train once (when there is enough data), publish and checkpoint on time."""
        ready = len(self.online) >= self.config.learner.warmup_steps
        self.handle_messages(0 if ready else 50)
        info = None
        if ready:
            if not self.agent.normalization_fitted:
                self.agent.fit_normalization(np.concatenate([self.online.data["obs.state"][: len(self.online)],
                                                             self.demo.data["obs.state"][: len(self.demo)]]))
            batch_size = self.config.learner.batch_size
            info = self.agent.update(lambda: self.sampler.sample(batch_size, self.rng))
        now = time.monotonic()
        if now - self.last_publish >= self.config.learner.publish_seconds:
            self.publish()
            self.last_publish = now
        if now - self.last_checkpoint >= self.config.learner.checkpoint_seconds:
            self.checkpoint()
            self.last_checkpoint = now
        if info is not None and now - self.last_log >= 10.0:
            self.last_log = now
            line = {"updates": self.agent.updates, "online": len(self.online), "demo": len(self.demo), **info,
                    "rejected": self.rejections()}
            with open(self.run_dir / "learner.jsonl", "a") as f:
                f.write(json.dumps(line) + "\n")
        return info

    def run(self, max_updates: int | None = None, max_seconds: float | None = None) -> None:
        """Loop until SIGINT/SIGTERM, ``max_updates`` or ``max_seconds``; checkpoints on exit."""
        torch.set_num_threads(1)
        start = time.monotonic()
        with stop_on_signals(self.request_stop):
            try:
                while not self.stop:
                    self.step()
                    if max_updates is not None and self.agent.updates >= max_updates:
                        break
                    if max_seconds is not None and time.monotonic() - start >= max_seconds:
                        break
            finally:
                self.checkpoint()
                self.server.close()

    def request_stop(self) -> None:
        """End the loop after the current step (SIGINT/SIGTERM call this)."""
        self.stop = True
