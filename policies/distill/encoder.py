"""The student's network front: observation normalization inside the graph and a
temporal convolution over the proprioceptive history (RMA's adaptation module,
Kumar et al. 2021; rsl_rl's ``EmpiricalNormalization``).

The student cannot measure friction, payload or motor strength; it sees how its own
joints answered its last commands. The encoder turns the last ``history_steps``
entries of (joint positions, velocities, actions) into a small latent, which the
policy MLP reads beside the present observation.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import torch
from stable_baselines3.common.torch_layers import BaseFeaturesExtractor
from torch import nn


class EmpiricalNormalization(nn.Module):
    """Running mean and variance as buffers (saved with the model, exported with the graph);
    updated only by :meth:`update`, so inference never changes them."""

    mean: torch.Tensor
    var: torch.Tensor
    count: torch.Tensor

    def __init__(self, size: int, epsilon: float = 1e-8, clip: float = 10.0) -> None:
        super().__init__()
        self.epsilon, self.clip = float(epsilon), float(clip)
        self.register_buffer("mean", torch.zeros(size))
        self.register_buffer("var", torch.ones(size))
        self.register_buffer("count", torch.zeros((), dtype=torch.float64))

    @torch.no_grad()
    def update(self, x: torch.Tensor) -> None:
        """Chan's parallel update with a batch ``[N, size]``."""
        n = float(x.shape[0])
        if n == 0:
            return
        mean, var = x.mean(0), x.var(0, unbiased=False)
        total = float(self.count) + n
        delta = mean - self.mean
        self.var.copy_((self.var * float(self.count) + var * n + delta**2 * float(self.count) * n / total) / total)
        self.mean.add_(delta * n / total)
        self.count.fill_(total)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.clamp((x - self.mean) / torch.sqrt(self.var + self.epsilon), -self.clip, self.clip)

    def statistics(self) -> tuple[np.ndarray, np.ndarray]:
        return self.mean.numpy().astype(np.float64), self.var.numpy().astype(np.float64)


class HistoryEncoder(BaseFeaturesExtractor):
    """Observation ``[B, obs_size (+ anything after it)]`` -> features ``[B, present + latent]``.

    Args:
        observation_space: The training env's space (the student's observation, then the
            privileged state the teacher reads: ignored here).
        obs_size: The student's observation size (present blocks, then ``history``).
        present_size: Entries before the history block.
        history_steps: Past control steps in the history block, newest first.
        latent: Encoder output size.
    """

    def __init__(self, observation_space: gym.spaces.Box, obs_size: int, present_size: int, history_steps: int,
                 latent: int = 32) -> None:
        super().__init__(observation_space, features_dim=present_size + latent)
        entry = (obs_size - present_size) // history_steps
        if entry * history_steps != obs_size - present_size or entry <= 0:
            raise ValueError(f"history of {obs_size - present_size} entries is not {history_steps} steps")
        self.obs_size, self.present_size, self.steps, self.entry = obs_size, present_size, history_steps, entry
        self.normalizer = EmpiricalNormalization(obs_size)
        channels = 32
        layers: list[nn.Module] = [nn.Conv1d(entry, channels, kernel_size=1), nn.ELU()]
        length = history_steps
        # Strided convolutions shrink the time axis (RMA: 50 steps -> 3 x 8 kernels); stop near 4 samples.
        while length >= 8:
            layers += [nn.Conv1d(channels, channels, kernel_size=4, stride=2, padding=1), nn.ELU()]
            length = (length + 2 - 4) // 2 + 1
        self.temporal = nn.Sequential(*layers, nn.Flatten(), nn.Linear(channels * length, latent), nn.ELU())

    def forward(self, observations: torch.Tensor) -> torch.Tensor:
        x = self.normalizer(observations[..., : self.obs_size])
        present = x[..., : self.present_size]
        history = x[..., self.present_size :].reshape(-1, self.steps, self.entry).transpose(1, 2)
        return torch.cat([present, self.temporal(history)], dim=-1)


def encoder_kwargs(obs_size: int, present_size: int, history_steps: int, latent: int) -> dict[str, Any]:
    """``policy_kwargs`` entries of a student with this encoder."""
    return {
        "features_extractor_class": HistoryEncoder,
        "features_extractor_kwargs": {"obs_size": obs_size, "present_size": present_size,
                                      "history_steps": history_steps, "latent": latent},
        "share_features_extractor": True,
    }
