"""Contrastive training of a small open_clip model on captioned simulator renders.

The captions come from a handful of sentences per task, so many frames in a
batch share a caption. Plain CLIP loss would treat those as negatives of each
other; here the image-to-text side is a softmax over the distinct captions and
the text-to-image side spreads its target evenly over every frame with that
caption. Batches are drawn balanced over captions (rare "touching" frames are
as frequent as "far" ones), and frames get DrQ-style random shifts.

The result is saved in open_clip's ``local-dir`` layout (``open_clip_config.json``
+ ``open_clip_model.safetensors``) plus ``sim2real_clip.json`` (tasks, camera,
image size, captions, held-out accuracy), which :class:`ClipRewardModel` loads.
"""

from __future__ import annotations

import datetime as _dt
import json
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
import torch.nn.functional as F

from sim2real.errors import ConfigError
from sim2real.policies.common.augment import random_shift
from sim2real.policies.rewards.clip_reward import ClipRewardModel, vlm_rm_reward
from sim2real.policies.rewards.clip_weights import TINY_MODEL, WEIGHT_FILE, load_open_clip, register_model_configs
from sim2real.policies.rewards.dataset import FrameSet

if TYPE_CHECKING:
    from typing import TypeAlias

    import open_clip

    ClipModel: TypeAlias = open_clip.CLIP | open_clip.CustomTextCLIP | open_clip.CoCa

METADATA_FILE = "sim2real_clip.json"


@dataclass
class FinetuneConfig:
    """Settings of one contrastive training run."""

    steps: int = 1500
    """Optimizer steps. ``0`` keeps the initial model (the random initialisation, or
    ``init``) unchanged: a control reward model with the same architecture, camera and
    frame size, to tell what an RL run owes to training the reward model."""
    batch_size: int = 128
    """Frames per batch."""
    learning_rate: float = 1e-3
    """AdamW peak step size (cosine decay to 5% after a 5% warm-up)."""
    weight_decay: float = 0.05
    """AdamW weight decay."""
    shift_pixels: int = 4
    """Largest random shift (pixels) of the DrQ augmentation (0: none)."""
    ordinal_smoothing: float = 1.0
    """Temperature (in caption ranks) of the soft targets of the image-to-caption loss:
    caption ``k`` gets weight ``exp(-|rank(own caption) - rank(k)| / T)``, ranks ordered by
    the mean progress of each caption's frames. Plain one-hot targets (``0``) order the
    captions arbitrarily in the embedding space, so a goal-baseline reward need not rise
    from "very far" to "far"; soft ordinal targets make image similarity fall off with
    the distance between bands. ``0``: one-hot."""
    progress_weight: float = 0.0
    """Weight of the progress ranking loss (0: off). For every pair of frames in a batch
    whose simulator progress differs by more than ``progress_margin``, the goal-baseline
    reward (goal: the caption of highest mean progress, baseline: the lowest, at
    ``progress_alpha``) of the frame nearer the goal should be higher:
    ``softplus(-(R_near - R_far) / PROGRESS_TEMPERATURE)``, averaged over pairs. The
    contrastive loss alone teaches which band a frame is in and leaves the reward flat
    within a band, where policies hovered; this teaches the order across all states the
    data shows, decoys and the policy's own states included (as LIV, GVL and Robometer
    train progress rather than similarity). One task per model."""
    progress_alpha: float = 0.5
    """Alpha of the reward the progress loss orders (the ``reward.alpha`` training uses)."""
    progress_margin: float = 0.1
    """Smallest progress difference of a ranked pair, in standard deviations of the
    training frames' progress (pairs closer than that are ties, not ranked)."""
    seed: int = 0
    """Seed of the initialisation, the batches and the augmentation."""
    model: str = TINY_MODEL
    """open_clip architecture trained from scratch when ``init`` is not given."""
    init: str | None = None
    """Local weights (folder or file) to fine-tune instead of training from scratch."""
    extra: dict[str, Any] = field(default_factory=dict)
    """Recorded in the metadata (tasks, camera, frame counts)."""


