"""Every quadruped task through the registry: reset/step, layouts, termination vs
truncation, bad input, the batched backend, and the classical stand controller."""

from __future__ import annotations

import mujoco
import numpy as np
import pytest

import sim2real.sim as S
from sim2real.policies.classical.quadruped import StandController, TrotGait, leg_ik
from sim2real.sim.core.errors import ActionError, ConfigError
from sim2real.sim.quadruped import TASKS
from sim2real.sim.quadruped import constants as c

IDS = ["sim2real/QuadrupedVelocity-v0", "sim2real/QuadrupedVelocityRough-v0", "sim2real/QuadrupedWaypoints-v0"]


def test_registered_ids() -> None:
    assert sorted(S.gym_id(t) for t in TASKS) == sorted(IDS)
    for task_id in IDS:
        assert task_id in S.REGISTRY.ids()


@pytest.mark.parametrize("task_id", IDS)
@pytest.mark.parametrize("dr", [None, "train"])
def test_reset_and_step(task_id: str, dr: str | None) -> None:
    env = S.make(task_id, dr=dr, seed=0)
    obs, info = env.reset(seed=0)
    if dr == "train":
        assert info["dr"]["trunk_added_mass"] != 0.0 and info["dr"]["friction"] != 1.0
    task = env.task
    assert obs.shape == (sum(n for _, n in task.observation_layout()),)
    assert info["privileged"].shape == (sum(n for _, n in task.privileged_layout()),)
    assert env.action_space.shape == (12,)
    rng = np.random.default_rng(0)
    for _ in range(30):
        obs, reward, terminated, truncated, info = env.step(rng.uniform(-0.3, 0.3, 12))
        assert np.isfinite(obs).all() and np.isfinite(reward)
        assert np.isfinite(info["privileged"]).all()
        assert set(info["metrics"]) >= {"fell"}
        if terminated or truncated:
            obs, info = env.reset()


def test_velocity_observation_is_the_48_standard_values() -> None:
    env = S.make(IDS[0], seed=0, init_joint_noise=0.0, init_velocity_noise=0.0)
    obs, _ = env.reset(seed=3)
    names = [n for n, _ in env.task.observation_layout()]
    assert names == [
        "base_lin_vel",
        "base_ang_vel",
        "projected_gravity",
        "command",
        "joint_pos",
        "joint_vel",
        "last_action",
    ]
    assert obs.shape == (48,)
    np.testing.assert_allclose(obs[6:9], [0, 0, -1], atol=1e-6)  # level trunk
    np.testing.assert_allclose(obs[9:12], env.task.command[0], atol=1e-6)
    np.testing.assert_allclose(obs[12:24], 0.0, atol=1e-6)  # joints at the default pose
    action = np.linspace(-1, 1, 12)
    obs, *_ = env.step(action)
    np.testing.assert_allclose(obs[36:48], action, atol=1e-6)  # last action
    np.testing.assert_allclose(env.data.ctrl, np.clip(c.DEFAULT_POSE + 0.5 * action, *env.model.actuator_ctrlrange.T))


def test_metrics_and_commands() -> None:
    env = S.make(IDS[0], seed=0, lin_vel_x=(0.5, 0.5), lin_vel_y=(0, 0), yaw_rate=(0, 0), zero_command_probability=0.0)
    env.reset(seed=0)
    _, _, _, _, info = env.step(np.zeros(12))
    assert info["metrics"]["vel_tracking_error"] == pytest.approx(
        np.hypot(
            0.5 - env.task.base_state(env.engine.phys).lin_vel[0, 0], env.task.base_state(env.engine.phys).lin_vel[0, 1]
        )
    )
    assert info["metrics"]["fell"] == 0.0
    np.testing.assert_allclose(env.task.command[0], [0.5, 0, 0])


def test_commands_are_resampled() -> None:
    env = S.make(IDS[0], seed=0, resample_seconds=0.5)
    env.reset(seed=0)
    seen = {tuple(env.task.command[0])}
    for _ in range(100):
        env.step(np.zeros(12))
        seen.add(tuple(env.task.command[0]))
    assert len(seen) >= 3


