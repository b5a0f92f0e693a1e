"""The policy as a plain torch module, separate from the algorithm that trained it.

:class:`DeterministicActor` is what gets evaluated and exported: observation
normalization (the ``VecNormalize`` statistics as buffers), the algorithm's
deterministic action (PPO: the Gaussian mean; SAC: tanh of the mean; TD3: the
actor), clipped to [-1, 1]. Its submodules are the SB3 policy's own layers (no
copies), so it always reflects the current weights.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch import nn

ACTIVATIONS: dict[str, type[nn.Module]] = {"elu": nn.ELU, "tanh": nn.Tanh, "relu": nn.ReLU}


def activation(name: str) -> type[nn.Module]:
    """The torch activation class of a config name."""
    return ACTIVATIONS[name]


class _PPOMean(nn.Module):
    def __init__(self, policy: Any) -> None:
        super().__init__()
        self.features = policy.pi_features_extractor
        self.latent = policy.mlp_extractor.policy_net
        self.mean = policy.action_net

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return self.mean(self.latent(self.features(obs)))


class _SACMean(nn.Module):
    def __init__(self, policy: Any) -> None:
        super().__init__()
        actor = policy.actor
        self.features = actor.features_extractor
        self.latent = actor.latent_pi
        self.mean = actor.mu

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        # SAC's deterministic action is the squashed mean of its tanh-Gaussian.
        return torch.tanh(self.mean(self.latent(self.features(obs))))


class _TD3Actor(nn.Module):
    def __init__(self, policy: Any) -> None:
        super().__init__()
        self.features = policy.actor.features_extractor
        self.mu = policy.actor.mu  # ends in Tanh

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return self.mu(self.features(obs))


_HEADS = {"ppo": _PPOMean, "sac": _SACMean, "td3": _TD3Actor, "ppo_lag": _PPOMean, "sac_lag": _SACMean,
          "distill": _PPOMean}


class DeterministicActor(nn.Module):
    """Raw observation ``[B, O]`` -> deterministic action ``[B, A]`` in [-1, 1].

    Args:
        policy: The SB3 policy (``model.policy``) of a PPO, SAC or TD3 model.
        algo: ``ppo``, ``sac`` or ``td3``.
        obs_mean, obs_var: Normalization statistics (``None``: no normalization).
        clip_obs: Normalized observations are clipped to ``[-clip_obs, clip_obs]``.
        epsilon: Added to the variance before the square root (as VecNormalize).
    """

    # Buffers (register_buffer): declared so they read as tensors, not ``Tensor | Module``.
    obs_mean: torch.Tensor
    obs_std: torch.Tensor

    def __init__(
        self,
        policy: Any,
        algo: str,
        obs_mean: np.ndarray | None = None,
        obs_var: np.ndarray | None = None,
        clip_obs: float = 10.0,
        epsilon: float = 1e-8,
    ) -> None:
        super().__init__()
        self.head = _HEADS[algo](policy)
        self.normalize = obs_mean is not None
        # An asymmetric actor-critic trains on observation + privileged state; the actor
        # (and so this module and every export) takes the observation alone.
        size = int(getattr(policy, "actor_obs_size", policy.observation_space.shape[0]))
        mean = np.zeros(size) if obs_mean is None else np.asarray(obs_mean, dtype=np.float64)[:size]
        var = np.ones(size) if obs_var is None else np.asarray(obs_var, dtype=np.float64)[:size]
        # The std is computed in float64 like VecNormalize, then stored as float32.
        self.register_buffer("obs_mean", torch.as_tensor(mean, dtype=torch.float32))
        self.register_buffer("obs_std", torch.as_tensor(np.sqrt(var + epsilon), dtype=torch.float32))
        self.clip_obs = float(clip_obs)
        self.obs_size = size

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        x = obs
        if self.normalize:
            x = torch.clamp((x - self.obs_mean) / self.obs_std, -self.clip_obs, self.clip_obs)
        return torch.clamp(self.head(x), -1.0, 1.0)


class TorchPolicy:
    """A :class:`DeterministicActor` as a numpy callable ``obs [B, O] -> action [B, A]``
    (``privileged_inputs``: a teacher, whose ``obs`` is observation + privileged state)."""

    def __init__(self, actor: DeterministicActor, privileged_inputs: bool = False) -> None:
        self.actor = actor.eval()
        self.privileged_inputs = privileged_inputs

    def __call__(self, obs: np.ndarray) -> np.ndarray:
        with torch.no_grad():
            out = self.actor(torch.as_tensor(np.asarray(obs, dtype=np.float32)))
        return out.numpy()


class StochasticPolicy:
    """The SB3 model sampling its action distribution, on normalized observations."""

    def __init__(self, model: Any, normalize: Any | None, privileged_inputs: bool = False) -> None:
        self.model = model
        self.normalize = normalize
        self.privileged_inputs = privileged_inputs

    def __call__(self, obs: np.ndarray) -> np.ndarray:
        x = np.asarray(obs, dtype=np.float32)
        missing = int(self.model.observation_space.shape[0]) - x.shape[-1]
        if missing > 0:  # an asymmetric critic's privileged part: zeros; the actor never reads it
            x = np.concatenate([x, np.zeros((*x.shape[:-1], missing), dtype=np.float32)], axis=-1)
        x = self.normalize(x) if self.normalize is not None else x
        action, _ = self.model.predict(x, deterministic=False)
        return np.asarray(action, dtype=np.float32)
