"""SAC from the training config (SB3's implementation)."""

from __future__ import annotations

from stable_baselines3 import SAC
from stable_baselines3.common.vec_env import VecEnv

from sim2real.policies.config import TrainConfig
from sim2real.policies.networks import activation
from sim2real.sim.core.errors import ConfigError


def build_sac(config: TrainConfig, env: VecEnv, tensorboard_log: str | None = None) -> SAC:
    """A fresh SAC model for ``env`` from the resolved config."""
    c = config.sac
    return SAC(
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
        ent_coef=_number_or_auto(c.ent_coef, "sac.ent_coef"),
        target_entropy=_number_or_auto(c.target_entropy, "sac.target_entropy"),
        policy_kwargs={
            "net_arch": {"pi": list(config.net.pi), "qf": list(config.net.vf)},
            "activation_fn": activation(config.net.activation),
        },
        tensorboard_log=tensorboard_log,
        seed=config.seed,
        device=config.device,
        verbose=0,
    )


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
