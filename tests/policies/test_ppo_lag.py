"""PPO-Lagrangian: the multiplier's PID update, the cost advantages, and that the
multiplier, cost critic and cost statistics survive a checkpoint round trip."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from sim2real.policies.loading import load_run


def _bare(**kwargs):
    """A PPOLagrangian object with only the multiplier state (no env or networks)."""
    from sim2real.policies.ppo_lag import PPOLagrangian

    model = PPOLagrangian.__new__(PPOLagrangian)
    model.cost_limit = kwargs.get("limit", 1.0)
    model.lambda_lr, model.lambda_kp, model.lambda_kd = (
        kwargs.get("ki", 0.1),
        kwargs.get("kp", 0.0),
        kwargs.get("kd", 0.0),
    )
    model.lambda_max = kwargs.get("lambda_max", 100.0)
    model.pid_integral, model.previous_episode_cost, model.lagrange_multiplier = 0.0, 0.0, 0.0
    return model


def test_multiplier_rises_while_cost_exceeds_the_limit_and_falls_back() -> None:
    model = _bare(limit=1.0, ki=0.1)
    values = [model.update_multiplier(3.0) for _ in range(5)]
    np.testing.assert_allclose(values, [0.2, 0.4, 0.6, 0.8, 1.0])  # Ki * sum of errors
    falling = [model.update_multiplier(0.0) for _ in range(20)]
    assert falling[0] < values[-1] and falling[-1] == 0.0  # projected at zero, never negative
    assert model.pid_integral == 0.0


def test_pid_terms_and_bound() -> None:
    model = _bare(limit=0.0, ki=0.0, kp=2.0, kd=1.0, lambda_max=5.0)
    assert model.update_multiplier(1.0) == pytest.approx(2.0 * 1.0 + 1.0 * 1.0)
    assert model.update_multiplier(10.0) == 5.0  # clipped at lambda_max


def test_cost_advantages_are_gae_of_the_costs(trained_runs: dict[str, Path], puck) -> None:
    loaded = load_run(trained_runs["ppo_lag"], "last")
    model = loaded.model
    rng = np.random.default_rng(0)
    T, N = 5, 2

    class Buffer:
        observations = rng.normal(size=(T, N, 6)).astype(np.float32)
        episode_starts = np.array([[1, 1], [0, 0], [0, 1], [0, 0], [0, 0]], dtype=np.float32)

    model._rollout_costs = [rng.uniform(0, 1, N) for _ in range(T)]
    model._last_obs = rng.normal(size=(N, 6)).astype(np.float32)
    model._last_episode_starts = np.array([0.0, 1.0])
    model._cost_advantages(Buffer)
    with torch.no_grad():
        v = model.cost_critic(torch.as_tensor(Buffer.observations)).squeeze(-1).numpy()
        v_last = model.cost_critic(torch.as_tensor(model._last_obs)).squeeze(-1).numpy()
    g, lam = model.cost_gamma, model.cost_gae_lambda
    for n in range(N):  # the textbook recursion, one env at a time
        adv, nxt_v, nxt_nonterm = 0.0, v_last[n], 1.0 - model._last_episode_starts[n]
        for t in reversed(range(T)):
            delta = model._rollout_costs[t][n] + g * nxt_v * nxt_nonterm - v[t, n]
            adv = delta + g * lam * nxt_nonterm * adv
            assert model._cost_adv[t, n] == pytest.approx(adv, rel=1e-5, abs=1e-6)
            nxt_v, nxt_nonterm = v[t, n], 1.0 - Buffer.episode_starts[t, n]
    np.testing.assert_allclose(model._cost_returns, model._cost_adv + v, rtol=1e-5, atol=1e-6)


def test_multiplier_and_cost_critic_survive_the_checkpoint(trained_runs: dict[str, Path], puck) -> None:
    loaded = load_run(trained_runs["ppo_lag"], "last")
    model = loaded.model
    # The puck's distance always exceeds the tiny limit, so the multiplier has grown.
    assert model.lagrange_multiplier > 0.0 and len(model.ep_cost_buffer) > 0
    again = load_run(trained_runs["ppo_lag"], "last").model
    assert again.lagrange_multiplier == model.lagrange_multiplier
    assert again.pid_integral == model.pid_integral
    for a, b in zip(model.cost_critic.parameters(), again.cost_critic.parameters(), strict=True):
        assert torch.equal(a, b)
    from sim2real.policies.ppo_lag import PPOLagrangian

    assert isinstance(model, PPOLagrangian)


def test_sac_lag_relabels_sampled_rewards_with_the_current_multiplier(trained_runs: dict[str, Path], puck) -> None:
    from sim2real.policies.sac_lag import CostReplayBuffer, SACLagrangian

    loaded = load_run(trained_runs["sac_lag"], "last")
    model = loaded.model
    assert isinstance(model, SACLagrangian) and model.lagrange_multiplier > 0.0  # distance > limit all along
    model.load_replay_buffer(str(loaded.folder / "replay_buffer.pkl"))
    buf = model.replay_buffer
    assert isinstance(buf, CostReplayBuffer) and buf.costs[: buf.pos].sum() > 0  # costs were stored
    buf.lagrange_multiplier = 2.0
    np.random.seed(0)
    sample = buf._get_samples(np.arange(16))
    np.random.seed(0)
    envs = np.random.randint(0, buf.n_envs, size=16)
    expected = buf.rewards[np.arange(16), envs] - 2.0 * buf.costs[np.arange(16), envs]
    np.testing.assert_allclose(sample.rewards.numpy().ravel(), expected, rtol=1e-5, atol=1e-6)


def test_the_cost_critic_trains_on_the_policy_device_whatever_torch_defaults_to() -> None:
    """Issue 26, defect 5: its tensors were made on torch's default device, not the
    policy's, so ``device: cuda`` failed. Here the default is the meta device and the
    policy's is the CPU: every tensor must still land on the CPU."""
    from types import SimpleNamespace

    from stable_baselines3.common.torch_layers import create_mlp

    model = _bare()
    model.device = torch.device("cpu")
    model.cost_critic = torch.nn.Sequential(*create_mlp(3, 1, [8], torch.nn.Tanh))
    model.cost_optimizer = torch.optim.Adam(model.cost_critic.parameters(), lr=1e-3)
    model.n_epochs, model.batch_size, model.max_grad_norm = 2, 4, 1.0
    rng = np.random.default_rng(0)
    buf = SimpleNamespace(observations=rng.normal(size=(5, 2, 3)).astype(np.float32))
    model._cost_returns = rng.normal(size=(5, 2))
    with torch.device("meta"):
        loss = model._train_cost_critic(buf)
        values = model._cost_values(buf.observations)
    assert np.isfinite(loss) and values.shape == (5, 2) and np.isfinite(values).all()
