"""TD3 from the training config (SB3's implementation)."""

from __future__ import annotations

import numpy as np
from stable_baselines3 import TD3
from stable_baselines3.common.noise import NormalActionNoise
from stable_baselines3.common.vec_env import VecEnv

from sim2real.policies.config import TrainConfig
from sim2real.policies.networks import activation


def build_td3(config: TrainConfig, env: VecEnv, tensorboard_log: str | None = None) -> TD3:
    """A fresh TD3 model for ``env`` from the resolved config."""
    c = config.td3
    n_actions = int(np.prod(env.action_space.shape))
    noise = (
        NormalActionNoise(np.zeros(n_actions), c.action_noise_std * np.ones(n_actions)) if c.action_noise_std else None
    )
    return TD3(
        "MlpPolicy",
        env,
        learning_rate=c.learning_rate,
        buffer_size=c.buffer_size,
        learning_starts=c.learning_starts,
        batch_size=c.batch_size,
        tau=c.tau,
        gamma=c.gamma,
        train_freq=c.train_freq,
        gradient_steps=c.gradient_steps,
        policy_delay=c.policy_delay,
        target_policy_noise=c.target_policy_noise,
        target_noise_clip=c.target_noise_clip,
        action_noise=noise,
        policy_kwargs={
            "net_arch": {"pi": list(config.net.pi), "qf": list(config.net.vf)},
            "activation_fn": activation(config.net.activation),
        },
        tensorboard_log=tensorboard_log,
        seed=config.seed,
        device=config.device,
        verbose=0,
    )
