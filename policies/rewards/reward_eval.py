"""How well a CLIP reward agrees with the task's ground truth, on held-out rollouts.

For each alpha, the Pearson correlation ``rho`` between the CLIP reward of every
frame and the frame's ground-truth success label, and the EPIC-style distance
``D = sqrt((1 - rho) / 2)`` (0: perfectly correlated, 0.71: uncorrelated,
1: anti-correlated), as VLM-RM reports against human labels. The correlation with
the task's progress (e.g. minus the distance to the target) is reported too: it
says whether the reward also *shapes* the way to success.

Each alpha row also has the value-order correlation (VOC) and the AUROC of success
detection, and a ``quality`` block at one alpha holds the full quality report:
VOC, success detection at a fixed negative ratio, and the hacking audit
(``quality.py``, ``audit.py``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from itertools import pairwise
from pathlib import Path
from typing import Any

import numpy as np

from sim2real.errors import ConfigError
from sim2real.policies.rewards.audit import SheetPicture, audit_fooled, failure_kinds, write_picture_sheet
from sim2real.policies.rewards.clip_reward import ClipRewardModel
from sim2real.policies.rewards.dataset import FrameSet
from sim2real.policies.rewards.quality import NEGATIVE_RATIO, auroc, success_detection, value_order_correlation

ALPHAS = (0.0, 0.25, 0.5, 0.75, 1.0)


@dataclass
class QualitySettings:
    """How :func:`evaluate_reward` builds its ``quality`` block."""

    alpha: float = 0.5
    """The alpha the quality report scores (the one reward training uses by default)."""
    negative_ratio: float = NEGATIVE_RATIO
    seed: int = 0
    """Draws the subsampled negatives and the calibration/test split of the episodes."""
    worst: int = 12
    """Highest-scored failed frames listed (and drawn on the picture sheet)."""


def pearson(a: np.ndarray, b: np.ndarray) -> float | None:
    """Pearson correlation; ``None`` when either side is constant (undefined)."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if a.shape != b.shape or a.ndim != 1 or len(a) < 2:
        raise ValueError(f"pearson needs two 1-D arrays of the same length >= 2, got {a.shape} and {b.shape}")
    sa, sb = a.std(), b.std()
    if sa < 1e-12 or sb < 1e-12:
        return None
    return float(((a - a.mean()) * (b - b.mean())).mean() / (sa * sb))


def epic_distance(rho: float | None) -> float | None:
    """``sqrt((1 - rho) / 2)``."""
    if rho is None:
        return None
    return math.sqrt(max(0.0, (1.0 - rho) / 2.0))


def evaluate_reward(
    model: ClipRewardModel,
    data: FrameSet,
    alphas: Sequence[float] = ALPHAS,
    need_success: bool = True,
    quality: QualitySettings | None = None,
    audit_threshold: float | None = None,
) -> dict[str, Any]:
    """Correlations of the reward with success labels and progress, VOC and AUROC, per
    alpha, and the quality report at ``quality.alpha`` (default settings if ``None``).

    ``need_success=False`` accepts frames without a success (e.g. a weak policy's
    states): the success columns are then ``None``. ``audit_threshold`` replaces the
    audit's threshold (the median score of these frames' successes), e.g. by the one
    of scripted frames when auditing a policy's states."""
    if need_success and (data.success.all() or not data.success.any()):
        raise ConfigError(
            "episodes",
            f"the held-out frames need both successful and unsuccessful states, got "
            f"{int(data.success.sum())} of {len(data)} successful; collect more frames",
        )
    embeddings = model.embed_images(data.frames)  # once; alpha only changes the projection
    captions = np.array(data.captions)
    # Captions from the farthest from the goal to the closest (by their frames' mean progress).
    bands = sorted(set(data.captions), key=lambda c: data.progress[captions == c].mean())
    rows = []
    original = model.alpha
    both = bool(data.success.any() and not data.success.all())
    settings = quality or QualitySettings()
    try:
        for alpha in alphas:
            model.set_alpha(alpha)
            reward = model.reward_from_embeddings(embeddings)
            rho = pearson(reward, data.success.astype(np.float64))
            voc = value_order_correlation(reward, data.episode, data.step, data.success)
            rows.append(
                {
                    "alpha": float(alpha),
                    "pearson_success": rho,
                    "epic_distance": epic_distance(rho),
                    "pearson_progress": pearson(reward, data.progress),
                    "mean_reward_success": float(reward[data.success].mean()) if data.success.any() else None,
                    "mean_reward_other": float(reward[~data.success].mean()) if not data.success.all() else None,
                    "mean_reward_by_caption": by_caption(reward, captions, bands),
                    "voc": voc.mean,
                    "auroc": auroc(reward, data.success) if both else None,
                }
            )
        model.set_alpha(settings.alpha)
        report = quality_report(model.reward_from_embeddings(embeddings), data, settings, audit_threshold)
    finally:
        model.set_alpha(original)
    return {
        "frames": len(data),
        "success_frames": int(data.success.sum()),
        "episodes": int(len(np.unique(data.episode))),
        "alphas": rows,
        "quality": report,
    }


