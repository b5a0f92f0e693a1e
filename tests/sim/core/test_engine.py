"""The engine on a small real MuJoCo task: determinism, batching, latency,
truncation, pushes, bad input."""

from __future__ import annotations

import numpy as np
import pytest
from puck import PuckDR, PuckTask

from sim2real.sim.core.engine import Engine
from sim2real.sim.core.env import SimEnv
from sim2real.sim.core.errors import ActionError, ConfigError, Sim2RealError
from sim2real.sim.core.randomization import Range
from sim2real.sim.core.vec_env import BatchedVecEnv


def rollout_obs(env: SimEnv, seed: int, steps: int = 20) -> np.ndarray:
    obs, _ = env.reset(seed=seed)
    out = [obs]
    rng = np.random.default_rng(123)
    for _ in range(steps):
        obs, *_ = env.step(rng.uniform(-0.3, 0.3, 2))
        out.append(obs)
    return np.array(out)


def test_same_seed_same_trajectory_and_different_seed_differs() -> None:
    a = rollout_obs(SimEnv(PuckTask, dr="train"), seed=7)
    b = rollout_obs(SimEnv(PuckTask, dr="train"), seed=7)
    c = rollout_obs(SimEnv(PuckTask, dr="train"), seed=8)
    np.testing.assert_array_equal(a, b)
    assert not np.allclose(a, c)


def test_batched_rollout_matches_single_env_physics() -> None:
    """Env 0 of a batch resets with the same draws as a single env and the same
    physics, so both backends produce the same trajectory."""
    single = SimEnv(PuckTask, seed=3)
    batch = BatchedVecEnv(PuckTask, 4, seed=3, nthread=2)
    obs_s, _ = single.reset()
    obs_b = batch.reset()
    np.testing.assert_allclose(obs_s, obs_b[0], atol=1e-12)
    actions = np.random.default_rng(0).uniform(-0.4, 0.4, (15, 2))
    for a in actions:
        obs_s, *_ = single.step(a)
        obs_b, *_ = batch.step(np.tile(a, (4, 1)))
    np.testing.assert_allclose(obs_s, obs_b[0], atol=1e-9)


def test_control_step_runs_decimation_physics_steps() -> None:
    env = SimEnv(PuckTask)
    env.reset(seed=0)
    env.step(np.zeros(2))
    assert env.data.time == pytest.approx(PuckTask.control_dt)


def test_time_limit_truncates_and_never_terminates() -> None:
    env = SimEnv(PuckTask)
    env.reset(seed=0)
    n = int(PuckTask.episode_seconds / PuckTask.control_dt)
    for k in range(n):
        _, _, terminated, truncated, info = env.step(np.zeros(2))
        assert not terminated
        assert truncated == (k == n - 1)
    assert "is_success" in info
    with pytest.raises(Sim2RealError, match="reset"):
        env.step(np.zeros(2))


def test_falling_off_terminates_without_truncation() -> None:
    env = SimEnv(PuckTask)
    env.reset(seed=0)
    for _ in range(200):
        _, _, terminated, truncated, _ = env.step(np.ones(2))
        if terminated or truncated:
            break
    assert terminated and not truncated


@pytest.mark.parametrize("bad", [np.zeros(3), np.zeros((2, 2)), [np.nan, 0.0], [0.0, np.inf]])
def test_bad_actions_raise_clear_errors(bad: object) -> None:
    env = SimEnv(PuckTask)
    env.reset(seed=0)
    with pytest.raises(ActionError, match=r"shape|non-finite"):
        env.step(bad)
    # the environment is untouched and still usable
    env.step(np.zeros(2))


def test_actions_are_clipped_to_unit_box() -> None:
    a, b = SimEnv(PuckTask), SimEnv(PuckTask)
    a.reset(seed=1)
    b.reset(seed=1)
    oa, *_ = a.step(np.array([5.0, -5.0]))
    ob, *_ = b.step(np.array([1.0, -1.0]))
    np.testing.assert_array_equal(oa, ob)


def test_latency_delays_actuation_by_whole_control_steps() -> None:
    dr = PuckDR(latency_steps=(2, 2))
    env = SimEnv(PuckTask, dr=dr)
    env.reset(seed=0)
    moved = []
    for _ in range(4):
        obs, *_ = env.step(np.array([1.0, 0.0]))
        moved.append(abs(obs[2]) > 1e-6)  # x velocity
    assert moved == [False, False, True, True]


