"""Several reward models, one reward: their mean minus ``k`` times their spread.

A policy trained on one learned reward goes where that model is wrong and scores
too high (the hacks docs/vlm_rewards.md shows). Models trained from different seeds,
or on different data, agree where their training data was and disagree elsewhere.
Paying the lower confidence bound ``mean - k * std`` keeps the policy where the
models agree (as ensembles of reward models are used against reward over-optimisation).
With one member and any ``k`` it is that member's reward.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from sim2real.errors import ConfigError
from sim2real.policies.rewards.clip_reward import ClipRewardModel, check_frames


class EnsembleReward:
    """Lower-confidence-bound reward of several :class:`ClipRewardModel` s.

    Args:
        members: The reward models (same camera and frame size; the caller renders once).
        lcb: ``k`` in ``mean - k * std`` (population std over members); 0 is the mean.
    """

    def __init__(self, members: Sequence[ClipRewardModel], lcb: float = 1.0) -> None:
        if not members:
            raise ConfigError("reward.ensemble", "an ensemble needs at least one reward model")
        if not math.isfinite(lcb) or lcb < 0:
            raise ConfigError("reward.lcb", f"must be a finite number >= 0, got {lcb}")
        self.members = list(members)
        self.lcb = float(lcb)

    def member_rewards(self, frames: np.ndarray) -> np.ndarray:
        """``[M, B]`` rewards of every member."""
        check_frames(frames)
        return np.stack([member(frames) for member in self.members])

    def __call__(self, frames: np.ndarray) -> np.ndarray:
        """Rewards ``[B]`` (float64): ``mean - lcb * std`` over the members."""
        rewards = self.member_rewards(frames)
        return rewards.mean(axis=0) - self.lcb * rewards.std(axis=0)

    def describe(self) -> dict[str, Any]:
        return {"ensemble": [m.describe() for m in self.members], "lcb": self.lcb}
