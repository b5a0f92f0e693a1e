"""PPO with a KL-adaptive learning rate (rsl_rl's schedule) over SB3's PPO."""

from __future__ import annotations

from typing import Any

from stable_baselines3 import PPO
from stable_baselines3.common.utils import ConstantSchedule, update_learning_rate
from stable_baselines3.common.vec_env import VecEnv

from sim2real.errors import ConfigError
from sim2real.policies.config import TrainConfig
from sim2real.policies.networks import activation
from sim2real.policies.ppo.asymmetric import AsymmetricActorCriticPolicy


class AdaptivePPO(PPO):
    """SB3 PPO whose step size follows the KL divergence of each update.

    After an update whose mean approximate KL exceeds ``2 * desired_kl`` the
    step size is divided by 1.5; below ``desired_kl / 2`` it is multiplied by
    1.5, within ``[lr_min, lr_max]`` (rsl_rl adapts per minibatch, we per
    update: same fixed point, fewer knobs). The current value is an attribute,
    so it is saved with the model and survives ``--resume``.

    Args:
        desired_kl: Target KL; ``None`` keeps the learning rate constant.
        lr_min, lr_max: Bounds of the adapted learning rate.
        *args, **kwargs: Passed to :class:`stable_baselines3.PPO`.
    """

    def __init__(
        self, *args: Any, desired_kl: float | None = None, lr_min: float = 1e-5, lr_max: float = 1e-2, **kwargs: Any
    ) -> None:
        self.desired_kl = desired_kl
        self.lr_min = lr_min
        self.lr_max = lr_max
        super().__init__(*args, **kwargs)
        lr = kwargs.get("learning_rate", 3e-4)  # build_ppo passes it by keyword
        self.current_lr = float(lr) if isinstance(lr, (int, float)) else 3e-4

    def _setup_model(self) -> None:
        super()._setup_model()
        # SB3's load() rebuilds lr_schedule from the initial learning_rate; keep the adapted one.
        if self.desired_kl is not None and hasattr(self, "current_lr"):
            self.lr_schedule = ConstantSchedule(self.current_lr)

    def train(self) -> None:
        super().train()
        if self.desired_kl is None:
            return
        kl = self.logger.name_to_value.get("train/approx_kl")
        if kl is None:
            return
        if kl > 2.0 * self.desired_kl:
            self.current_lr = max(self.lr_min, self.current_lr / 1.5)
        elif kl < 0.5 * self.desired_kl:
            self.current_lr = min(self.lr_max, self.current_lr * 1.5)
        # SB3 reads lr_schedule at the start of each update; a picklable constant keeps save/load working.
        self.lr_schedule = ConstantSchedule(self.current_lr)
        update_learning_rate(self.policy.optimizer, self.current_lr)
        self.logger.record("train/adaptive_lr", self.current_lr)


def ppo_kwargs(config: TrainConfig, tensorboard_log: str | None = None) -> dict[str, Any]:
    """Keyword arguments of :class:`AdaptivePPO` from the config's ``ppo`` block."""
    c = config.ppo
    return dict(
        policy="MlpPolicy",
        learning_rate=c.learning_rate,
        n_steps=c.n_steps,
        batch_size=c.batch_size,
        n_epochs=c.n_epochs,
        gamma=c.gamma,
        gae_lambda=c.gae_lambda,
        clip_range=c.clip_range,
        ent_coef=c.ent_coef,
        vf_coef=c.vf_coef,
        max_grad_norm=c.max_grad_norm,
        target_kl=c.target_kl,
        desired_kl=c.desired_kl,
        lr_min=c.lr_min,
        lr_max=c.lr_max,
        policy_kwargs={
            "net_arch": {"pi": list(config.net.pi), "vf": list(config.net.vf)},
            "activation_fn": activation(config.net.activation),
            "log_std_init": c.log_std_init,
        },
        tensorboard_log=tensorboard_log,
        seed=config.seed,
        device=config.device,
        verbose=0,
    )


def build_ppo(config: TrainConfig, env: VecEnv, tensorboard_log: str | None = None) -> AdaptivePPO:
    """A fresh PPO model for ``env`` from the resolved config (with ``net.critic_privileged``
    an asymmetric actor-critic; ``env`` then appends the privileged state to its observations)."""
    kwargs = ppo_kwargs(config, tensorboard_log)
    if config.net.critic_privileged:
        from sim2real.sim.core.vec_env import BatchedVecEnv

        kwargs["policy"] = AsymmetricActorCriticPolicy
        base = env.unwrapped
        if not isinstance(base, BatchedVecEnv):  # the privileged state is the simulator's
            raise ConfigError("net.critic_privileged", f"needs the simulator's batched env, not {type(base).__name__}")
        kwargs["policy_kwargs"]["actor_obs_size"] = int(base.task_obs_size)
    return AdaptivePPO(env=env, **kwargs)
