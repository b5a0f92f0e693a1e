"""Small configurations and free ports for the HIL-SERL tests."""

from __future__ import annotations

from sim2real.policies.hil.config import EnvConfig, HilConfig, LearnerConfig
from sim2real.policies.hil.transport import free_port_pair

__all__ = ["free_port_pair", "tiny_config"]


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
