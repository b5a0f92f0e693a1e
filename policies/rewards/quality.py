"""Quality figures of a reward model on labelled frames: pure computations, no model.

- **Value-order correlation (VOC)**, as GVL and TOPReward report it: on successful
  episodes, the Spearman rank correlation between the reward and time (the step
  index), averaged over episodes. A reward that rises towards the goal scores near 1.
- **Success detection**: the reward as a score for "this frame is a success frame".
  AUROC (ties count one half), and the accuracy at a threshold chosen on a separate
  split of the episodes, on a set with a fixed ratio of negative to positive frames
  (negatives subsampled, seeded), as the practice of 2-3x more negatives suggests.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.stats import rankdata

NEGATIVE_RATIO = 3.0
"""Default number of negative frames kept per positive frame in success detection."""


def spearman(a: np.ndarray, b: np.ndarray) -> float | None:
    """Spearman rank correlation (average ranks for ties); ``None`` when either side is constant."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if a.shape != b.shape or a.ndim != 1 or len(a) < 2:
        raise ValueError(f"spearman needs two 1-D arrays of the same length >= 2, got {a.shape} and {b.shape}")
    ra, rb = rankdata(a), rankdata(b)
    sa, sb = ra.std(), rb.std()
    if sa < 1e-12 or sb < 1e-12:
        return None
    return float(((ra - ra.mean()) * (rb - rb.mean())).mean() / (sa * sb))


@dataclass
class VocResult:
    """Value-order correlation over successful episodes."""

    mean: float | None
    """Mean over the scored episodes; ``None`` when none was scored."""
    episodes: int
    """Successful episodes scored (with at least ``min_frames`` frames)."""
    constant_episodes: int
    """Of those, episodes whose reward is constant: they count as 0 (see ``value_order_correlation``)."""
    per_episode: dict[int, float]
    """Episode id -> its correlation."""


def value_order_correlation(
    reward: np.ndarray, episode: np.ndarray, step: np.ndarray, success: np.ndarray, min_frames: int = 3
) -> VocResult:
    """Mean Spearman correlation of ``reward`` with ``step`` over the episodes that
    contain a success frame.

    A reward that is constant along an episode orders nothing: that episode scores 0
    (no better than chance) instead of being left out, so a flat reward cannot look
    good by having its flat episodes dropped. Episodes with fewer than ``min_frames``
    frames are skipped: two frames give +-1 whatever the reward."""
    reward, episode, step = np.asarray(reward, dtype=np.float64), np.asarray(episode), np.asarray(step)
    success = np.asarray(success, dtype=bool)
    if not reward.shape == episode.shape == step.shape == success.shape or reward.ndim != 1:
        raise ValueError("reward, episode, step and success must be 1-D arrays of the same length")
    if min_frames < 2:
        raise ValueError(f"min_frames must be >= 2, got {min_frames}")
    per_episode: dict[int, float] = {}
    constant = 0
    for ep in np.unique(episode[success]):
        mask = episode == ep
        if mask.sum() < min_frames:
            continue
        rho = spearman(reward[mask], step[mask])
        if rho is None:
            constant += 1
        per_episode[int(ep)] = 0.0 if rho is None else rho
    mean = float(np.mean(list(per_episode.values()))) if per_episode else None
    return VocResult(mean, len(per_episode), constant, per_episode)


