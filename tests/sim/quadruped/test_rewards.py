"""The quadruped tasks' reward weighting: a config's weights over the defaults, per second,
legged_gym's clip at zero with the termination penalty added after it."""

from __future__ import annotations

import numpy as np
import pytest

from sim2real.sim.core.errors import ConfigError
from sim2real.sim.quadruped.rewards import LOCOMOTION_WEIGHTS, RewardWeights

DT = 0.02


def test_the_step_reward_is_the_weighted_sum_per_second() -> None:
    weights = RewardWeights({"tracking_lin_vel": 1.0, "torques": -0.5, "base_height": 0.0}, only_positive=False)
    terms = {"tracking_lin_vel": np.array([1.0, 0.5]), "torques": np.array([0.0, 2.0]),
             "base_height": np.array([9.0, 9.0])}  # weight 0: not counted
    np.testing.assert_allclose(weights.step_reward(terms, DT), DT * np.array([1.0, 0.5 - 1.0]))


def test_the_clip_at_zero_leaves_the_termination_penalty() -> None:
    weights = RewardWeights({"tracking_lin_vel": 1.0, "torques": -1.0, "termination": -50.0})
    terms = {"tracking_lin_vel": np.array([0.2, 0.2]), "torques": np.array([1.0, 1.0]),
             "termination": np.array([0.0, 1.0])}
    np.testing.assert_allclose(weights.step_reward(terms, DT), [0.0, -50.0 * DT])


def test_a_changed_weight_counts_from_the_next_step() -> None:
    weights = RewardWeights({"tracking_lin_vel": 1.0, "feet_slip": 0.0}, only_positive=False)
    terms = {"tracking_lin_vel": np.array([1.0]), "feet_slip": np.array([1.0])}
    assert weights.step_reward(terms, DT)[0] == pytest.approx(DT)
    weights["feet_slip"] = -3.0
    assert weights.step_reward(terms, DT)[0] == pytest.approx(-2.0 * DT)


@pytest.mark.parametrize(("overrides", "only_positive", "field"), [
    ({"tracking": 1.0}, True, "reward_weights.tracking"),
    ({"torques": "heavy"}, True, "reward_weights.torques"),
    ({"torques": float("inf")}, True, "reward_weights.torques"),
    ({}, "yes", "only_positive_rewards"),
])
def test_bad_weights_are_named(overrides: dict, only_positive: object, field: str) -> None:
    with pytest.raises(ConfigError) as err:
        RewardWeights(LOCOMOTION_WEIGHTS, overrides, only_positive)  # type: ignore[arg-type]
    assert err.value.field == field


def test_overrides_leave_the_defaults_untouched() -> None:
    weights = RewardWeights(LOCOMOTION_WEIGHTS, {"base_height": -100.0})
    assert weights["base_height"] == -100.0 and LOCOMOTION_WEIGHTS["base_height"] == 0.0
