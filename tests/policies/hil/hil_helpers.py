"""Small configurations and free ports for the HIL-SERL tests."""

from __future__ import annotations

import socket

from sim2real.policies.hil.config import EnvConfig, HilConfig, LearnerConfig


def free_port_pair() -> int:
    """A port p with p and p + 1 free on 127.0.0.1 (transitions and weights)."""
    for _ in range(50):
        with socket.socket() as a:
            a.bind(("127.0.0.1", 0))
            port = a.getsockname()[1]
            try:
                with socket.socket() as b:
                    b.bind(("127.0.0.1", port + 1))
            except OSError:
                continue
        return port
    raise RuntimeError("no free port pair")


def tiny_config(obs_mode: str = "state", **learner) -> HilConfig:
    """Small networks and batches so a test trains in seconds."""
    values = dict(batch_size=16, hidden=(32, 32), latent_dim=16, warmup_steps=32, publish_seconds=0.2,
                  checkpoint_seconds=1.0, buffer_capacity=5000)
    values.update(learner)
    cfg = HilConfig(env=EnvConfig(obs_mode=obs_mode, image_size=32), learner=LearnerConfig(**values))
    cfg.actor.chunk_size = 16
    cfg.actor.resend_seconds = 0.5
    cfg.validate()
    return cfg
