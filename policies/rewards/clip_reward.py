"""CLIP reward model (VLM-RM, Rocamonde et al., ICLR 2024).

The reward of a rendered frame with unit image embedding ``x`` is

    R(x) = 1 - 1/2 || (x - g) P ||^2,    P = alpha d d^T / ||d||^2 + (1 - alpha) I,   d = g - b

where ``g`` and ``b`` are the goal and baseline embeddings: the mean of the
unit-normalised embeddings of one or several prompts each, renormalised.
``alpha = 0`` is plain CLIP similarity (``R = x . g`` for unit vectors);
``alpha = 1`` keeps only the component of ``x - g`` along the baseline-to-goal
direction, so image content that the two prompts share stops mattering.

Weights are loaded with open_clip from a local file or folder (see
:func:`load_open_clip`); nothing is downloaded unless an open_clip pretrained
tag is named explicitly.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from sim2real.errors import ConfigError

# Imports open_clip, which must come before any frame is rendered (see clip_weights.py).
from sim2real.policies.rewards.clip_weights import load_open_clip, select_device
from sim2real.policies.rewards.onnx_tower import OnnxImageTower, resolve_runtime


def projection(goal: torch.Tensor, baseline: torch.Tensor, alpha: float) -> torch.Tensor:
    """``P = alpha d d^T / ||d||^2 + (1 - alpha) I`` with ``d = goal - baseline``."""
    d = goal - baseline
    norm2 = float((d @ d).detach())
    if norm2 < 1e-12 and alpha > 0:
        raise ConfigError(
            "reward.baseline", "goal and baseline prompts embed to the same vector; choose a baseline that differs"
        )
    eye = torch.eye(goal.shape[0], dtype=goal.dtype, device=goal.device)
    if alpha == 0:
        return eye
    return alpha * torch.outer(d, d) / norm2 + (1.0 - alpha) * eye


def vlm_rm_reward(x: torch.Tensor, goal: torch.Tensor, baseline: torch.Tensor, alpha: float) -> torch.Tensor:
    """``1 - 1/2 ||(x - g) P||^2`` for each row of ``x`` (all inputs unit-normalised)."""
    p = projection(goal, baseline, alpha)
    diff = (x - goal) @ p
    return 1.0 - 0.5 * (diff * diff).sum(dim=-1)


def check_alpha(alpha: float) -> float:
    alpha = float(alpha)
    if not math.isfinite(alpha) or not 0.0 <= alpha <= 1.0:
        raise ConfigError("reward.alpha", f"must be in [0, 1], got {alpha}")
    return alpha


def check_prompts(prompts: Sequence[str] | str, field: str) -> list[str]:
    items = [prompts] if isinstance(prompts, str) else list(prompts)
    if not items or any(not isinstance(p, str) or not p.strip() for p in items):
        raise ConfigError(field, f"needs one or more non-empty prompts, got {prompts!r}")
    return [p.strip() for p in items]


def check_frames(frames: np.ndarray) -> np.ndarray:
    """Frames must be ``uint8 [B, H, W, 3]`` as the renderer writes them."""
    if not isinstance(frames, np.ndarray) or frames.ndim != 4 or frames.shape[-1] != 3 or frames.dtype != np.uint8:
        shape = getattr(frames, "shape", None)
        dtype = getattr(frames, "dtype", type(frames).__name__)
        raise ValueError(f"frames must be uint8 [B, H, W, 3], got {dtype} {shape}")
    return frames


class ClipRewardModel:
    """VLM-RM reward of rendered frames.

    Args:
        model: An open_clip ``CLIP`` model (eval mode, on ``device``).
        tokenizer: Its tokenizer.
        goal_prompts: One or several sentences describing the goal.
        baseline_prompts: Sentences describing the scene without the goal.
        alpha: Goal-baseline projection strength in [0, 1].
        batch_size: Frames embedded per forward pass.
        runtime: What runs the image tower: ``torch``, or ``onnxruntime`` (CPU only;
            ``onnx_tower.py``), or ``auto`` (ONNX Runtime on the CPU, torch on a GPU).
    """

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        goal_prompts: Sequence[str] | str,
        baseline_prompts: Sequence[str] | str,
        alpha: float = 0.5,
        batch_size: int = 256,
        name: str = "",
        runtime: str = "torch",
    ) -> None:
        self.model = model
        self.tokenizer = tokenizer
        self.name = name
        self.device = next(model.parameters()).device
        self.dtype = next(model.parameters()).dtype
        self.batch_size = int(batch_size)
        if self.batch_size < 1:
            raise ConfigError("reward.batch_size", f"must be >= 1, got {batch_size}")
        cfg = getattr(model.visual, "preprocess_cfg", {}) or {}
        size = cfg.get("size", model.visual.image_size)
        self.image_size = tuple(size) if isinstance(size, (list, tuple)) else (int(size), int(size))
        self.mean = torch.tensor(cfg.get("mean", (0.48145466, 0.4578275, 0.40821073)), device=self.device).view(
            1, 3, 1, 1
        )
        self.std = torch.tensor(cfg.get("std", (0.26862954, 0.26130258, 0.27577711)), device=self.device).view(
            1, 3, 1, 1
        )
        self.interpolation = str(cfg.get("interpolation", "bicubic"))
        try:
            self.runtime = resolve_runtime(runtime, self.device)
        except ValueError as exc:
            raise ConfigError("reward.runtime", str(exc)) from exc
        if self.runtime == "onnxruntime" and (self.device.type != "cpu" or self.dtype != torch.float32):
            raise ConfigError("reward.runtime", f"onnxruntime runs float32 models on the CPU, not {self.device}")
        self._onnx = OnnxImageTower(model.visual, self.image_size) if self.runtime == "onnxruntime" else None
        self._text_cache: dict[str, torch.Tensor] = {}
        self.alpha = check_alpha(alpha)
        self.set_prompts(goal_prompts, baseline_prompts)

    @classmethod
    def load(
        cls,
        model_name: str | None,
        weights: str | Path | None,
        goal_prompts: Sequence[str] | str,
        baseline_prompts: Sequence[str] | str,
        alpha: float = 0.5,
        device: str = "auto",
        batch_size: int = 256,
        runtime: str = "auto",
    ) -> ClipRewardModel:
        model, tokenizer, name = load_open_clip(model_name, weights, select_device(device))
        return cls(model, tokenizer, goal_prompts, baseline_prompts, alpha, batch_size, name=name, runtime=runtime)

    # -- text ---------------------------------------------------------------
    def set_prompts(self, goal_prompts: Sequence[str] | str, baseline_prompts: Sequence[str] | str) -> None:
        self.goal_prompts = check_prompts(goal_prompts, "reward.goal")
        self.baseline_prompts = check_prompts(baseline_prompts, "reward.baseline")
        self.goal = self.prompt_embedding(self.goal_prompts)
        self.baseline = self.prompt_embedding(self.baseline_prompts)
        self._projection = projection(self.goal, self.baseline, self.alpha)

    def refresh(self) -> None:
        """Embed the prompts again (and export the image tower again for ONNX Runtime)
        after the model's weights changed (online refinement)."""
        if self._onnx is not None:
            self._onnx.update(self.model.visual)
        self._text_cache.clear()
        self.set_prompts(self.goal_prompts, self.baseline_prompts)

    def set_alpha(self, alpha: float) -> None:
        self.alpha = check_alpha(alpha)
        self._projection = projection(self.goal, self.baseline, self.alpha)

    @torch.no_grad()
    def embed_text(self, prompts: Sequence[str]) -> torch.Tensor:
        """Unit embeddings ``[N, D]`` (float32), cached per sentence."""
        missing = [p for p in dict.fromkeys(prompts) if p not in self._text_cache]
        if missing:
            tokens = self.tokenizer(missing).to(self.device)
            emb = self.model.encode_text(tokens).float()
            for p, e in zip(missing, F.normalize(emb, dim=-1)):
                self._text_cache[p] = e
        return torch.stack([self._text_cache[p] for p in prompts])

    def prompt_embedding(self, prompts: Sequence[str]) -> torch.Tensor:
        """Mean of the prompts' unit embeddings, renormalised (VLM-RM)."""
        return F.normalize(self.embed_text(prompts).mean(dim=0), dim=-1)

    # -- images -------------------------------------------------------------
    def preprocess(self, frames: np.ndarray) -> torch.Tensor:
        """open_clip's eval transform (resize the shorter side, centre crop, normalise),
        done on the whole batch as tensors instead of one PIL image at a time."""
        from torchvision.transforms import InterpolationMode
        from torchvision.transforms.v2 import functional as TF

        x = torch.from_numpy(check_frames(frames)).to(self.device).permute(0, 3, 1, 2).float() / 255.0
        th, tw = self.image_size
        mode = self.interpolation if self.interpolation in ("bilinear", "bicubic", "nearest") else "bicubic"
        if min(x.shape[-2:]) != max(th, tw):
            # Resize(int): the shorter side to the target, as open_clip's eval transform.
            x = TF.resize(x, [max(th, tw)], interpolation=InterpolationMode(mode), antialias=mode != "nearest")
            x = x.clamp(0.0, 1.0)  # bicubic overshoots; uint8 images would be clamped too
        x = TF.center_crop(x, [th, tw])
        return ((x - self.mean) / self.std).to(self.dtype)

    @torch.no_grad()
    def embed_images(self, frames: np.ndarray) -> torch.Tensor:
        """Unit image embeddings ``[B, D]`` (float32), ``batch_size`` frames per pass."""
        check_frames(frames)
        out = []
        for start in range(0, len(frames), self.batch_size):
            pixels = self.preprocess(frames[start : start + self.batch_size])
            emb = (self._onnx(pixels) if self._onnx is not None else self.model.encode_image(pixels)).float()
            out.append(F.normalize(emb, dim=-1))
        if not out:
            return torch.zeros((0, self.goal.shape[0]), device=self.device)
        return torch.cat(out)

    def reward_from_embeddings(self, x: torch.Tensor) -> np.ndarray:
        diff = (x - self.goal) @ self._projection
        reward = (1.0 - 0.5 * (diff * diff).sum(dim=-1)).cpu().numpy().astype(np.float64)
        if not np.all(np.isfinite(reward)):
            raise FloatingPointError("the CLIP reward is not finite: the model produced NaN or inf embeddings")
        return reward

    def __call__(self, frames: np.ndarray) -> np.ndarray:
        """Rewards ``[B]`` (float64) of ``uint8 [B, H, W, 3]`` frames."""
        return self.reward_from_embeddings(self.embed_images(frames))

    def describe(self) -> dict[str, Any]:
        return {
            "model": self.name,
            "goal": self.goal_prompts,
            "baseline": self.baseline_prompts,
            "alpha": self.alpha,
            "image_size": list(self.image_size),
            "device": str(self.device),
            "dtype": str(self.dtype).replace("torch.", ""),
            "runtime": self.runtime,
        }
