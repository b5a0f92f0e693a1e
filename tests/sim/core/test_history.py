"""The observation history: newest first, one entry per control step however often the
step is observed, restarted by a reset, and filled with what the policy saw (noise
included) by the engine."""

from __future__ import annotations

import numpy as np
import pytest

from sim2real.sim.core.history import ObservationHistory

LAYOUT = [("a", 2), ("b", 1), ("c", 2)]


def obs(values: list[float]) -> np.ndarray:
    return np.array([[v] * 5 for v in values], dtype=float)


def test_entries_are_newest_first_and_repeated_observations_record_once() -> None:
    h = ObservationHistory(2, LAYOUT, ("a", "c"), steps=2)
    assert (h.entry_size, h.size) == (4, 8)
    t = np.zeros(2)
    np.testing.assert_array_equal(h.block(obs([1, 2]), t), obs([1, 2])[:, [0, 1, 3, 4] * 2])  # fresh: repeats now
    h.record(obs([1, 2]), t)
    h.record(obs([9, 9]), t)  # the same step observed again: kept as first seen
    np.testing.assert_array_equal(h.block(obs([7, 7]), t), obs([1, 2])[:, [0, 1, 3, 4] * 2])
    for k in (1, 2, 3):
        t = t + 0.02
        block = h.block(obs([0, 0]), t)
        np.testing.assert_array_equal(block[:, :4], obs([k, 2 * k])[:, :4])  # newest: the previous step
        h.record(obs([k + 1, 2 * k + 2]), t)
        np.testing.assert_array_equal(h.block(obs([0, 0]), t), block)  # re-observing this step changes nothing
    np.testing.assert_array_equal(block[0].reshape(2, 4)[:, 0], [3, 2])


def test_a_reset_clock_restarts_that_env_only() -> None:
    h = ObservationHistory(2, LAYOUT, ("b",), steps=3)
    for k in range(4):
        h.record(obs([k, 10 + k]), np.full(2, 0.02 * k))
    now = np.array([0.0, 0.08])  # env 0 was reset
    np.testing.assert_array_equal(h.block(obs([5, 5]), now), [[5, 5, 5], [13, 12, 11]])


def test_bad_arguments() -> None:
    with pytest.raises(ValueError, match="not in the observation layout"):
        ObservationHistory(1, LAYOUT, ("x",), steps=2)
    with pytest.raises(ValueError, match="steps"):
        ObservationHistory(1, LAYOUT, ("a",), steps=0)


def test_the_quadruped_history_holds_the_noisy_observations_the_policy_saw() -> None:
    import sim2real.sim as S
    from sim2real.sim.core.errors import ConfigError

    env = S.make_vec("sim2real/QuadrupedVelocity-v0", num_envs=3, action_mode="gait_residual", dr="train", seed=1,
                     history_steps=2)
    layout = env.engine.task.observation_layout()
    assert layout[-1] == ("history", 2 * 36)
    start = {name: sum(n for _, n in layout[:i]) for i, (name, _) in enumerate(layout)}
    cols = np.concatenate([np.arange(start[b], start[b] + 12) for b in ("joint_pos", "joint_vel", "last_action")])
    hist = slice(start["history"], start["history"] + 72)
    seen = [env.reset()]
    rng = np.random.default_rng(0)
    for _ in range(6):
        o, _, done, _ = env.step(rng.uniform(-1, 1, (3, 12)))
        assert not done.any()
        seen.append(o)
    now, prev, prev2 = seen[-1], seen[-2], seen[-3]
    np.testing.assert_allclose(now[:, hist][:, :36], prev[:, cols])
    np.testing.assert_allclose(now[:, hist][:, 36:], prev2[:, cols])
    assert np.abs(prev[:, cols] - now[:, cols]).max() > 0
    with pytest.raises(ConfigError, match="history_steps"):
        S.make_vec("sim2real/QuadrupedVelocity-v0", num_envs=1, history_steps=-1)
