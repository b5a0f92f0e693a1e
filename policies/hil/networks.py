"""Networks of the HIL-SERL learner: observation encoder (a small CNN per camera or a
frozen pretrained ResNet-18 from a local weights file), DrQ random shift, tanh-Gaussian
actor, ensemble of LayerNorm critics, discrete gripper critic."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from sim2real.errors import Sim2RealError
from sim2real.policies.common.augment import random_shift


class SmallCNN(nn.Module):
    """Four 3x3 convolutions (DrQ's encoder, narrower), then a LayerNorm'd projection."""

    def __init__(self, image_size: int, latent_dim: int) -> None:
        super().__init__()
        self.convs = nn.Sequential(
            nn.Conv2d(3, 32, 3, stride=2), nn.ReLU(),
            nn.Conv2d(32, 32, 3, stride=2), nn.ReLU(),
            nn.Conv2d(32, 32, 3, stride=1), nn.ReLU(),
            nn.Conv2d(32, 32, 3, stride=1), nn.ReLU(),
            nn.Flatten(),
        )
        with torch.no_grad():
            n = self.convs(torch.zeros(1, 3, image_size, image_size)).shape[1]
        self.project = nn.Sequential(nn.Linear(n, latent_dim), nn.LayerNorm(latent_dim), nn.Tanh())

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        return self.project(self.convs(images))


class PretrainedBackbone(nn.Module):
    """Frozen torchvision ResNet-18 loaded from a local file; a trainable projection on top."""

    # Buffers (register_buffer): declared so they read as tensors, not ``Tensor | Module``.
    mean: torch.Tensor
    std: torch.Tensor

    def __init__(self, weights_path: str, latent_dim: int) -> None:
        super().__init__()
        from torchvision.models import resnet18

        net = resnet18(weights=None)
        try:
            state = torch.load(weights_path, map_location="cpu", weights_only=True)
        except (OSError, RuntimeError) as exc:
            raise Sim2RealError(f"cannot read backbone weights {weights_path!r}: {exc}") from exc
        try:
            missing, _ = net.load_state_dict(state, strict=False)
        except (RuntimeError, TypeError, AttributeError) as exc:
            raise Sim2RealError(f"{weights_path!r} is not a ResNet-18 state dict: {exc}") from exc
        if any(not k.startswith("fc.") for k in missing):
            raise Sim2RealError(f"{weights_path!r} is not a ResNet-18 state dict (missing {missing[:3]})")
        net.add_module("fc", nn.Identity())  # replaces the classifier (ResNet types fc as nn.Linear)
        self.backbone = net.eval().requires_grad_(False)
        self.register_buffer("mean", torch.tensor([0.485, 0.456, 0.406]).view(1, 3, 1, 1))
        self.register_buffer("std", torch.tensor([0.229, 0.224, 0.225]).view(1, 3, 1, 1))
        self.project = nn.Sequential(nn.Linear(512, latent_dim), nn.LayerNorm(latent_dim), nn.Tanh())

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            features = self.backbone((images - self.mean) / self.std)
        return self.project(features)


class ObservationEncoder(nn.Module):
    """Concatenates the state vector with one embedding per camera (shared by actor and critic)."""

    # Buffers (register_buffer): declared so they read as tensors, not ``Tensor | Module``.
    state_mean: torch.Tensor
    state_std: torch.Tensor
    state_fitted: torch.Tensor

    def __init__(self, state_dim: int, cameras: tuple[str, ...], image_size: int, latent_dim: int,
                 backbone_weights: str | None = None) -> None:
        super().__init__()
        self.cameras = cameras
        def make(cam: str) -> nn.Module:
            if backbone_weights:
                return PretrainedBackbone(backbone_weights, latent_dim)
            return SmallCNN(image_size, latent_dim)

        self.image_encoders = nn.ModuleDict({cam: make(cam) for cam in cameras})
        self.out_dim = state_dim + latent_dim * len(cameras)
        # Proprioception mixes radians, m/s and millimetre offsets: standardised with
        # statistics fitted once from the first data (they travel with the weights).
        self.register_buffer("state_mean", torch.zeros(state_dim))
        self.register_buffer("state_std", torch.ones(state_dim))
        self.register_buffer("state_fitted", torch.zeros((), dtype=torch.bool))

    def fit_state_normalization(self, states: torch.Tensor, min_std: float = 1e-3) -> None:
        self.state_mean.copy_(states.mean(0))
        self.state_std.copy_(states.std(0).clamp_min(min_std))
        self.state_fitted.fill_(True)

    def forward(self, obs: dict[str, torch.Tensor], augment_pad: int = 0) -> torch.Tensor:
        parts = [((obs["state"] - self.state_mean) / self.state_std).clamp(-10.0, 10.0)]
        for cam in self.cameras:
            images = obs[cam].float() / 255.0
            parts.append(self.image_encoders[cam](random_shift(images, augment_pad)))
        return torch.cat(parts, dim=-1)


def mlp(in_dim: int, hidden: tuple[int, ...], out_dim: int, layer_norm: bool) -> nn.Sequential:
    layers: list[nn.Module] = []
    for h in hidden:
        layers += [nn.Linear(in_dim, h), *([nn.LayerNorm(h)] if layer_norm else []), nn.ReLU()]
        in_dim = h
    layers.append(nn.Linear(in_dim, out_dim))
    return nn.Sequential(*layers)


class TanhGaussianActor(nn.Module):
    LOG_STD_MIN, LOG_STD_MAX = -5.0, 2.0

    def __init__(self, feature_dim: int, action_dim: int, hidden: tuple[int, ...]) -> None:
        super().__init__()
        self.net = mlp(feature_dim, hidden, 2 * action_dim, layer_norm=True)

    def forward(self, features: torch.Tensor, deterministic: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
        """Action in [-1, 1] and its log-probability."""
        mean, log_std = self.net(features).chunk(2, dim=-1)
        log_std = self.LOG_STD_MIN + 0.5 * (self.LOG_STD_MAX - self.LOG_STD_MIN) * (torch.tanh(log_std) + 1)
        std = log_std.exp()
        u = mean if deterministic else mean + std * torch.randn_like(mean)
        action = torch.tanh(u)
        log_prob = (-0.5 * ((u - mean) / std) ** 2 - log_std - 0.5 * math.log(2 * math.pi)).sum(-1)
        log_prob = log_prob - (2 * (math.log(2) - u - F.softplus(-2 * u))).sum(-1)
        return action, log_prob


class EnsembleCritic(nn.Module):
    """``num_critics`` independent Q-networks (LayerNorm MLPs) evaluated as one module."""

    def __init__(self, feature_dim: int, action_dim: int, hidden: tuple[int, ...], num_critics: int) -> None:
        super().__init__()
        self.critics = nn.ModuleList(
            [mlp(feature_dim + action_dim, hidden, 1, layer_norm=True) for _ in range(num_critics)]
        )

    def forward(self, features: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
        """Q-values ``[num_critics, B]``."""
        x = torch.cat([features, action], dim=-1)
        return torch.stack([q(x).squeeze(-1) for q in self.critics])


class GripperCritic(nn.Module):
    """Q-values of the three gripper commands (close / stay / open), double-headed."""

    ACTIONS = 3

    def __init__(self, feature_dim: int, hidden: tuple[int, ...]) -> None:
        super().__init__()
        self.heads = nn.ModuleList([mlp(feature_dim, hidden, self.ACTIONS, layer_norm=True) for _ in range(2)])

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        """``[2, B, 3]``."""
        return torch.stack([h(features) for h in self.heads])


def gripper_to_discrete(gripper: torch.Tensor) -> torch.Tensor:
    """Continuous gripper command in [-1, 1] -> 0 close, 1 stay, 2 open."""
    return (gripper > 0.5).long() * 2 + ((gripper >= -0.5) & (gripper <= 0.5)).long()


def discrete_to_gripper(index: torch.Tensor) -> torch.Tensor:
    return index.float() - 1.0
