"""PPO-Lagrangian: PPO that keeps the expected episode cost under a limit.

The constrained problem ``max_pi J_r(pi)  s.t.  J_c(pi) <= d`` becomes the saddle
point ``min_{lambda >= 0} max_pi J_r - lambda (J_c - d)`` (Ray, Achiam and Amodei,
"Benchmarking Safe Exploration in Deep RL", 2019). Per update:

1. the rollout records each step's cost (a task metric, ``info["metrics"][name]``;
   for the arm in ``ee_impedance`` mode the energy drawn beyond the tank,
   ``energy_violation``), and a separate cost critic gives cost advantages by GAE;
2. the multiplier follows the episode cost of the recent training episodes with
   PID control (Stooke, Achiam and Abbeel, "Responsive Safety in RL by PID
   Lagrangian Methods", ICML 2020)::

       e = J_c - d,   I <- max(0, I + e),   lambda = max(0, Kp e + Ki I + Kd max(0, J_c - J_c_prev))

   ``Kp = Kd = 0`` is the plain gradient-ascent Lagrangian with step ``Ki``;
3. PPO's clipped objective runs on the combined advantage
   ``(A_r - lambda A_c) / (1 + lambda)`` (the normalisation keeps the step size
   comparable as lambda grows);
4. the cost critic regresses the cost returns.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch as th
from gymnasium import spaces
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.torch_layers import create_mlp

from sim2real.policies.common.lagrangian import LagrangeMultiplier
from sim2real.policies.ppo.ppo import AdaptivePPO


class _CostTap(BaseCallback):
    """Forwards every call to the trainer's callback and hands each step's infos
    to the algorithm (SB3 has no other hook between ``env.step`` and the buffer)."""

    def __init__(self, inner: BaseCallback, sink: Any) -> None:
        super().__init__()
        self.inner, self.sink = inner, sink
        self._step_locals: dict[str, Any] = {}

    def update_locals(self, locals_: dict[str, Any]) -> None:
        self._step_locals = locals_
        self.inner.update_locals(locals_)

    def on_rollout_start(self) -> None:
        self.inner.on_rollout_start()

    def on_step(self) -> bool:
        self.sink(self._step_locals["infos"], self._step_locals["dones"])
        return self.inner.on_step()

    def on_rollout_end(self) -> None:
        self.inner.on_rollout_end()

    def _on_step(self) -> bool:  # pragma: no cover - on_step is overridden
        return True


class PPOLagrangian(LagrangeMultiplier, AdaptivePPO):
    """:class:`AdaptivePPO` with a cost critic and a PID-controlled Lagrange multiplier.

    Args:
        cost_metric: Task metric that is the per-step cost.
        cost_limit: ``d``, the allowed expected cost per episode.
        lambda_init: Initial multiplier.
        lambda_lr: ``Ki``, the integral gain (the multiplier's learning rate).
        lambda_kp, lambda_kd: Proportional and derivative gains (0: plain Lagrangian).
        lambda_max: Upper bound of the multiplier.
        cost_gamma, cost_gae_lambda: Discount and GAE parameter of the cost.
        *args, **kwargs: Passed to :class:`AdaptivePPO`.
    """

    def __init__(
        self,
        *args: Any,
        cost_metric: str = "energy_violation",
        cost_limit: float = 0.0,
        lambda_init: float = 0.0,
        lambda_lr: float = 0.05,
        lambda_kp: float = 0.0,
        lambda_kd: float = 0.0,
        lambda_max: float = 100.0,
        cost_gamma: float = 0.99,
        cost_gae_lambda: float = 0.95,
        **kwargs: Any,
    ) -> None:
        self.cost_metric = cost_metric
        self.init_multiplier(cost_limit, lambda_init, lambda_lr, lambda_kp, lambda_kd, lambda_max)
        self.cost_gamma, self.cost_gae_lambda = cost_gamma, cost_gae_lambda
        super().__init__(*args, **kwargs)

    # -- model -------------------------------------------------------------------
    def _setup_model(self) -> None:
        super()._setup_model()
        space = self.observation_space
        if not isinstance(space, spaces.Box):  # the cost critic reads flat observation vectors
            raise TypeError(f"PPO-Lagrangian needs a Box observation space, not {type(space).__name__}")
        obs_dim = int(np.prod(space.shape))
        width = list(self.policy_kwargs.get("net_arch", {}).get("vf", [256, 256]))
        act = self.policy_kwargs.get("activation_fn", th.nn.Tanh)
        self.cost_critic = th.nn.Sequential(*create_mlp(obs_dim, 1, width, act)).to(self.device)
        lr = getattr(self, "current_lr", None) or 3e-4
        self.cost_optimizer = th.optim.Adam(self.cost_critic.parameters(), lr=lr)
        self._rollout_costs: list[np.ndarray] = []
        self._running_cost = np.zeros(self.n_envs)

    def _get_torch_save_params(self) -> tuple[list[str], list[str]]:
        state_dicts, tensors = super()._get_torch_save_params()
        return [*state_dicts, "cost_critic", "cost_optimizer"], tensors

    def _excluded_save_params(self) -> list[str]:
        return [*super()._excluded_save_params(), "_rollout_costs", "_running_cost", "cost_critic", "cost_optimizer"]

    def _cost_values(self, obs: np.ndarray) -> np.ndarray:
        with th.no_grad():
            t = th.as_tensor(obs.reshape(-1, obs.shape[-1]), device=self.device).float()
            return self.cost_critic(t).cpu().numpy().reshape(obs.shape[:-1])

    # -- rollouts ----------------------------------------------------------------
    def _record_costs(self, infos: list[dict], dones: np.ndarray) -> None:
        cost = np.array([float(i.get("metrics", {}).get(self.cost_metric, 0.0)) for i in infos])
        if not np.all(np.isfinite(cost)):
            raise ValueError(f"non-finite cost {self.cost_metric!r} in a training step")
        self._running_cost += cost
        booked = cost.copy()
        for idx, done in enumerate(dones):
            if not done:
                continue
            self.ep_cost_buffer.append(float(self._running_cost[idx]))
            self._running_cost[idx] = 0.0
            terminal = infos[idx].get("terminal_observation")
            if terminal is not None and infos[idx].get("TimeLimit.truncated", False):
                # Truncation is not the end of the cost stream: bootstrap, as SB3 does for rewards.
                booked[idx] += self.cost_gamma * float(self._cost_values(np.asarray(terminal)[None])[0])
        self._rollout_costs.append(booked)

    def collect_rollouts(self, env, callback, rollout_buffer, n_rollout_steps) -> bool:
        self._rollout_costs = []
        if len(self._running_cost) != env.num_envs:
            self._running_cost = np.zeros(env.num_envs)
        done = super().collect_rollouts(env, _CostTap(callback, self._record_costs), rollout_buffer, n_rollout_steps)
        if not done or len(self._rollout_costs) != rollout_buffer.buffer_size:
            return done
        self._cost_advantages(rollout_buffer)
        return done

    def _cost_advantages(self, buf) -> None:
        costs = np.stack(self._rollout_costs)  # [T, N]
        values = self._cost_values(buf.observations)
        last_values = self._cost_values(np.asarray(self._last_obs))
        last_dones = np.asarray(self._last_episode_starts, dtype=float)
        adv = np.zeros_like(costs)
        gae = np.zeros(costs.shape[1])
        for t in reversed(range(len(costs))):
            if t == len(costs) - 1:
                nonterminal, next_values = 1.0 - last_dones, last_values
            else:
                nonterminal, next_values = 1.0 - buf.episode_starts[t + 1], values[t + 1]
            delta = costs[t] + self.cost_gamma * next_values * nonterminal - values[t]
            gae = delta + self.cost_gamma * self.cost_gae_lambda * nonterminal * gae
            adv[t] = gae
        self._cost_adv, self._cost_returns = adv, adv + values

    # -- updates -----------------------------------------------------------------
    def train(self) -> None:
        buf = self.rollout_buffer
        episode_cost = float(np.mean(self.ep_cost_buffer)) if self.ep_cost_buffer else 0.0
        lam = self.update_multiplier(episode_cost)
        if hasattr(self, "_cost_adv"):
            buf.advantages = (buf.advantages - lam * self._cost_adv) / (1.0 + lam)
        super().train()
        loss = self._train_cost_critic(buf) if hasattr(self, "_cost_returns") else float("nan")
        self.logger.record("train/lagrange_multiplier", lam)
        self.logger.record("train/cost_value_loss", loss)
        self.logger.record("rollout/ep_cost_mean", episode_cost)
        self.logger.record("rollout/cost_limit", self.cost_limit)

    def _train_cost_critic(self, buf) -> float:
        # On the policy's device, whatever torch's default device is (device: cuda).
        obs = th.as_tensor(buf.observations.reshape(-1, buf.observations.shape[-1]), device=self.device).float()
        target = th.as_tensor(self._cost_returns.reshape(-1), dtype=th.float32, device=self.device)
        for group in self.cost_optimizer.param_groups:
            group["lr"] = getattr(self, "current_lr", group["lr"])
        losses = []
        for _ in range(self.n_epochs):
            for idx in th.randperm(len(obs), device=self.device).split(self.batch_size):
                loss = th.nn.functional.mse_loss(self.cost_critic(obs[idx]).squeeze(-1), target[idx])
                self.cost_optimizer.zero_grad()
                loss.backward()
                th.nn.utils.clip_grad_norm_(self.cost_critic.parameters(), self.max_grad_norm)
                self.cost_optimizer.step()
                losses.append(loss.item())
        return float(np.mean(losses))
