"""Hyperparameters that can change on a restored model, and how to change them.

Population Based Training (``sim2real sweep`` with ``scheduler: pbt``) copies a
better trial's checkpoint into a worse trial and continues it with new values.
That is only honest for a value the restored SB3 model reads again while it
trains: a loss weight read at every update, an optimizer's step size, a discount
read when the next rollout's returns are computed. Values that size or build
something (networks, the rollout or replay buffer, the environments) or that act
once at the start (initial log-std, seed, ``learning_starts``) would be written
into ``config.yaml`` while the model kept the old ones, so they are not listed
here and a PBT sweep that varies them is refused before Ray starts.

:data:`MUTABLE` is the allow-list, per algorithm, each key with why it takes
effect; :func:`apply` sets the values of a config on a loaded model.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

_PPO = {
    "ppo.learning_rate": "the optimizer's step size, set in its param groups; with desired_kl it is the value the "
                         "KL-adaptive rate restarts from",
    "ppo.desired_kl": "read after every update by the KL-adaptive step size",
    "ppo.lr_min": "a bound of the KL-adaptive step size, read after every update",
    "ppo.lr_max": "a bound of the KL-adaptive step size, read after every update",
    "ppo.ent_coef": "a loss weight read at every minibatch",
    "ppo.vf_coef": "a loss weight read at every minibatch",
    "ppo.max_grad_norm": "read at every gradient step",
    "ppo.clip_range": "a constant schedule read at every update",
    "ppo.n_epochs": "read at every update",
    "ppo.batch_size": "the minibatch size the rollout buffer is split into at every update (no rebuild)",
    "ppo.target_kl": "read at every update",
    "ppo.gamma": "read when each rollout's returns and advantages are computed (model and rollout buffer) and "
                 "by reward normalization",
    "ppo.gae_lambda": "read when each rollout's advantages are computed (rollout buffer)",
}
_OFF_POLICY = {
    "learning_rate": "the step size of every optimizer (actor, critic, temperature), set in their param groups",
    "tau": "the target-network update rate, read at every gradient step",
    "gamma": "read at every gradient step (targets) and by reward normalization",
    "batch_size": "the size of each sampled minibatch (no rebuild)",
    "gradient_steps": "read after every rollout",
}
_SAC = {
    **{f"sac.{k}": v for k, v in _OFF_POLICY.items()},
    "sac.ent_coef": "a fixed temperature only (a number, not auto): the tensor read at every gradient step",
    "sac.target_entropy": "the learned temperature's target, read at every gradient step",
}
_TD3 = {
    **{f"td3.{k}": v for k, v in _OFF_POLICY.items()},
    "td3.policy_delay": "read at every gradient step",
    "td3.target_policy_noise": "read at every gradient step",
    "td3.target_noise_clip": "read at every gradient step",
    "td3.action_noise_std": "the exploration noise, rebuilt (it holds no state) before training continues",
}
MUTABLE: dict[str, dict[str, str]] = {"ppo": _PPO, "ppo_lag": _PPO, "sac": _SAC, "sac_lag": _SAC, "td3": _TD3,
                                      "distill": {}}
"""Algorithm -> dotted config key -> why setting it on a restored model takes effect."""

_FIXED = {
    "n_steps": "it sizes the rollout buffer", "buffer_size": "it sizes the replay buffer",
    "log_std_init": "it only initializes the learned log-std", "learning_starts": "it acts once, at the start",
    "train_freq": "SB3 converts it when the model is built", "net": "it sizes the networks",
    "n_envs": "it sizes the environments", "seed": "a restored run continues its saved RNG states",
    "lagrangian": "the multiplier's controller is not re-read from the config",
}


_BLOCKS = {"ppo": "ppo", "ppo_lag": "ppo", "distill": "ppo", "sac": "sac", "sac_lag": "sac", "td3": "td3"}


def why_fixed(key: str, algo: str | None = None) -> str:
    """Why PBT cannot change ``key`` on a running ``algo`` model (for the one-line error)."""
    block = key.split(".")[0]
    if algo is not None and block in ("ppo", "sac", "td3") and block != _BLOCKS.get(algo):
        return f"a {algo} run does not read the {block} block"
    for part in reversed(key.split(".")):
        if part in _FIXED:
            return _FIXED[part]
    return "the restored model does not read it again"


@dataclass(frozen=True)
class Retune:
    """A resume that sets new hyperparameter values on the restored model (a PBT exploit).

    The Trainer otherwise refuses to resume with a config that differs from the run
    folder's ``config.yaml``; with a Retune, exactly ``keys`` may differ, they are set
    on the model after it is loaded, and ``record`` (when given) is appended to
    ``config.yaml``'s ``provenance.hyperparameter_changes``.
    """

    keys: tuple[str, ...]
    """Dotted config keys, each in :data:`MUTABLE` for the run's algorithm."""
    record: dict[str, Any] | None = field(default=None)
    """Where the change came from (donor trial, step); ``None``: re-apply only, record nothing."""


