"""The algorithm registry: one entry per folder (``ppo/``, ``sac/``, ``td3/``, ``ppo_lag/``, ``sac_lag/``,
``distill/``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sim2real.sim.core.errors import ConfigError


@dataclass(frozen=True)
class AlgorithmSpec:
    """How to build and load one algorithm."""

    name: str
    cls: type
    """The SB3 algorithm class (its ``load`` restores a checkpoint's model.zip)."""
    build: Callable[..., Any]
    """``build(config, env, tensorboard_log=None) -> model``."""
    off_policy: bool
    """Has a replay buffer (saved with ``last`` checkpoints)."""


def get_algorithm(name: str) -> AlgorithmSpec:
    """The spec of ``ppo``, ``sac``, ``td3``, ``ppo_lag``, ``sac_lag`` or ``distill`` (imports torch and SB3)."""
    if name == "ppo":
        from sim2real.policies.ppo import AdaptivePPO, build_ppo

        return AlgorithmSpec("ppo", AdaptivePPO, build_ppo, off_policy=False)
    if name == "sac":
        from stable_baselines3 import SAC

        from sim2real.policies.sac import build_sac

        return AlgorithmSpec("sac", SAC, build_sac, off_policy=True)
    if name == "td3":
        from stable_baselines3 import TD3

        from sim2real.policies.td3 import build_td3

        return AlgorithmSpec("td3", TD3, build_td3, off_policy=True)
    if name == "ppo_lag":
        from sim2real.policies.ppo_lag import PPOLagrangian, build_ppo_lag

        return AlgorithmSpec("ppo_lag", PPOLagrangian, build_ppo_lag, off_policy=False)
    if name == "sac_lag":
        from sim2real.policies.sac_lag import SACLagrangian, build_sac_lag

        return AlgorithmSpec("sac_lag", SACLagrangian, build_sac_lag, off_policy=True)
    if name == "distill":
        from sim2real.policies.distill import DAgger, build_distill

        return AlgorithmSpec("distill", DAgger, build_distill, off_policy=False)
    raise ConfigError("algo", f"must be ppo, sac, td3, ppo_lag, sac_lag or distill, got {name!r}")