def test_fall_terminates_and_time_limit_truncates() -> None:
    env = S.make(IDS[0], seed=0)
    env.reset(seed=0)
    # Upside down on the floor: a fall, i.e. termination (never truncation).
    env.data.qpos[2] = 0.2
    env.data.qpos[3:7] = [0, 1, 0, 0]
    mujoco.mj_forward(env.model, env.data)
    _, _, terminated, truncated, info = env.step(np.zeros(12))
    assert terminated and not truncated and info["metrics"]["fell"] == 1.0 and not info["is_success"]
    # Standing for the whole 20 s: truncation, not termination.
    obs, _ = env.reset(seed=1)
    ctl = StandController(env.task.observation_layout())
    steps = 0
    while True:
        obs, _, terminated, truncated, info = env.step(ctl.act(obs)[0])
        steps += 1
        if terminated or truncated:
            break
    assert truncated and not terminated and steps == int(20.0 / c.CONTROL_DT)


def test_bad_actions_and_options_are_named() -> None:
    env = S.make(IDS[0], seed=0)
    env.reset(seed=0)
    with pytest.raises(ActionError):
        env.step(np.zeros(11))
    with pytest.raises(ActionError):
        env.step(np.full(12, np.nan))
    for options, field in [
        ({"action_scale": 0.0}, "action_scale"),
        ({"lin_vel_x": (1.0, -1.0)}, "lin_vel_x"),
        ({"reward_weights": {"tracking": 1.0}}, "reward_weights.tracking"),
        ({"resample_seconds": float("nan")}, "resample_seconds"),
    ]:
        with pytest.raises(ConfigError) as err:
            S.make(IDS[0], **options)
        assert err.value.field == field
    with pytest.raises(ConfigError) as err:
        S.make(IDS[1], difficulty=2.0)
    assert err.value.field == "difficulty"
    with pytest.raises(ConfigError) as err:
        S.make(IDS[2], num_sections=9)
    assert err.value.field == "num_sections"


def test_batched_matches_single_env() -> None:
    """The rollout backend (B=3) and mj_step (B=1) give the same first env trajectory."""
    single = S.make(IDS[0], seed=7)
    obs1, _ = single.reset(seed=7)
    vec = S.make_vec(IDS[0], num_envs=3, seed=7, nthread=2)
    obsb = vec.reset()
    assert obsb.shape == (3, 48)
    np.testing.assert_allclose(obsb[0], obs1, atol=1e-5)
    action = np.tile(np.linspace(-0.5, 0.5, 12), (3, 1))
    for _ in range(10):
        o1, *_ = single.step(action[0])
        ob, *_ = vec.step(action)
    assert np.isfinite(ob).all()
    np.testing.assert_allclose(ob[0], o1, atol=1e-4)


def test_stand_controller_stands_up_from_a_crouch() -> None:
    env = S.make(IDS[0], seed=0, init_joint_noise=0.0, init_velocity_noise=0.0)
    env.reset(seed=0)
    env.data.qpos[2] = 0.191
    env.data.qpos[3:7] = [1, 0, 0, 0]
    env.data.qpos[7:] = c.CROUCH_POSE
    env.data.qvel[:] = 0
    mujoco.mj_forward(env.model, env.data)
    obs = env.engine.observe()[0]
    ctl = StandController(env.task.observation_layout())
    heights = []
    for _ in range(150):
        obs, _, terminated, _, _ = env.step(ctl.act(obs)[0])
        assert not terminated
        heights.append(env.data.qpos[2])
    heights = np.array(heights)
    assert heights[0] < 0.2 and abs(heights[-1] - c.STANDING_HEIGHT) < 0.015
    assert np.abs(np.diff(heights)).max() / c.CONTROL_DT < 0.5  # smooth: no jump
    np.testing.assert_allclose(env.data.qpos[7:], c.DEFAULT_POSE, atol=0.08)


def test_trot_reference_alternates_diagonal_pairs() -> None:
    thigh, calf = leg_ik(np.array([0.0]), np.array([-2 * c.THIGH_LENGTH * np.cos(0.9)]))
    np.testing.assert_allclose([thigh[0], calf[0]], [0.9, -1.8], atol=1e-4)
    gait = TrotGait()
    lifts = np.array([gait.act(np.zeros((1, 48)))[0, 2::3] for _ in range(20)])  # calf actions over one cycle
    folded = lifts < lifts.max() - 0.1
    assert np.array_equal(folded[:, 0], folded[:, 3]) and np.array_equal(folded[:, 1], folded[:, 2])
    assert not np.any(folded[:, 0] & folded[:, 1])
