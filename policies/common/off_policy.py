"""Settings SAC and TD3 share: replay, update schedule, networks, logging."""

from __future__ import annotations

from typing import Any

from sim2real.policies.config import TrainConfig
from sim2real.policies.networks import activation
from sim2real.policies.rewards.relabel import RelabelReplayBuffer


def off_policy_kwargs(c: Any, config: TrainConfig, tensorboard_log: str | None) -> dict[str, Any]:
    """SB3 constructor arguments common to the off-policy algorithms; ``c`` is the
    algorithm's config block (``config.sac`` or ``config.td3``)."""
    refine = config.reward.refine
    relabelled = config.reward.source == "clip" and refine.every > 0 and refine.relabel
    return {
        # Refining the reward model mid-run: the buffer keeps frames so its rewards can follow the model.
        "replay_buffer_class": RelabelReplayBuffer if relabelled else None,
        "learning_rate": c.learning_rate,
        "buffer_size": c.buffer_size,
        "learning_starts": c.learning_starts,
        "batch_size": c.batch_size,
        "tau": c.tau,
        "gamma": c.gamma,
        "train_freq": c.train_freq,
        "gradient_steps": c.gradient_steps,
        "policy_kwargs": {
            "net_arch": {"pi": list(config.net.pi), "qf": list(config.net.vf)},
            "activation_fn": activation(config.net.activation),
        },
        "tensorboard_log": tensorboard_log,
        "seed": config.seed,
        "device": config.device,
        "verbose": 0,
    }
