"""Balanced frame collection (``collect_frames(balance=True)``): every caption gets its
share, so the last centimetres of a reach are not 1 % of the data."""

from __future__ import annotations

from collections import Counter

from sim2real.policies.rewards.captions import REACH_BINS
from sim2real.policies.rewards.dataset import collect_frames

TOUCHES = REACH_BINS[0][1]


def test_balanced_frames_give_every_caption_its_share():
    options = {"n_envs": 16, "size": 32, "camera": "wrist", "seed": 3}
    plain = Counter(collect_frames("ArmReach", 700, **options).captions)
    frames = collect_frames("ArmReach", 700, balance=True, **options)
    balanced = Counter(frames.captions)
    assert len(frames) == 700 and len(balanced) == 7
    # Without balancing the goal caption is a few frames (17 measured); with it, near its seventh.
    assert plain[TOUCHES] < 35 and balanced[TOUCHES] >= 60
    # No caption exceeds its seventh by more than what the first steps took, before every
    # caption had been seen (123 of 100 measured); without balancing the farthest is 40 %.
    assert max(balanced.values()) <= 700 // 7 + 32 < max(plain.values())
    # A touching frame is what it says: within 3 cm, and every success is one.
    assert all(c == TOUCHES for c, ok in zip(frames.captions, frames.success, strict=True) if ok)
