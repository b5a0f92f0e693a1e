"""Asymmetric actor-critic for PPO: the critic also sees the simulator's privileged
state, the actor only what a robot measures.

The value function only has to be right in simulation, so it may read what no
sensor gives (true base velocity, contacts, friction, payload, motor strength:
the task's ``privileged_layout``). A critic that knows the randomized dynamics
predicts returns better under wide randomization, which gives the actor lower-variance
advantages (Pinto et al., "Asymmetric Actor Critic", 2017; legged_gym/rsl_rl's
``critic_obs``). The actor, and everything exported and deployed, stays on the
observation alone.

The environment appends the privileged state to each observation
(``BatchedVecEnv(privileged_obs=True)``); the actor network starts by keeping the
first ``actor_obs_size`` entries, so a deployed actor fed the plain observation
computes the same action.
"""

from __future__ import annotations

from typing import Any

import torch
from stable_baselines3.common.policies import ActorCriticPolicy
from stable_baselines3.common.torch_layers import MlpExtractor
from torch import nn


class FirstEntries(nn.Module):
    """Keep the first ``size`` entries of the last axis (the observation, not the privileged part)."""

    def __init__(self, size: int) -> None:
        super().__init__()
        self.size = int(size)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x[..., : self.size]


class AsymmetricMlpExtractor(nn.Module):
    """SB3's ``MlpExtractor`` interface with an actor on the observation and a critic on everything."""

    def __init__(
        self, feature_dim: int, actor_obs_size: int, net_arch: Any, activation_fn: type[nn.Module], device: Any
    ) -> None:
        super().__init__()
        actor = MlpExtractor(actor_obs_size, net_arch, activation_fn, device)
        critic = MlpExtractor(feature_dim, net_arch, activation_fn, device)
        self.policy_net = nn.Sequential(FirstEntries(actor_obs_size), actor.policy_net)
        self.value_net = critic.value_net
        self.latent_dim_pi = actor.latent_dim_pi
        self.latent_dim_vf = critic.latent_dim_vf

    def forward(self, features: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.forward_actor(features), self.forward_critic(features)

    def forward_actor(self, features: torch.Tensor) -> torch.Tensor:
        return self.policy_net(features)

    def forward_critic(self, features: torch.Tensor) -> torch.Tensor:
        return self.value_net(features)


class AsymmetricActorCriticPolicy(ActorCriticPolicy):
    """``MlpPolicy`` whose actor reads only the first ``actor_obs_size`` observation entries.

    Args:
        actor_obs_size: Size of the robot's observation; the rest of the (flat)
            observation is privileged state for the critic.
        *args, **kwargs: Passed to :class:`ActorCriticPolicy`.
    """

    def __init__(self, *args: Any, actor_obs_size: int, **kwargs: Any) -> None:
        self.actor_obs_size = int(actor_obs_size)
        super().__init__(*args, **kwargs)

    def _build_mlp_extractor(self) -> None:
        if not 0 < self.actor_obs_size < self.features_dim:
            raise ValueError(
                f"actor_obs_size {self.actor_obs_size} must be below the observation size {self.features_dim}"
            )
        self.mlp_extractor = AsymmetricMlpExtractor(
            self.features_dim, self.actor_obs_size, self.net_arch, self.activation_fn, self.device
        )
