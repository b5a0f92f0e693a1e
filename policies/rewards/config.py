"""``reward:`` block of a training config: the task's own reward (default) or a
CLIP reward of rendered frames (VLM-RM). Plain dataclass, no heavy imports, so
``policies/config.py`` can use it without loading open_clip."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from sim2real.errors import ConfigError

REWARD_SOURCES = ("task", "clip")
INFERENCE_MODES = ("inline", "process")  # policies/rewards/offloop.py
RUNTIMES = ("auto", "torch", "onnxruntime")  # policies/rewards/onnx_tower.py


@dataclass
class RefineConfig:
    """Refining the reward model on the states of the policy being trained
    (``policies/rewards/refine.py``)."""

    every: int = 0
    """Env steps (summed over envs) between refinement rounds (0: never refine)."""
    frames: int = 4000
    """Policy frames kept for refinement: a uniform reservoir over all frames rewarded so far."""
    anchor_frames: int = 2000
    """Scripted frames (with hard-negative decoys) rendered once at the start and trained
    on in every round next to the policy's, so the model keeps what it knew."""
    steps: int = 100
    """Optimizer steps per round."""
    batch_size: int = 96
    """Frames per optimizer step."""
    learning_rate: float = 3e-4
    """AdamW peak step size of a round (cosine decay within the round)."""
    progress_weight: float = 1.0
    """Weight of the progress ranking loss in a round (``finetune-clip --progress-weight``)."""
    relabel: bool = True
    """SAC/TD3: keep each transition's frame in the replay buffer and recompute every
    stored reward with the refined model after each round (``policies/rewards/relabel.py``);
    off, stored rewards keep the old model's values."""

    def validate(self) -> None:
        if self.every < 0:
            raise ConfigError("reward.refine.every", f"must be >= 0, got {self.every}")
        if self.every == 0:
            return
        for name in ("frames", "steps", "batch_size"):
            if getattr(self, name) < 2:
                raise ConfigError(f"reward.refine.{name}", f"must be >= 2, got {getattr(self, name)}")
        if self.anchor_frames < 0:
            raise ConfigError("reward.refine.anchor_frames", f"must be >= 0, got {self.anchor_frames}")
        for name in ("learning_rate", "progress_weight"):
            value = getattr(self, name)
            if not math.isfinite(value) or value < 0:
                raise ConfigError(f"reward.refine.{name}", f"must be a finite number >= 0, got {value}")


@dataclass
class RewardConfig:
    """What the policy is trained on. The task's own reward and success are always
    what evaluation reports."""

    source: str = "task"
    """``task``: the task's reward. ``clip``: the CLIP reward of rendered frames."""
    goal: list[str] = field(default_factory=list)
    """Goal prompts (one or several, averaged after normalisation)."""
    baseline: list[str] = field(default_factory=list)
    """Baseline prompts: the scene without the goal (one or several)."""
    alpha: float = 0.5
    """Goal-baseline projection strength in [0, 1] (0: plain CLIP similarity)."""
    clip_model: str | None = None
    """open_clip architecture of a weight *file* (a folder names its own)."""
    clip_weights: str | None = None
    """Local weights: a folder written by ``sim2real reward finetune-clip`` (or any
    open_clip ``local-dir`` folder), or a weight file with ``clip_model``."""
    ensemble: list[str] = field(default_factory=list)
    """More weights (folders or files of the same architecture), each an ensemble member
    next to ``clip_weights``: the reward is then the members' mean minus ``lcb`` times
    their spread, which keeps the policy where the models agree (``policies/rewards/ensemble.py``)."""
    lcb: float = 1.0
    """``k`` of the ensemble's lower confidence bound ``mean - k * std`` (0: the mean);
    unused without ``ensemble``."""
    refine: RefineConfig = field(default_factory=RefineConfig)
    """Refinement of the reward model on the policy's own states during training (off by default)."""
    camera: str | None = None
    """Camera rendered for the reward (``null``: the camera the model was trained on,
    else the arm's wrist camera or the task's camera)."""
    image_size: int | None = None
    """Rendered frame size in pixels (``null``: the model's training size, else 64)."""
    shift: float = -1.0
    """Added to every CLIP reward. VLM-RM's reward is positive; with episodes that end
    on success a positive reward per step teaches the policy to avoid success."""
    batch_size: int = 256
    """Frames per forward pass of the reward model."""
    device: str = "auto"
    """Device of the reward model: ``auto`` (GPU if present, half precision), ``cpu``, ``cuda``."""
    runtime: str = "auto"
    """What runs the image tower: ``auto`` (ONNX Runtime on the CPU, torch on a GPU),
    ``torch`` or ``onnxruntime`` (``policies/rewards/onnx_tower.py``)."""
    inference: str = "inline"
    """Where the reward model runs: ``inline`` on the rollout thread after all frames are
    rendered, or ``process``: off the loop, in its own process, embedding one chunk of a
    step's frames while the next is rendered (needs a free core to gain anything)."""
    chunks: int = 2
    """Pieces each step's frames are sent to the reward process in (``inference: process``)."""

    def validate(self) -> None:
        if self.source not in REWARD_SOURCES:
            raise ConfigError("reward.source", f"must be one of {list(REWARD_SOURCES)}, got {self.source!r}")
        if self.source == "task":
            return
        if not self.goal or any(not str(p).strip() for p in self.goal):
            raise ConfigError("reward.goal", 'a CLIP reward needs at least one goal prompt (--reward "clip:...")')
        if not self.baseline or any(not str(p).strip() for p in self.baseline):
            raise ConfigError("reward.baseline", 'a CLIP reward needs at least one baseline prompt (--baseline "...")')
        if not math.isfinite(self.alpha) or not 0.0 <= self.alpha <= 1.0:
            raise ConfigError("reward.alpha", f"must be in [0, 1], got {self.alpha}")
        if not self.clip_weights:
            raise ConfigError(
                "reward.clip_weights",
                "a CLIP reward needs local weights (--clip-weights): train them with `sim2real reward finetune-clip "
                "TASK --out models/clip-TASK`, or bring open_clip weights (docs/vlm_rewards.md)",
            )
        if not math.isfinite(self.lcb) or self.lcb < 0:
            raise ConfigError("reward.lcb", f"must be a finite number >= 0, got {self.lcb}")
        if any(not str(w).strip() for w in self.ensemble):
            raise ConfigError("reward.ensemble", "an ensemble member needs a weights path")
        self.refine.validate()
        if self.refine.every and self.ensemble:
            raise ConfigError("reward.refine", "refines one reward model; an ensemble's members are not refined")
        if not math.isfinite(self.shift):
            raise ConfigError("reward.shift", f"must be finite, got {self.shift}")
        if self.image_size is not None and not 16 <= self.image_size <= 1024:
            raise ConfigError("reward.image_size", f"must be in [16, 1024], got {self.image_size}")
        if self.batch_size < 1:
            raise ConfigError("reward.batch_size", f"must be >= 1, got {self.batch_size}")
        if self.runtime not in RUNTIMES:
            raise ConfigError("reward.runtime", f"must be one of {list(RUNTIMES)}, got {self.runtime!r}")
        if self.inference not in INFERENCE_MODES:
            raise ConfigError("reward.inference", f"must be one of {list(INFERENCE_MODES)}, got {self.inference!r}")
        if self.chunks < 1:
            raise ConfigError("reward.chunks", f"must be >= 1, got {self.chunks}")
