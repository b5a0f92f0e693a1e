"""SAC from the training config (SB3's implementation)."""

from __future__ import annotations

from typing import Any

from stable_baselines3 import SAC
from stable_baselines3.common.vec_env import VecEnv

from sim2real.policies.common.off_policy import off_policy_kwargs
from sim2real.policies.config import TrainConfig
from sim2real.sim.core.errors import ConfigError


def sac_kwargs(config: TrainConfig, tensorboard_log: str | None = None) -> dict[str, Any]:
    """SAC constructor arguments from the config's ``sac`` block."""
    c = config.sac
    return {
        "ent_coef": _number_or_auto(c.ent_coef, "sac.ent_coef"),
        "target_entropy": _number_or_auto(c.target_entropy, "sac.target_entropy"),
        **off_policy_kwargs(c, config, tensorboard_log),
    }


def build_sac(config: TrainConfig, env: VecEnv, tensorboard_log: str | None = None) -> SAC:
    """A fresh SAC model for ``env`` from the resolved config."""
    return SAC("MlpPolicy", env, **sac_kwargs(config, tensorboard_log))


def _number_or_auto(value: str, field: str) -> str | float:
    if value == "auto" or value.startswith("auto_"):
        if value.startswith("auto_"):
            _float(value[5:], field)
        return value
    return _float(value, field)


def _float(value: str, field: str) -> float:
    try:
        return float(value)
    except ValueError:
        raise ConfigError(field, f"must be a number, 'auto' or 'auto_<initial>', got {value!r}") from None
