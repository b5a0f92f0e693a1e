"""Asymmetric actor-critic (``net.critic_privileged``): the critic reads the
privileged state the environment appends, the actor and every export only the
observation; loading, stochastic evaluation and resume still work."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from policy_helpers import PUCK_ID, tiny_config

from sim2real.policies.common.evaluation import Evaluator
from sim2real.policies.loading import load_run
from sim2real.sim import make_vec
from sim2real.sim.core.errors import ConfigError

OBS, PRIV = 6, 3  # PuckTask: pos, vel, target; privileged: the sensor's 3-D position


def test_vec_env_appends_the_privileged_state_also_to_terminal_observations(puck) -> None:
    plain = make_vec(PUCK_ID, 3, seed=0)
    env = make_vec(PUCK_ID, 3, seed=0, privileged_obs=True)
    assert env.observation_space.shape == (OBS + PRIV,) and env.task_obs_size == OBS
    first = env.reset()
    np.testing.assert_array_equal(first[:, :OBS], plain.reset())
    np.testing.assert_allclose(first[:, OBS:], env.privileged(), atol=1e-6)
    terminal_seen = False
    for _ in range(400):  # the puck's episodes end within this (time limit or leaving the table)
        action = np.ones((3, 2), dtype=np.float32)
        obs, _, done, infos = env.step(action)
        plain_obs, *_ = plain.step(action)
        np.testing.assert_array_equal(obs[:, :OBS], plain_obs)
        assert np.all(np.isfinite(obs))
        for i in np.flatnonzero(done):
            terminal = infos[i]["terminal_observation"]
            assert terminal.shape == (OBS + PRIV,)
            # The terminal step's own privileged state (the puck's position, observed with
            # 0.01 noise), not the next episode's start.
            np.testing.assert_allclose(terminal[OBS:OBS + 2], terminal[:2], atol=0.06)
            assert np.linalg.norm(terminal[OBS:OBS + 2] - obs[i, OBS:OBS + 2]) > 0.06
            terminal_seen = True
        np.testing.assert_allclose(obs[:, OBS:], env.privileged(), atol=1e-6)  # the new episodes' state
    assert terminal_seen


def test_critic_reads_the_privileged_state_and_the_exported_actor_does_not(puck, tmp_path: Path) -> None:
    from sim2real.policies.deploy import OnnxPolicy
    from sim2real.policies.export.exporter import export_policy
    from sim2real.policies.trainer import train

    cfg = tiny_config("ppo", {"net.critic_privileged": True})
    train(cfg, tmp_path / "run", progress=False)
    loaded = load_run(tmp_path / "run", "last")
    policy = loaded.model.policy
    assert loaded.model.observation_space.shape == (OBS + PRIV,) and policy.actor_obs_size == OBS
    assert loaded.vecnorm.obs_rms.mean.shape == (OBS + PRIV,)

    rng = np.random.default_rng(0)
    obs = rng.normal(0, 0.5, (16, OBS)).astype(np.float32)
    priv_a, priv_b = (rng.normal(0, 0.5, (16, PRIV)).astype(np.float32) for _ in range(2))
    full_a, full_b = np.hstack([obs, priv_a]), np.hstack([obs, priv_b])
    act_a, _ = loaded.model.predict(loaded.vecnorm.normalize_obs(full_a), deterministic=True)
    act_b, _ = loaded.model.predict(loaded.vecnorm.normalize_obs(full_b), deterministic=True)
    np.testing.assert_array_equal(act_a, act_b)  # the actor ignores the privileged part
    with torch.no_grad():
        value_a = policy.predict_values(torch.as_tensor(loaded.vecnorm.normalize_obs(full_a)))
        value_b = policy.predict_values(torch.as_tensor(loaded.vecnorm.normalize_obs(full_b)))
    assert not torch.allclose(value_a, value_b)  # the critic reads it
    ours = loaded.policy()(obs)  # the deployable actor takes the observation alone
    assert np.max(np.abs(ours - np.clip(act_a, -1, 1))) <= 1e-5

    ev = Evaluator(puck, n_envs=2, dr="none", seed=0)
    assert ev.run(loaded.policy(), episodes=2).episodes == 2
    assert ev.run(loaded.policy(deterministic=False), episodes=2).episodes == 2

    exported = export_policy(tmp_path / "run", "onnx", tmp_path / "export", which="last")
    assert exported.metadata["observation"]["size"] == OBS
    assert len(exported.metadata["observation"]["normalization"]["mean"]) == OBS
    assert np.max(np.abs(OnnxPolicy(exported.policy_path)(obs) - ours)) <= 1e-5


def test_resume_keeps_the_asymmetric_critic(puck, tmp_path: Path) -> None:
    from sim2real.policies.trainer import train

    first = tiny_config("ppo", {"net.critic_privileged": True, "total_steps": 512})
    train(first, tmp_path / "run", progress=False)
    before = load_run(tmp_path / "run", "last").model.policy.state_dict()
    result = train(tiny_config("ppo", {"net.critic_privileged": True}), tmp_path / "run", resume=True, progress=False)
    assert result.resumed_from == 512 and result.steps == 1024
    after = load_run(tmp_path / "run", "last").model.policy
    assert after.actor_obs_size == OBS and set(after.state_dict()) == set(before)


def test_only_ppo_takes_a_privileged_critic(puck) -> None:
    for algo in ("sac", "td3", "ppo_lag"):
        with pytest.raises(ConfigError, match="critic_privileged"):
            tiny_config(algo, {"net.critic_privileged": True})
