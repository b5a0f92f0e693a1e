"""TD3 from the training config (SB3's implementation)."""

from __future__ import annotations

import numpy as np
from gymnasium import spaces
from stable_baselines3 import TD3
from stable_baselines3.common.noise import NormalActionNoise
from stable_baselines3.common.vec_env import VecEnv

from sim2real.policies.common.off_policy import off_policy_kwargs
from sim2real.policies.config import TrainConfig


def build_td3(config: TrainConfig, env: VecEnv, tensorboard_log: str | None = None) -> TD3:
    """A fresh TD3 model for ``env`` from the resolved config."""
    c = config.td3
    action_space = env.action_space
    if not isinstance(action_space, spaces.Box):  # TD3 acts in continuous spaces only
        raise TypeError(f"TD3 needs a Box action space, not {type(action_space).__name__}")
    n_actions = int(np.prod(action_space.shape))
    noise = (
        NormalActionNoise(np.zeros(n_actions), c.action_noise_std * np.ones(n_actions)) if c.action_noise_std else None
    )
    return TD3(
        "MlpPolicy",
        env,
        policy_delay=c.policy_delay,
        target_policy_noise=c.target_policy_noise,
        target_noise_clip=c.target_noise_clip,
        action_noise=noise,
        **off_policy_kwargs(c, config, tensorboard_log),
    )
