"""Hacking audit of a reward model: failed frames it scores like successes, by kind.

A frame is *fooled* when the simulator says the task failed there but the reward is
at or above the model's median score on success frames: a policy that reaches it is
paid like one that succeeded. Fooled frames are grouped by failure kind, read from
the simulator state recorded with each frame (``FrameSet.state``). For ArmReach the
kinds are a distance band (exclusive) plus two flags a frame may carry:

- along a fixed camera's ray: the gripper-to-target offset points within about 26
  degrees (``ALIGN_COS``) of that camera's ray through the target, so in its picture
  the gripper covers the target while it is in front of or behind it;
- wrist tilted: the gripper's approach axis is more than ``TILT_DEG`` from straight
  down, so the wrist camera looks at the table edge or the arm, not at the target.

Frames without recorded state are grouped by their caption instead.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from sim2real.policies.rewards.dataset import FrameSet

REACH_BANDS = ((0.03, "<3 cm"), (0.06, "3-6 cm"), (0.10, "6-10 cm"), (0.16, "10-16 cm"))
REACH_FAR_BAND = ">16 cm"
ALIGN_COS = 0.9
"""|cos| of the angle between the gripper-target offset and the camera ray above which
the offset counts as "along the ray" (0.9: within 25.8 degrees)."""
TILT_DEG = 30.0
"""Approach-axis angle from straight down above which the wrist counts as tilted."""
WRIST_TILTED = "wrist tilted"


def along_ray(camera: str) -> str:
    """The kind name of offsets along ``camera``'s ray through the target."""
    return f"along {camera}'s ray"


def reach_kinds(
    target_rel_ee: np.ndarray,
    target_pos: np.ndarray,
    tilt_deg: np.ndarray,
    cameras: dict[str, tuple[float, float, float]],
) -> list[tuple[str, ...]]:
    """Failure kinds of reach frames: ``(band, *flags)`` per frame (module docstring)."""
    offset = -np.asarray(target_rel_ee, dtype=np.float64)  # gripper relative to the target
    distance = np.linalg.norm(offset, axis=1)
    kinds: list[list[str]] = [
        [next((name for bound, name in REACH_BANDS if d < bound), REACH_FAR_BAND)] for d in distance
    ]
    for name, pos in cameras.items():
        ray = np.asarray(target_pos, dtype=np.float64) - np.asarray(pos, dtype=np.float64)
        cos = np.abs((offset * ray).sum(axis=1)) / np.maximum(distance * np.linalg.norm(ray, axis=1), 1e-12)
        for i in np.flatnonzero(cos >= ALIGN_COS):
            kinds[i].append(along_ray(name))
    for i in np.flatnonzero(np.asarray(tilt_deg) > TILT_DEG):
        kinds[i].append(WRIST_TILTED)
    return [tuple(k) for k in kinds]


def failure_kinds(data: FrameSet) -> tuple[list[tuple[str, ...]], list[str]]:
    """Each frame's failure kinds and the order to report kinds in: reach kinds where
    the frames record reach state, else the caption (farthest from the goal first)."""
    state = data.state
    if {"target_rel_ee", "target_pos", "ee_tilt_deg"} <= set(state):
        kinds = reach_kinds(state["target_rel_ee"], state["target_pos"], state["ee_tilt_deg"], data.cameras)
        order = [REACH_FAR_BAND, *(n for _, n in reversed(REACH_BANDS))]
        return kinds, [*order, *(along_ray(c) for c in data.cameras), WRIST_TILTED]
    captions = np.array(data.captions)
    order = sorted(set(data.captions), key=lambda c: float(data.progress[captions == c].mean()))
    return [(c,) for c in data.captions], order


@dataclass
class KindCount:
    """Failed and fooled frames of one failure kind."""

    kind: str
    failed: int
    """Failed frames of this kind."""
    fooled: int
    """Of those, frames scored at or above the threshold."""
    fooled_share: float | None
    """``fooled / failed``: how often the model is fooled on this kind (None if no frame)."""
    share_of_fooled: float | None
    """``fooled`` over all fooled frames: what the fooled frames are made of."""


