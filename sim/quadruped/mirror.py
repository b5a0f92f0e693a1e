"""The quadruped's left-right mirror: its observation and action as the same robot would
see and act in the situation reflected through its sagittal (x-z) plane.

The Go2 is left-right symmetric, so a policy that walks straight should be equivariant:
``policy(mirror(obs)) == mirror(policy(obs))``. A policy that is not drifts sideways or
in yaw on a straight command, one way in every model. Training on mirrored samples as
well (``distill.mirror``, :mod:`sim2real.policies.distill.dagger`) asks for that
equivariance directly instead of hoping the data is balanced; legged-robot learning uses
the same augmentation (symmetry losses in rsl_rl-based Isaac Lab tasks).

The reflection swaps the left and right legs (FR <-> FL, RR <-> RL) and negates what
points across the plane: lateral velocity and gravity, roll and yaw rates, the hips'
abduction, the commanded lateral speed and yaw rate. The trot's clock moves by half a
cycle (its diagonal pairs swap), which negates ``(sin, cos)``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from sim2real.sim.core.errors import ConfigError
from sim2real.sim.core.layout import SignedPermutation
from sim2real.sim.quadruped import constants as c
from sim2real.sim.quadruped.gait import PAIR_PHASE


def _legs_swapped() -> np.ndarray:
    leg = {name: i for i, name in enumerate(c.LEGS)}
    other = {"FR": "FL", "FL": "FR", "RR": "RL", "RL": "RR"}
    per_leg = len(c.JOINT_NAMES) // len(c.LEGS)
    return np.array([leg[other[name]] * per_leg + j for name in c.LEGS for j in range(per_leg)])


JOINTS = SignedPermutation(_legs_swapped(), np.array([-1.0, 1.0, 1.0] * len(c.LEGS)))
"""Joint-space vectors in our order (positions relative to the symmetric default pose,
velocities, joint-target actions): legs swapped, hips (abduction) negated."""

_VECTORS: dict[str, tuple[float, ...]] = {
    "base_lin_vel": (1.0, -1.0, 1.0),
    "base_ang_vel": (-1.0, 1.0, -1.0),  # a pseudovector: roll and yaw flip, pitch stays
    "projected_gravity": (1.0, -1.0, 1.0),
    "command": (1.0, -1.0, -1.0),  # vx, vy, yaw rate
    "gait_clock": (-1.0, -1.0),  # (sin, cos) half a cycle on
}
_JOINT_BLOCKS = ("joint_pos", "joint_vel", "last_action", "joint_pos_target")


def _trot_swaps_pairs() -> bool:
    """The clock's mirror is half a cycle only for a trot: each leg in phase with its
    diagonal and half a cycle from its mirror image."""
    p = dict(zip(c.LEGS, PAIR_PHASE, strict=True))
    return p["FR"] == p["RL"] and p["FL"] == p["RR"] and abs(p["FR"] - p["FL"]) == 0.5


def block_mirror(name: str, size: int) -> SignedPermutation:
    """The mirror of one observation or action block (a :class:`ConfigError` for a block
    whose reflection is not known: a mirror that guessed would teach a wrong symmetry)."""
    if name in _JOINT_BLOCKS and size == len(JOINTS):
        return JOINTS
    if name in _VECTORS and size == len(_VECTORS[name]) and (name != "gait_clock" or _trot_swaps_pairs()):
        return SignedPermutation(np.arange(size), np.array(_VECTORS[name]))
    raise ConfigError("mirror", f"no left-right mirror known for the block {name!r} of size {size}")


def layout_mirror(layout: Sequence[tuple[str, int]], history_blocks: Sequence[str] = (),
                  history_steps: int = 0) -> SignedPermutation:
    """The mirror of a whole flat vector laid out as ``layout``; a ``history`` block holds
    ``history_steps`` entries of ``history_blocks`` (:class:`~sim2real.sim.core.history.ObservationHistory`)."""
    sizes = dict(layout)
    index, sign, start = [], [], 0
    for name, size in layout:
        if name == "history":
            parts = [block_mirror(b, sizes[b]) for b in history_blocks]
            entry = sum(len(p) for p in parts)
            if entry * history_steps != size:
                raise ConfigError("mirror", f"history of {size} values is not {history_steps} x {entry}")
            perm = SignedPermutation(
                np.concatenate([p.index + o for p, o in zip(parts, np.cumsum([0] + [len(p) for p in parts]))]),
                np.concatenate([p.sign for p in parts]))
            for step in range(history_steps):
                index.append(start + step * entry + perm.index)
                sign.append(perm.sign)
        else:
            perm = block_mirror(name, size)
            index.append(start + perm.index)
            sign.append(perm.sign)
        start += size
    return SignedPermutation(np.concatenate(index).astype(np.int64), np.concatenate(sign))