def auroc(scores: np.ndarray, labels: np.ndarray) -> float:
    """Area under the ROC curve: the probability that a random positive scores above a
    random negative, ties counting one half (Mann-Whitney U over both class sizes)."""
    scores, labels = np.asarray(scores, dtype=np.float64), np.asarray(labels, dtype=bool)
    if scores.shape != labels.shape or scores.ndim != 1:
        raise ValueError(f"auroc needs 1-D scores and labels of the same length, got {scores.shape} and {labels.shape}")
    n_pos, n_neg = int(labels.sum()), int((~labels).sum())
    if n_pos == 0 or n_neg == 0:
        raise ValueError(f"auroc needs positive and negative frames, got {n_pos} and {n_neg}")
    ranks = rankdata(scores)  # average ranks: a tie between the classes adds one half
    return float((ranks[labels].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def accuracy_at(scores: np.ndarray, labels: np.ndarray, threshold: float) -> float:
    """Share of frames classified right when ``score >= threshold`` means success."""
    scores, labels = np.asarray(scores, dtype=np.float64), np.asarray(labels, dtype=bool)
    if scores.shape != labels.shape or len(scores) == 0:
        raise ValueError("accuracy_at needs non-empty scores and labels of the same length")
    return float(((scores >= threshold) == labels).mean())


def best_threshold(scores: np.ndarray, labels: np.ndarray) -> float:
    """The threshold (``score >= t`` means success) with the highest accuracy on these
    frames; of equally accurate ones the highest, i.e. the fewest false alarms. The
    candidates are the distinct scores and one just above the largest (all negative)."""
    scores = np.asarray(scores, dtype=np.float64)
    if len(scores) == 0:
        raise ValueError("best_threshold needs at least one frame")
    candidates = np.append(np.unique(scores), np.nextafter(scores.max(), np.inf))
    accuracy = [accuracy_at(scores, labels, float(t)) for t in candidates]
    best = max(accuracy)
    return float(max(t for t, a in zip(candidates, accuracy) if a == best))


def subsample_negatives(labels: np.ndarray, ratio: float, rng: np.random.Generator) -> np.ndarray:
    """Indices of all positives and of ``round(ratio * positives)`` negatives drawn
    without replacement (all of them when there are fewer), in increasing order."""
    labels = np.asarray(labels, dtype=bool)
    if not ratio > 0:
        raise ValueError(f"the negative ratio must be > 0, got {ratio}")
    pos, neg = np.flatnonzero(labels), np.flatnonzero(~labels)
    keep = min(len(neg), round(ratio * len(pos)))
    return np.sort(np.concatenate([pos, rng.choice(neg, size=keep, replace=False)]))


@dataclass
class DetectionResult:
    """Success detection on frames with ``negative_ratio`` negatives per positive."""

    auroc: float
    """On all episodes' frames (positives and the subsampled negatives)."""
    positives: int
    negatives: int
    negative_ratio: float
    """Asked for; the counts above say what the data allowed."""
    threshold: float
    """Chosen for accuracy on the calibration half of the episodes (``best_threshold``)."""
    accuracy: float
    """On the test half, at ``threshold``."""
    balanced_accuracy: float
    """Mean of the test half's true-positive and true-negative rates."""
    majority_accuracy: float
    """What calling every test frame a failure scores: the floor to compare with."""
    test_positives: int
    test_negatives: int


def split_episodes(episode: np.ndarray, success: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Boolean mask of the calibration half of the episodes; successful and other episodes
    are halved separately so both halves hold successes."""
    episode, success = np.asarray(episode), np.asarray(success, dtype=bool)
    good = np.unique(episode[success])
    other = np.setdiff1d(np.unique(episode), good)
    chosen = [rng.permutation(group)[: (len(group) + 1) // 2] for group in (good, other)]
    return np.isin(episode, np.concatenate(chosen))


def success_detection(
    scores: np.ndarray, success: np.ndarray, episode: np.ndarray, negative_ratio: float = NEGATIVE_RATIO, seed: int = 0
) -> DetectionResult:
    """AUROC and thresholded accuracy of ``scores`` against the per-frame success label
    (see ``DetectionResult``); one seed draws both the negatives and the episode split."""
    scores, success = np.asarray(scores, dtype=np.float64), np.asarray(success, dtype=bool)
    good = len(np.unique(np.asarray(episode)[success]))
    if good < 2 or success.all():
        raise ValueError(f"success detection needs successes in >= 2 episodes and some failures, got {good} episodes")
    rng = np.random.default_rng(seed)
    keep = subsample_negatives(success, negative_ratio, rng)
    s, y, ep = scores[keep], success[keep], np.asarray(episode)[keep]
    calibration = split_episodes(ep, y, rng)
    threshold = best_threshold(s[calibration], y[calibration])
    ts, ty = s[~calibration], y[~calibration]
    hit = ts >= threshold
    rates = [float(hit[ty].mean()) if ty.any() else 0.0, float((~hit[~ty]).mean()) if (~ty).any() else 0.0]
    return DetectionResult(
        auroc=auroc(s, y),
        positives=int(y.sum()),
        negatives=int((~y).sum()),
        negative_ratio=float(negative_ratio),
        threshold=threshold,
        accuracy=accuracy_at(ts, ty, threshold),
        balanced_accuracy=float(np.mean(rates)),
        majority_accuracy=float((~ty).mean()),
        test_positives=int(ty.sum()),
        test_negatives=int((~ty).sum()),
    )
