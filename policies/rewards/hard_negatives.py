"""Hard negatives for reach reward models: where the scripted arm is sent instead of the
target, chosen where reward models were fooled (issue 24; the hacking audit's kinds).

Policies trained on the local CLIP reward found three holes: they lined the gripper up
with the target along the fixed camera's ray, hovered a few centimetres away, or went
where the scripted frames never went. Decoy episodes (``collect_frames(decoy_fraction=...)``)
drive the scripted controller to a point other than the target; this module draws those
points by kind:

- ``workspace``: anywhere in the task's workspace box (the decoys before issue 24);
- ``camera_ray``: on a fixed reward camera's ray through the target, 6-20 cm in front of
  the target: in that camera's picture the gripper covers the target;
- ``near_miss``: 4-8 cm from the target in a random direction (twice the 2 cm success
  radius and more, so the controller's settling error cannot make it a success).
"""

from __future__ import annotations

import numpy as np

from sim2real.errors import ConfigError

KINDS = ("workspace", "camera_ray", "near_miss")
HARD_MIX = {"workspace": 0.4, "camera_ray": 0.3, "near_miss": 0.3}
"""The mix of ``finetune-clip --hard-negatives``: each kind's share of decoy episodes."""
RAY_DISTANCE = (0.06, 0.20)
"""m in front of the target along a camera ray."""
NEAR_MISS_DISTANCE = (0.04, 0.08)
"""m from the target."""


def decoy_mix(hard: bool) -> dict[str, float] | None:
    """The decoy kinds' shares: ``HARD_MIX`` for ``--hard-negatives``, else None (anywhere
    in the workspace)."""
    return dict(HARD_MIX) if hard else None


def parse_mix(mix: dict[str, float] | None) -> dict[str, float]:
    """A decoy mix normalized to shares summing to 1 (None: workspace decoys only)."""
    mix = {"workspace": 1.0} if mix is None else dict(mix)
    unknown = sorted(set(mix) - set(KINDS))
    if unknown or not mix or any(not np.isfinite(v) or v < 0 for v in mix.values()) or sum(mix.values()) <= 0:
        raise ConfigError("decoy kinds", f"{mix}: shares >= 0 of {list(KINDS)}, not all zero")
    total = sum(mix.values())
    return {k: v / total for k, v in mix.items()}


def decoy_points(
    targets: np.ndarray,
    low: np.ndarray,
    high: np.ndarray,
    cameras: dict[str, tuple[float, float, float]],
    rng: np.random.Generator,
    mix: dict[str, float] | None = None,
) -> tuple[np.ndarray, list[str]]:
    """One decoy point per target ``[n, 3]`` (world frame) and its kind, drawn from
    ``mix`` (:func:`parse_mix`). ``camera_ray`` needs a fixed camera (one is picked at
    random per point); without one those draws become near misses."""
    shares = parse_mix(mix)
    kinds = list(rng.choice(list(shares), size=len(targets), p=list(shares.values())))
    points = np.empty((len(targets), 3))
    names = list(cameras)
    for i, (target, kind) in enumerate(zip(np.asarray(targets, dtype=np.float64), kinds, strict=True)):
        if kind == "camera_ray" and names:
            camera = np.asarray(cameras[names[int(rng.integers(len(names)))]], dtype=np.float64)
            toward = (camera - target) / np.linalg.norm(camera - target)
            points[i] = target + toward * rng.uniform(*RAY_DISTANCE)
        elif kind in ("camera_ray", "near_miss"):
            kinds[i] = "near_miss"
            direction = rng.standard_normal(3)
            points[i] = target + direction / np.linalg.norm(direction) * rng.uniform(*NEAR_MISS_DISTANCE)
        else:
            points[i] = rng.uniform(low, high)
    return points, [str(k) for k in kinds]