def quality_report(
    reward: np.ndarray, data: FrameSet, settings: QualitySettings, audit_threshold: float | None = None
) -> dict[str, Any]:
    """VOC, success detection and the hacking audit of one reward per frame, as JSON-ready
    dicts; detection is ``None`` without successes in two episodes, the audit without a
    threshold (no success frame and none given)."""
    voc = value_order_correlation(reward, data.episode, data.step, data.success)
    good_episodes = len(np.unique(data.episode[data.success]))
    detection = None
    if good_episodes >= 2 and not data.success.all():
        detection = asdict(
            success_detection(reward, data.success, data.episode, settings.negative_ratio, settings.seed)
        )
    audit = None
    if audit_threshold is not None or data.success.any():
        kinds, order = failure_kinds(data)
        result = audit_fooled(reward, data.success, kinds, audit_threshold, order, settings.worst)
        offset = data.state.get("target_rel_ee")
        worst = [
            {
                **asdict(w),
                "episode": int(data.episode[w.index]),
                "step": int(data.step[w.index]),
                "distance_cm": None if offset is None else float(100 * np.linalg.norm(offset[w.index])),
            }
            for w in result.worst
        ]
        audit = {**asdict(result), "worst": worst}
    return {
        "alpha": float(settings.alpha),
        "voc": {k: v for k, v in asdict(voc).items() if k != "per_episode"},
        "success_detection": detection,
        "audit": audit,
    }


def audit_sheet(sources: dict[str, tuple[dict[str, Any], FrameSet]], out: str | Path) -> Path:
    """The picture sheet of the audit: one row per named ``(quality block, frames)``
    source, its highest-scored failed frames captioned with distance, score and kinds."""
    rows = {}
    for name, (quality, data) in sources.items():
        pictures = []
        for w in quality["audit"]["worst"] if quality.get("audit") else []:
            distance = "" if w["distance_cm"] is None else f"{w['distance_cm']:.1f} cm, "
            mark = " FOOLED" if w["fooled"] else ""
            caption = f"{distance}score {w['score']:.3f}{mark}\n" + "\n".join(w["kinds"])
            pictures.append(SheetPicture(data.frames[w["index"]], caption))
        rows[name] = pictures
    return write_picture_sheet(rows, out)


def by_caption(reward: np.ndarray, captions: np.ndarray, bands: list[str]) -> dict[str, Any]:
    """Mean reward of each caption's frames, farthest band first, and how often it
    *falls* from one band to the next closer one: a shaped reward should never
    (``dips: 0``); a dip is a place a policy can settle."""
    means = [float(reward[captions == c].mean()) for c in bands]
    return {
        "captions": bands,
        "frames": [int((captions == c).sum()) for c in bands],
        "mean": means,
        "dips": int(sum(b < a for a, b in pairwise(means))),
    }


def plot_episodes(models: dict[str, ClipRewardModel], data: FrameSet, out: str | Path, episodes: int = 3) -> Path:
    """Reward along a few held-out episodes (those ending in success first), one
    line per model, with the task's progress on a second axis."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from sim2real.policies.common.atomic import write_bytes

    ends = [e for e in dict.fromkeys(data.episode.tolist())]
    successful = [e for e in ends if data.success[data.episode == e].any()]
    chosen = (successful + [e for e in ends if e not in successful])[:episodes]
    fig, axes = plt.subplots(1, len(chosen), figsize=(4.5 * len(chosen), 3.4), squeeze=False)
    for ax, ep in zip(axes[0], chosen):
        mask = data.episode == ep
        order = np.argsort(data.step[mask])
        sub = data.subset(mask)
        for name, model in models.items():
            reward = model(sub.frames)[order]
            span = reward.max() - reward.min()
            label = Path(name).name if "/" in name else name  # folder names, not full paths
            ax.plot(
                sub.step[order],
                (reward - reward.min()) / (span if span > 0 else 1.0),
                label=f"{label} (alpha {model.alpha:g})",
            )
        twin = ax.twinx()
        twin.plot(sub.step[order], sub.progress[order], "k--", lw=1, label="progress (ground truth)")
        twin.set_ylabel("progress", fontsize=8)
        hits = sub.step[order][sub.success[order]]
        for h in hits:
            ax.axvline(h, color="g", alpha=0.3)
        ax.set_title(f"episode {ep}" + (" (success)" if len(hits) else ""), fontsize=9)
        ax.set_xlabel("step")
        ax.set_ylabel("CLIP reward (min-max scaled)", fontsize=8)
    axes[0][0].legend(fontsize=7, loc="upper left")
    fig.tight_layout()
    path = Path(out)
    path.parent.mkdir(parents=True, exist_ok=True)
    import io

    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=110)
    plt.close(fig)
    write_bytes(path, buffer.getvalue())
    return path