def apply(model: Any, vecnorm: Any, config: Any, keys: tuple[str, ...]) -> dict[str, Any]:
    """Set the values of ``keys`` from ``config`` on a loaded SB3 ``model`` (and on the
    reward normalization's ``vecnorm.gamma``); returns the values set. Every key is set,
    changed or not: a donor's checkpoint carries the donor's values."""
    allowed = MUTABLE.get(config.algo, {})
    bad = [k for k in keys if k not in allowed]
    if bad:
        raise ValueError(f"{bad[0]} cannot be changed on a running {config.algo} model "
                         f"({why_fixed(bad[0], config.algo)})")
    block = config.algo_config()
    values = {k: getattr(block, k.split(".", 1)[1]) for k in keys}
    names = {k.split(".", 1)[1]: v for k, v in values.items()}
    for name, value in names.items():
        _set(model, vecnorm, name, value)
    if "learning_rate" in names or "desired_kl" in names:
        _reset_learning_rate(model)
    return values


def _set(model: Any, vecnorm: Any, name: str, value: Any) -> None:
    import torch
    from stable_baselines3.common.utils import FloatSchedule

    if name == "clip_range":
        model.clip_range = FloatSchedule(float(value))
    elif name in ("gamma", "gae_lambda"):
        setattr(model, name, float(value))
        if getattr(model, "rollout_buffer", None) is not None:
            setattr(model.rollout_buffer, name, float(value))
        if name == "gamma" and vecnorm is not None:
            vecnorm.gamma = float(value)
    elif name == "ent_coef" and _is_sac(model):
        if getattr(model, "ent_coef_optimizer", None) is not None:
            raise ValueError("sac.ent_coef: the model learns its temperature (auto); PBT can set a fixed one only")
        model.ent_coef = float(value)
        model.ent_coef_tensor = torch.tensor(float(value), device=model.device)
    elif name == "target_entropy":
        size = float(torch.tensor(model.action_space.shape).prod())
        model.target_entropy = -size if value == "auto" else float(value)
    elif name == "action_noise_std":
        model.action_noise = _action_noise(model, float(value))
    elif name in ("n_epochs", "batch_size", "gradient_steps", "policy_delay"):
        setattr(model, name, int(value))
    else:
        setattr(model, name, None if value is None else float(value))


def _is_sac(model: Any) -> bool:
    return hasattr(model, "log_ent_coef")


def _action_noise(model: Any, std: float) -> Any:
    import numpy as np
    from stable_baselines3.common.noise import NormalActionNoise

    n = int(np.prod(model.action_space.shape))
    return NormalActionNoise(np.zeros(n), std * np.ones(n)) if std else None


def _reset_learning_rate(model: Any) -> None:
    """Point the model's learning-rate schedule and its optimizers at the new rate.

    SB3 sets each optimizer's rate from ``model.lr_schedule`` at every update; the
    KL-adaptive PPO keeps its current rate in ``current_lr`` (saved with the model).
    A new ``learning_rate`` restarts the adaptation there; without ``desired_kl``
    the rate is simply ``learning_rate``.
    """
    from stable_baselines3.common.utils import ConstantSchedule, update_learning_rate

    from sim2real.policies.common.session import optimizers

    if hasattr(model, "current_lr"):  # AdaptivePPO (and PPO-Lagrangian)
        model.current_lr = float(model.learning_rate)
        model.lr_schedule = ConstantSchedule(model.current_lr)
        if model.desired_kl is None:
            model._setup_lr_schedule()
    else:
        model._setup_lr_schedule()
    rate = float(model.lr_schedule(model._current_progress_remaining))
    for opt in optimizers(model).values():
        update_learning_rate(opt, rate)