@dataclass
class WorstFrame:
    """One of the highest-scored failed frames."""

    index: int
    """Index in the audited frames."""
    score: float
    kinds: tuple[str, ...]
    fooled: bool


@dataclass
class AuditResult:
    """Failed frames scored like successes, overall and per failure kind."""

    threshold: float
    """The median score of the success frames, or the threshold given."""
    threshold_given: bool
    """Whether ``threshold`` was given (e.g. scripted frames' median for a policy's states)."""
    failed_frames: int
    fooled_frames: int
    fooled_share: float | None
    """``fooled_frames / failed_frames``."""
    kinds: list[KindCount]
    worst: list[WorstFrame]
    """Highest-scored failed frames first."""


def audit_fooled(
    scores: np.ndarray,
    success: np.ndarray,
    kinds: Sequence[tuple[str, ...]],
    threshold: float | None = None,
    order: Sequence[str] = (),
    worst: int = 12,
) -> AuditResult:
    """Group the failed frames scored at or above ``threshold`` (default: the median
    score of the success frames) by kind; kinds in ``order`` first, the rest sorted."""
    scores, success = np.asarray(scores, dtype=np.float64), np.asarray(success, dtype=bool)
    if not len(scores) == len(success) == len(kinds) or scores.ndim != 1:
        raise ValueError("scores, success and kinds must have one entry per frame")
    given = threshold is not None
    if threshold is None:
        if not success.any():
            raise ValueError("the audit needs success frames for its threshold, or a threshold")
        threshold = float(np.median(scores[success]))
    failed = [int(i) for i in np.flatnonzero(~success)]
    fooled = [i for i in failed if scores[i] >= threshold]
    seen = {k for i in failed for k in kinds[i]}
    names = [k for k in order if k in seen] + sorted(seen - set(order))
    counts = []
    for name in names:
        n_failed = sum(name in kinds[i] for i in failed)
        n_fooled = sum(name in kinds[i] for i in fooled)
        counts.append(
            KindCount(name, n_failed, n_fooled, n_fooled / n_failed if n_failed else None,
                      n_fooled / len(fooled) if len(fooled) else None)
        )
    ranked = sorted(failed, key=lambda i: -scores[i])[:worst]  # stable: ties keep frame order
    return AuditResult(
        threshold=float(threshold),
        threshold_given=given,
        failed_frames=len(failed),
        fooled_frames=len(fooled),
        fooled_share=len(fooled) / len(failed) if len(failed) else None,
        kinds=counts,
        worst=[WorstFrame(i, float(scores[i]), tuple(kinds[i]), bool(scores[i] >= threshold)) for i in ranked],
    )


@dataclass
class SheetPicture:
    """One frame of the picture sheet and the caption under it."""

    image: np.ndarray
    caption: str


def write_picture_sheet(rows: dict[str, list[SheetPicture]], out: str | Path) -> Path:
    """A PNG with one row of pictures per named row (e.g. per reward model)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from sim2real.policies.common.atomic import write_bytes

    if not rows or not any(rows.values()):
        raise ValueError("the picture sheet needs at least one picture")
    columns = max(len(p) for p in rows.values())
    fig, axes = plt.subplots(len(rows), columns, figsize=(1.9 * columns, 2.6 * len(rows)), squeeze=False)
    for r, (name, pictures) in enumerate(rows.items()):
        for c in range(columns):
            ax = axes[r][c]
            ax.axis("off")
            if c < len(pictures):
                ax.imshow(pictures[c].image)
                ax.set_title(pictures[c].caption, fontsize=6)
        axes[r][0].text(-0.1, 0.5, name, transform=axes[r][0].transAxes, rotation=90, ha="right", va="center",
                        fontsize=7)
    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=110)
    plt.close(fig)
    path = Path(out)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_bytes(path, buffer.getvalue())
    return path