def test_pushes_kick_the_root_velocity() -> None:
    dr = PuckDR(push_velocity=Range(0.5, 0.5), push_interval_s=0.1)
    env = SimEnv(PuckTask, dr=dr)
    env.reset(seed=0)
    speeds = []
    for _ in range(5):
        obs, *_ = env.step(np.zeros(2))
        speeds.append(np.linalg.norm(obs[2:4]))
    assert speeds[3] < 0.05 < speeds[4]  # the 5th control step (0.1 s) carries the kick


def test_observation_noise_only_when_enabled() -> None:
    quiet = SimEnv(PuckTask, dr=PuckDR(obs_noise_scale=0.0))
    noisy = SimEnv(PuckTask, dr=PuckDR(obs_noise_scale=1.0))
    q, _ = quiet.reset(seed=0)
    n, _ = noisy.reset(seed=0)
    assert not np.allclose(q, n)
    assert np.abs(q - n).max() < 0.1


def test_action_mode_validation() -> None:
    with pytest.raises(ConfigError, match="action_mode"):
        SimEnv(PuckTask, action_mode="teleport")
    env = SimEnv(PuckTask, action_mode="half_force")
    assert env.task.action_mode == "half_force"


def test_control_dt_must_be_multiple_of_physics_dt() -> None:
    class Odd(PuckTask):
        control_dt = 0.0123

    with pytest.raises(ConfigError, match="control_dt"):
        Engine(Odd(num_envs=1))


def test_vec_env_autoreset_reports_terminal_observation_and_episode() -> None:
    env = BatchedVecEnv(PuckTask, 3, seed=0)
    env.reset()
    done_seen = False
    for _ in range(60):
        obs, _, done, infos = env.step(np.ones((3, 2)))
        if done.any():
            i = int(np.flatnonzero(done)[0])
            assert "terminal_observation" in infos[i]
            assert infos[i]["episode"]["l"] > 0
            assert not np.allclose(obs[i], infos[i]["terminal_observation"])
            done_seen = True
            break
    assert done_seen


def test_vec_env_works_with_stable_baselines3_ppo() -> None:
    from stable_baselines3 import PPO

    env = BatchedVecEnv(PuckTask, 4, seed=0, dr="train")
    from stable_baselines3.common.logger import Logger

    model = PPO("MlpPolicy", env, n_steps=16, batch_size=32, n_epochs=1, verbose=0, device="cpu")
    model.set_logger(Logger(None, []))  # without one, learn() leaves an empty /tmp/SB3-<date> folder
    model.learn(total_timesteps=128)
    assert model.num_timesteps >= 128


def test_rendering_gives_frames_of_the_requested_size() -> None:
    env = SimEnv(PuckTask, render_mode="rgb_array", width=160, height=120)
    env.reset(seed=0)
    frame = env.render()
    assert frame.shape == (120, 160, 3) and frame.dtype == np.uint8 and frame.std() > 1
    vec = BatchedVecEnv(PuckTask, 2, seed=0, width=64, height=48)
    vec.reset()
    assert vec.render_env(1).shape == (48, 64, 3)


@pytest.mark.parametrize("num_envs", [1, 2])
def test_physics_blow_up_ends_the_episode(num_envs: int) -> None:
    """A velocity so large MuJoCo resets the simulation itself (silently, inside
    rollout) must end that env's episode, for both backends."""
    engine = Engine(PuckTask(num_envs=num_envs), seed=0)
    engine.reset()
    engine.step(np.zeros((num_envs, 2)))
    engine.phys.qvel[0, 0] = 1e12  # damping force 5e11 N on a 0.5 kg puck: qacc far beyond mjMAXVAL
    if engine.backend == "step":
        engine.data.qvel[0] = 1e12
    out = engine.step(np.zeros((num_envs, 2)))
    assert out.diverged[0] and out.result.terminated[0]
    assert not out.diverged[1:].any()


def test_reseeding_one_env_reproduces_its_noisy_trajectory() -> None:
    env = SimEnv(PuckTask, dr="train")
    a = rollout_obs(env, seed=5)
    b = rollout_obs(env, seed=5)  # same instance, reseeded through reset(seed=...)
    np.testing.assert_array_equal(a, b)
