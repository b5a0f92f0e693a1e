"""The reward classifier trains on a tiny labelled dataset and reports held-out precision/recall."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from sim2real.errors import Sim2RealError
from sim2real.policies.hil.classifier import (
    LabelledFrames,
    SuccessDetector,
    precision_recall,
    save_classifier,
    train_classifier,
)


def tiny_dataset(episodes: int = 8, length: int = 12, seed: int = 0) -> LabelledFrames:
    """Noisy frames; the success frames (last 3 of each episode) show a bright square low in
    the image, as a peg in its hole would appear to a wrist camera."""
    rng = np.random.default_rng(seed)
    n = episodes * length
    frames = rng.integers(0, 120, (n, 3, 32, 32), dtype=np.uint8)
    labels = np.tile(np.arange(length) >= length - 3, episodes)
    for i in np.flatnonzero(labels):
        y, x = rng.integers(18, 24), rng.integers(8, 20)
        frames[i, :, y:y + 6, x:x + 6] = 250
    return LabelledFrames({"wrist": frames}, labels, np.repeat(np.arange(episodes), length))


def test_classifier_trains_on_a_tiny_dataset(tmp_path: Path) -> None:
    torch.set_num_threads(1)
    model, report = train_classifier(tiny_dataset(), steps=60, batch_size=32, threshold=0.5, lr=1e-3)
    held = report["held_out"]
    assert report["held_out_episodes"] == 2 and held["frames"] == 24 and held["positives"] == 6
    assert held["precision"] >= 0.8 and held["recall"] >= 0.8
    save_classifier(model, tmp_path / "clf.pt", threshold=0.5)
    detector = SuccessDetector(tmp_path / "clf.pt")
    data = tiny_dataset(episodes=1, seed=5)
    votes = [detector({"wrist": data.frames["wrist"][i], "state": np.zeros(3)}) for i in range(12)]
    assert sum(votes[-3:]) >= 2 and sum(votes[:9]) <= 1
    with pytest.raises(Sim2RealError):
        detector({"front": data.frames["wrist"][0]})


def test_classifier_needs_both_labels_and_a_valid_file(tmp_path: Path) -> None:
    data = tiny_dataset()
    data.labels[:] = False
    with pytest.raises(Sim2RealError, match="both labels"):
        train_classifier(data, steps=1)
    (tmp_path / "bad.pt").write_bytes(b"nope")
    with pytest.raises(Sim2RealError):
        SuccessDetector(tmp_path / "bad.pt")


def test_precision_recall() -> None:
    predicted = np.array([1, 1, 0, 0, 1], bool)
    labels = np.array([1, 0, 1, 0, 1], bool)
    out = precision_recall(predicted, labels)
    assert out["precision"] == pytest.approx(2 / 3) and out["recall"] == pytest.approx(2 / 3)
