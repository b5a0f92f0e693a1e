"""Build a :class:`PPOLagrangian` from a resolved config (``ppo`` + ``lagrangian`` blocks)."""

from __future__ import annotations

from stable_baselines3.common.vec_env import VecEnv

from sim2real.policies.common.lagrangian import multiplier_kwargs
from sim2real.policies.config import TrainConfig
from sim2real.policies.ppo.ppo import ppo_kwargs
from sim2real.policies.ppo_lag.ppo_lag import PPOLagrangian


def build_ppo_lag(config: TrainConfig, env: VecEnv, tensorboard_log: str | None = None) -> PPOLagrangian:
    """A fresh PPO-Lagrangian model for ``env``."""
    lag = config.lagrangian
    return PPOLagrangian(
        env=env,
        cost_metric=lag.cost_metric,
        **multiplier_kwargs(lag),
        cost_gamma=lag.cost_gamma,
        cost_gae_lambda=lag.cost_gae_lambda,
        **ppo_kwargs(config, tensorboard_log),
    )
