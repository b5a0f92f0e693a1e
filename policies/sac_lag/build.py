"""Build a :class:`SACLagrangian` from a resolved config (``sac`` + ``lagrangian`` blocks)."""

from __future__ import annotations

from stable_baselines3.common.vec_env import VecEnv

from sim2real.policies.common.lagrangian import multiplier_kwargs
from sim2real.policies.config import TrainConfig
from sim2real.policies.sac.sac import sac_kwargs
from sim2real.policies.sac_lag.sac_lag import SACLagrangian


def build_sac_lag(config: TrainConfig, env: VecEnv, tensorboard_log: str | None = None) -> SACLagrangian:
    """A fresh SAC-Lagrangian model for ``env``."""
    lag = config.lagrangian
    return SACLagrangian(
        "MlpPolicy",
        env,
        **multiplier_kwargs(lag),
        lambda_every=lag.update_every_steps,
        replay_buffer_kwargs={"cost_metric": lag.cost_metric},
        **sac_kwargs(config, tensorboard_log),
    )