def balanced_indices(labels: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` indices, each caption equally likely, frames uniform within a caption."""
    counts = np.bincount(labels)
    weights = 1.0 / counts[labels]
    return rng.choice(len(labels), size=n, p=weights / weights.sum())


def ordinal_targets(progress: np.ndarray, labels: np.ndarray, n_captions: int, temperature: float) -> torch.Tensor:
    """``[C, C]`` soft targets: row ``c`` is the target distribution of a frame captioned
    ``c``, decaying with the distance in rank, captions ranked by their frames' mean progress."""
    if temperature <= 0:
        return torch.eye(n_captions)
    mean_progress = np.array([progress[labels == c].mean() if (labels == c).any() else 0.0 for c in range(n_captions)])
    rank = np.empty(n_captions)
    rank[np.argsort(mean_progress, kind="stable")] = np.arange(n_captions)
    weights = np.exp(-np.abs(rank[:, None] - rank[None, :]) / temperature)
    return torch.from_numpy(weights / weights.sum(axis=1, keepdims=True)).float()


def multi_positive_loss(
    image_emb: torch.Tensor,
    text_emb: torch.Tensor,
    labels: torch.Tensor,
    scale: torch.Tensor,
    targets: torch.Tensor | None = None,
) -> torch.Tensor:
    """Symmetric contrastive loss with captions shared by several frames; ``targets``
    (``[C, C]``, see :func:`ordinal_targets`) softens the image-to-caption targets."""
    logits = scale * image_emb @ text_emb.T  # [B, C]
    if targets is None:
        loss_image = F.cross_entropy(logits, labels)
    else:
        loss_image = -(targets[labels] * F.log_softmax(logits, dim=1)).sum(dim=1).mean()
    present = torch.unique(labels)
    target = (labels[None, :] == present[:, None]).float()  # [P, B]
    target = target / target.sum(dim=1, keepdim=True)
    log_p = F.log_softmax(logits.T[present], dim=1)  # over the batch's frames
    loss_text = -(target * log_p).sum(dim=1).mean()
    return 0.5 * (loss_image + loss_text)


PROGRESS_TEMPERATURE = 0.05
"""Reward difference (the reward spans about 0.5 from the farthest band to the goal) at
which a correctly ordered pair's ranking loss has fallen to ``softplus(-1)``."""


def progress_ranking_loss(reward: torch.Tensor, progress: torch.Tensor, margin: float) -> torch.Tensor:
    """Mean ``softplus(-(R_i - R_j) / T)`` over the pairs with ``progress_i > progress_j + margin``
    (zero when the batch has no such pair)."""
    ahead = progress[:, None] > progress[None, :] + margin  # [B, B]: i nearer the goal than j
    if not bool(ahead.any()):
        return reward.sum() * 0.0
    gap = (reward[:, None] - reward[None, :])[ahead]
    return F.softplus(-gap / PROGRESS_TEMPERATURE).mean()


def extreme_captions(progress: np.ndarray, labels: np.ndarray) -> tuple[int, int]:
    """Indices of the captions whose frames have the highest and the lowest mean progress:
    the goal and baseline sentences of the task's own vocabulary."""
    present = np.unique(labels)
    means = np.array([progress[labels == c].mean() for c in present])
    return int(present[means.argmax()]), int(present[means.argmin()])


def caption_accuracy(reward_model: ClipRewardModel, data: FrameSet, captions: list[str]) -> float | None:
    """Share of frames whose most similar caption (among ``captions``) is their own; None
    without frames (a run with nothing held out), not a NaN in the model's metadata."""
    if len(data) == 0:
        return None
    text = reward_model.embed_text(captions)
    image = reward_model.embed_images(data.frames)
    predicted = (image @ text.T).argmax(dim=1).cpu().numpy()
    truth = np.array([captions.index(c) for c in data.captions])
    return float((predicted == truth).mean())


def _check_training_setup(train: FrameSet, cfg: FinetuneConfig) -> None:
    """Reject an empty training set and settings out of range."""
    if len(train) == 0:
        raise ConfigError("frames", "no training frames")
    if cfg.steps < 0 or cfg.batch_size < 2:
        raise ConfigError("finetune", f"steps must be >= 0 and batch_size >= 2, got {cfg.steps}, {cfg.batch_size}")
    if not np.isfinite(cfg.ordinal_smoothing) or cfg.ordinal_smoothing < 0:
        raise ConfigError("ordinal_smoothing", f"must be a finite number >= 0, got {cfg.ordinal_smoothing}")
    for name in ("progress_weight", "progress_margin"):
        value = getattr(cfg, name)
        if not np.isfinite(value) or value < 0:
            raise ConfigError(name, f"must be a finite number >= 0, got {value}")
    if not 0.0 <= cfg.progress_alpha <= 1.0:
        raise ConfigError("progress_alpha", f"must be in [0, 1], got {cfg.progress_alpha}")


def _initial_model(cfg: FinetuneConfig) -> tuple[ClipModel, Any]:
    """``(model, tokenizer)`` to train, in train mode: ``cfg.init``'s weights, else a
    random ``cfg.model`` seeded by ``cfg.seed``."""
    import open_clip

    torch.manual_seed(cfg.seed)
    register_model_configs()
    if cfg.init is not None:
        model, tokenizer, _ = load_open_clip(cfg.model, cfg.init, torch.device("cpu"))
    else:
        model = open_clip.create_model(cfg.model, pretrained=None)
        tokenizer = open_clip.get_tokenizer(cfg.model)
    # create_model is annotated as returning a bare nn.Module; it builds one of these.
    if not isinstance(model, (open_clip.CLIP, open_clip.CustomTextCLIP, open_clip.CoCa)):
        raise ConfigError("model", f"{cfg.model!r} built a {type(model).__name__}, not an open_clip CLIP model")
    model.train()
    return model, tokenizer


def _optimizer(model: ClipModel, cfg: FinetuneConfig) -> tuple[torch.optim.AdamW, torch.optim.lr_scheduler.LambdaLR]:
    """AdamW (no weight decay on biases, gains and the logit scale) and its schedule: a 5%
    linear warm-up, then cosine decay to 5% of ``cfg.learning_rate``."""
    decay = [p for n, p in model.named_parameters() if p.ndim >= 2 and "logit_scale" not in n]
    no_decay = [p for n, p in model.named_parameters() if p.ndim < 2 or "logit_scale" in n]
    opt = torch.optim.AdamW(
        [{"params": decay, "weight_decay": cfg.weight_decay}, {"params": no_decay, "weight_decay": 0.0}],
        lr=cfg.learning_rate,
    )
    warmup = max(1, cfg.steps // 20)

    def lr_at(step: int) -> float:
        if step < warmup:
            return (step + 1) / warmup
        progress = (step - warmup) / max(1, cfg.steps - warmup)
        return 0.05 + 0.95 * 0.5 * (1 + np.cos(np.pi * progress))

    return opt, torch.optim.lr_scheduler.LambdaLR(opt, lr_at)


def _optimizer_step(
    model: ClipModel, opt: torch.optim.Optimizer, sched: torch.optim.lr_scheduler.LRScheduler, loss: torch.Tensor
) -> None:
    """Step on ``loss`` with the gradient norm clipped to 1, then keep the logit scale in [1, 100]."""
    opt.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    sched.step()
    with torch.no_grad():
        model.logit_scale.clamp_(0, np.log(100))


def train_clip(
    train: FrameSet, cfg: FinetuneConfig, log: Any = None, start: tuple[Any, Any] | None = None
) -> tuple[Any, Any, dict[str, Any]]:
    """Train (or fine-tune) on ``train``; returns ``(model, tokenizer, stats)``. ``start``:
    a ``(model, tokenizer)`` in memory to go on training in place (``cfg.init`` and
    ``cfg.model`` are then unused)."""
    _check_training_setup(train, cfg)
    if start is None:
        model, tokenizer = _initial_model(cfg)
    else:
        model, tokenizer = start
        model.train()
    captions = sorted(set(train.captions))
    labels_np = np.array([captions.index(c) for c in train.captions])
    targets = ordinal_targets(train.progress, labels_np, len(captions), cfg.ordinal_smoothing)
    goal_caption, baseline_caption = extreme_captions(train.progress, labels_np)
    progress_all = torch.from_numpy(np.asarray(train.progress, dtype=np.float32))
    margin = cfg.progress_margin * float(np.std(train.progress))
    tokens = tokenizer(captions)
    probe = ClipRewardModel(model, tokenizer, captions[0], captions[-1], alpha=0.0)  # only for preprocess
    frames = torch.from_numpy(train.frames)
    rng = np.random.default_rng(cfg.seed)
    gen = torch.Generator().manual_seed(cfg.seed)
    opt, sched = _optimizer(model, cfg)
    t0, losses = time.perf_counter(), []
    for step in range(cfg.steps):
        idx = balanced_indices(labels_np, cfg.batch_size, rng)
        x = random_shift(probe.preprocess(frames[idx].numpy()), cfg.shift_pixels, gen)
        image = F.normalize(model.encode_image(x), dim=-1)
        text = F.normalize(model.encode_text(tokens), dim=-1)
        loss = multi_positive_loss(image, text, torch.from_numpy(labels_np[idx]), model.logit_scale.exp(), targets)
        if cfg.progress_weight > 0:
            reward = vlm_rm_reward(image, text[goal_caption], text[baseline_caption], cfg.progress_alpha)
            loss = loss + cfg.progress_weight * progress_ranking_loss(reward, progress_all[idx], margin)
        if not torch.isfinite(loss):
            raise FloatingPointError(f"contrastive loss became {loss.item()} at step {step}")
        _optimizer_step(model, opt, sched, loss)
        losses.append(loss.item())
        if log is not None and (step % 100 == 0 or step == cfg.steps - 1):
            log(f"step {step + 1}/{cfg.steps} loss {np.mean(losses[-100:]):.3f} ({time.perf_counter() - t0:.0f} s)")
    model.eval()
    stats = {
        "steps": cfg.steps,
        "final_loss": float(np.mean(losses[-50:])) if losses else None,
        "seconds": round(time.perf_counter() - t0, 1),
        "captions": captions,
    }
    return model, tokenizer, stats


def model_config_of(model_name: str) -> dict[str, Any]:
    import open_clip

    register_model_configs()
    cfg = open_clip.get_model_config(model_name)
    if cfg is None:
        raise ConfigError("model", f"unknown open_clip model {model_name!r}")
    return cfg


def model_image_size(model_cfg: dict[str, Any]) -> int:
    """The input side in pixels of an open_clip model config (``image_size`` is an int or ``[h, w]``)."""
    size = model_cfg["vision_cfg"]["image_size"]
    return int(size if isinstance(size, int) else size[0])


def save_model(model: Any, out: str | Path, model_cfg: dict[str, Any], metadata: dict[str, Any]) -> Path:
    """Write the ``local-dir`` folder; every file atomically (temp file, then rename)."""
    from safetensors.torch import save

    from sim2real.policies.common.atomic import write_bytes, write_json

    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    state = {k: v.detach().contiguous().cpu() for k, v in model.state_dict().items()}
    write_bytes(folder / WEIGHT_FILE, save(state))
    preprocess = dict(getattr(model.visual, "preprocess_cfg", {}) or {})
    write_json(folder / "open_clip_config.json", {"model_cfg": model_cfg, "preprocess_cfg": preprocess})
    stamp = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    write_json(folder / METADATA_FILE, {"schema": "sim2real.clip/1", "created": stamp, **metadata})
    return folder


def read_metadata(folder: str | Path) -> dict[str, Any]:
    """``sim2real_clip.json`` of a folder written by :func:`save_model` (empty if absent)."""
    path = Path(folder) / METADATA_FILE
    if not path.is_file():
        return {}
    try:
        return json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise ConfigError("clip_weights", f"{path} is not valid JSON: {exc}") from None


def describe_config(cfg: FinetuneConfig) -> dict[str, Any]:
    return {k: v for k, v in asdict(cfg).items() if k != "extra"}
