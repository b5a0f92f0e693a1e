"""The progress objective of reward-model training (issue 24): a pairwise ranking loss
that orders the goal-baseline reward by the simulator's progress, within caption bands too."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from sim2real.errors import ConfigError
from sim2real.policies.rewards.clip_reward import ClipRewardModel
from sim2real.policies.rewards.dataset import FrameSet
from sim2real.policies.rewards.finetune import (
    PROGRESS_TEMPERATURE,
    FinetuneConfig,
    extreme_captions,
    progress_ranking_loss,
    train_clip,
)
from sim2real.policies.rewards.quality import spearman, value_order_correlation


def test_ranking_loss_counts_only_pairs_ordered_by_more_than_the_margin():
    reward = torch.tensor([0.9, 0.1, 0.5])
    progress = torch.tensor([2.0, 0.0, 1.95])
    # Pairs with progress_i > progress_j + 0.1: (0, 1) and (2, 1); (0, 2) is a tie.
    expected = (np.log1p(np.exp(-0.8 / PROGRESS_TEMPERATURE)) + np.log1p(np.exp(-0.4 / PROGRESS_TEMPERATURE))) / 2
    assert progress_ranking_loss(reward, progress, 0.1).item() == pytest.approx(expected, rel=1e-5)
    # The wrong order costs more than the right one, and no pair at all costs nothing.
    wrong = torch.tensor([0.1, 0.9, 0.5])  # the farthest frame scored highest
    assert progress_ranking_loss(wrong, progress, 0.1) > 10 * progress_ranking_loss(reward, progress, 0.1)
    flat = torch.tensor([1.0, 1.0, 1.0], requires_grad=True)
    zero = progress_ranking_loss(flat, torch.zeros(3), 0.1)
    assert zero.item() == 0.0 and zero.requires_grad


def test_extreme_captions_are_chosen_by_mean_progress_not_by_name():
    labels = np.array([0, 0, 1, 2, 2])
    progress = np.array([1.0, 2.0, -3.0, 5.0, 4.0])
    assert extreme_captions(progress, labels) == (2, 1)


def test_bad_progress_settings_are_refused(micro_model_name):
    data = banded_frames(16, seed=0)
    for field, bad in (("progress_weight", -1.0), ("progress_margin", float("nan")), ("progress_alpha", 1.5)):
        cfg = FinetuneConfig(steps=1, batch_size=8, model=micro_model_name)
        setattr(cfg, field, bad)
        with pytest.raises(ConfigError, match=field):
            train_clip(data, cfg)


def banded_frames(n: int, seed: int, levels: int = 6) -> FrameSet:
    """A green square growing with the level (the goal at the top level), captioned in
    only two bands (levels 0-2 "far", 3-5 "near"): captions alone say nothing of the
    order inside a band. Episodes climb the levels in order."""
    rng = np.random.default_rng(seed)
    level = np.tile(np.arange(levels), n // levels + 1)[:n]
    frames = np.full((n, 32, 32, 3), 90, dtype=np.uint8)
    for i, k in enumerate(level):
        half = 2 * int(k) + 1
        cy, cx = rng.integers(13, 19, 2)
        frames[i, max(cy - half, 0) : cy + half, max(cx - half, 0) : cx + half] = (40, 200, 60)
    frames = np.clip(frames.astype(int) + rng.integers(0, 20, frames.shape), 0, 255).astype(np.uint8)
    captions = ["the square is near" if k >= levels // 2 else "the square is far" for k in level]
    return FrameSet(frames, captions, level == levels - 1, level.astype(float),
                    np.arange(n) // levels, np.arange(n) % levels)


def within_band_order(reward: np.ndarray, data: FrameSet) -> float:
    """Mean Spearman correlation of reward and level inside each caption band."""
    out = []
    for band in set(data.captions):
        mask = np.array([c == band for c in data.captions])
        out.append(spearman(reward[mask], data.progress[mask]) or 0.0)
    return float(np.mean(out))


@pytest.mark.heavy
def test_the_progress_objective_orders_the_reward_inside_caption_bands(micro_model_name):
    train, held = banded_frames(480, seed=0), banded_frames(300, seed=1)
    order = {}
    for weight in (0.0, 1.0):
        cfg = FinetuneConfig(steps=150, batch_size=48, learning_rate=3e-3, model=micro_model_name,
                             shift_pixels=1, progress_weight=weight)
        model, tokenizer, _ = train_clip(train, cfg)
        reward = ClipRewardModel(model, tokenizer, "the square is near", "the square is far", alpha=0.5)
        r = reward(held.frames)
        voc = value_order_correlation(r, held.episode, held.step, held.success).mean
        order[weight] = (within_band_order(r, held), voc)
    assert order[1.0][0] > 0.8, order  # the order inside a band, which captions never taught
    assert order[1.0][0] > order[0.0][0] + 0.2, order
    assert order[1.0][1] > 0.9, order
