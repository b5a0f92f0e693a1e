"""Evaluation on the engine: Wilson intervals, exact episode counts, success
and metrics that tell a good controller from a bad one. No torch involved."""

from __future__ import annotations

import math

import numpy as np
import pytest
from policy_helpers import PuckTask

from sim2real.policies.common.evaluation import Evaluator, wilson_interval


@pytest.mark.parametrize(
    ("k", "n", "lo", "hi"),
    [(0, 10, 0.0, 0.2775), (5, 10, 0.2366, 0.7634), (10, 10, 0.7225, 1.0), (95, 100, 0.8882, 0.9785)],
)
def test_wilson_interval_matches_reference_values(k: int, n: int, lo: float, hi: float) -> None:
    got = wilson_interval(k, n)
    assert got[0] == pytest.approx(lo, abs=1e-4) and got[1] == pytest.approx(hi, abs=1e-4)


def test_wilson_interval_contains_the_estimate_and_narrows_with_n() -> None:
    for n in (1, 7, 50, 1000):
        for k in (0, n // 3, n):
            lo, hi = wilson_interval(k, n)
            assert 0.0 <= lo <= k / n <= hi <= 1.0
    assert (
        wilson_interval(30, 100)[1] - wilson_interval(30, 100)[0]
        < wilson_interval(3, 10)[1] - wilson_interval(3, 10)[0]
    )
    assert wilson_interval(0, 0) == (0.0, 1.0)


def pd_controller(obs: np.ndarray) -> np.ndarray:
    """Push the puck toward its target: a decent hand-written policy."""
    pos, vel, target = obs[:, 0:2], obs[:, 2:4], obs[:, 4:6]
    return np.clip(8.0 * (target - pos) - 1.0 * vel, -1, 1)


def test_evaluator_counts_episodes_exactly_and_separates_good_from_bad() -> None:
    ev = Evaluator(PuckTask, n_envs=3, dr="none", seed=1)
    good = ev.run(pd_controller, episodes=10)
    idle = ev.run(lambda obs: np.zeros((obs.shape[0], 2)), episodes=10)
    assert good.episodes == idle.episodes == 10
    assert good.mean_length == pytest.approx(50)  # 1 s episodes at 50 Hz, no termination
    assert good.success_rate > 0.8 and idle.success_rate < 0.3
    assert good.metrics_final["distance"] < 0.02 < idle.metrics_final["distance"]
    assert good.metrics_mean["distance"] > good.metrics_final["distance"]  # it starts far and closes in
    assert good.mean_return > idle.mean_return
    assert good.ci_low <= good.success_rate <= good.ci_high
    assert math.isclose(good.success_rate, good.successes / good.episodes)


def test_each_run_sees_the_same_episodes() -> None:
    ev = Evaluator(PuckTask, n_envs=2, dr="train", seed=3)
    a, b = ev.run(pd_controller, 4), ev.run(pd_controller, 4)
    assert a.mean_return == b.mean_return and a.metrics_final == b.metrics_final


def test_each_episode_records_the_randomization_it_ran_under() -> None:
    rows = Evaluator(PuckTask, n_envs=2, dr="train", seed=5).run_episodes(pd_controller, 6)
    assert len(rows) == 6
    for row in rows:
        assert 0.5 <= row.draw["friction"] <= 1.5
        assert all(0.8 <= m <= 1.2 for m in row.draw["motor_strength"])
        assert row.draw["latency_steps"] in (0, 1)
    # a fresh draw per episode, not the batch's first one repeated
    assert len({row.draw["friction"] for row in rows}) == 6
    assert all(row.draw == {} for row in Evaluator(PuckTask, n_envs=2, dr="none").run_episodes(pd_controller, 2))


def test_controllers_meet_the_same_episodes_however_long_each_of_theirs_lasts() -> None:
    """Paired evaluation: env i's k-th episode has the same draws whichever controller runs,
    even when one controller's episodes end early (here: env 0 pushed off the table)."""

    def reckless(obs: np.ndarray) -> np.ndarray:
        action = pd_controller(obs)
        action[0] = 1.0
        return action

    ev = Evaluator(PuckTask, n_envs=2, dr="train", seed=7)
    careful_rows, reckless_rows = ev.run_episodes(pd_controller, 6), ev.run_episodes(reckless, 6)
    assert np.mean([r.length for r in reckless_rows]) < np.mean([r.length for r in careful_rows])
    key = sorted((r.draw["friction"], r.draw["latency_steps"]) for r in careful_rows)
    assert key == sorted((r.draw["friction"], r.draw["latency_steps"]) for r in reckless_rows)
