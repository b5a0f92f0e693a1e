"""SAC-Lagrangian: SAC under an expected-cost constraint, with a PID-controlled multiplier.

The replay buffer keeps each transition's cost (a task metric, for the arm in
``ee_impedance`` mode the energy drawn beyond the tank) next to its reward. Every
sampled batch is relabelled with the *current* multiplier, ``r - lambda c``, so the
critics learn the Lagrangian return of the current saddle-point problem (one set of
critics; the relabelling keeps old transitions consistent as lambda moves). The
multiplier follows the recent training episodes' cost with the same PID update as
PPO-Lagrangian (:mod:`sim2real.policies.common.lagrangian`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from stable_baselines3 import SAC
from stable_baselines3.common.buffers import ReplayBuffer
from stable_baselines3.common.type_aliases import ReplayBufferSamples

from sim2real.policies.common.lagrangian import LagrangeMultiplier


class CostReplayBuffer(ReplayBuffer):
    """A replay buffer that also stores each transition's cost and returns rewards
    relabelled as ``r - lagrange_multiplier * c``.

    Args:
        cost_metric: Task metric (``info["metrics"][name]``) that is the cost.
        *args, **kwargs: Passed to SB3's :class:`ReplayBuffer`.
    """

    def __init__(self, *args: Any, cost_metric: str = "energy_violation", **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.cost_metric = cost_metric
        self.costs = np.zeros((self.buffer_size, self.n_envs), dtype=np.float32)
        self.lagrange_multiplier = 0.0

    def add(self, obs, next_obs, action, reward, done, infos: list[dict[str, Any]]) -> None:
        cost = np.array([float(i.get("metrics", {}).get(self.cost_metric, 0.0)) for i in infos], dtype=np.float32)
        if not np.all(np.isfinite(cost)):
            raise ValueError(f"non-finite cost {self.cost_metric!r} in a training step")
        self.costs[self.pos] = cost  # before super().add advances pos
        super().add(obs, next_obs, action, reward, done, infos)

    def _get_samples(self, batch_inds: np.ndarray, env=None) -> ReplayBufferSamples:
        envs = np.random.randint(0, high=self.n_envs, size=(len(batch_inds),))
        if self.optimize_memory_usage:
            next_obs = self.observations[(batch_inds + 1) % self.buffer_size, envs, :]
        else:
            next_obs = self.next_observations[batch_inds, envs, :]
        rewards = self.rewards[batch_inds, envs] - self.lagrange_multiplier * self.costs[batch_inds, envs]
        data = (
            self._normalize_array(self.observations[batch_inds, envs, :], env),
            self.actions[batch_inds, envs, :],
            self._normalize_array(next_obs, env),
            # Time-limit truncations are not terminal (bootstrapped), as in SB3.
            (self.dones[batch_inds, envs] * (1 - self.timeouts[batch_inds, envs])).reshape(-1, 1),
            self._normalize_reward(rewards.reshape(-1, 1), env),
        )
        return ReplayBufferSamples(*tuple(map(self.to_torch, data)))

    def _normalize_array(self, obs: np.ndarray, env=None) -> np.ndarray:
        """``_normalize_obs`` of an array observation (this buffer holds Box observations;
        only the dicts of Dict spaces normalize to dicts)."""
        out = self._normalize_obs(obs, env)
        if not isinstance(out, np.ndarray):
            raise TypeError(f"normalizing an array observation gave a {type(out).__name__}")
        return out


class SACLagrangian(LagrangeMultiplier, SAC):
    """SB3 SAC with a :class:`CostReplayBuffer` and a PID-controlled multiplier.

    Args:
        cost_limit: Allowed expected cost per episode.
        lambda_init, lambda_lr, lambda_kp, lambda_kd, lambda_max: The multiplier's PID
            (as :class:`~sim2real.policies.ppo_lag.PPOLagrangian`); updated once per
            ``lambda_every`` environment steps.
        lambda_every: Environment steps between multiplier updates.
        *args, **kwargs: Passed to :class:`stable_baselines3.SAC` (``cost_metric`` goes
            to the replay buffer through ``replay_buffer_kwargs``).
    """

    def __init__(
        self,
        *args: Any,
        cost_limit: float = 0.0,
        lambda_init: float = 0.0,
        lambda_lr: float = 0.05,
        lambda_kp: float = 0.0,
        lambda_kd: float = 0.0,
        lambda_max: float = 100.0,
        lambda_every: int = 2048,
        **kwargs: Any,
    ) -> None:
        self.init_multiplier(cost_limit, lambda_init, lambda_lr, lambda_kp, lambda_kd, lambda_max)
        self.lambda_every = int(lambda_every)
        self._next_lambda_update = 0
        kwargs["replay_buffer_class"] = CostReplayBuffer
        super().__init__(*args, **kwargs)
        self._running_cost = np.zeros(getattr(self, "n_envs", 1))

    def _update_info_buffer(self, infos: list[dict[str, Any]], dones: np.ndarray | None = None) -> None:
        super()._update_info_buffer(infos, dones)
        if dones is None:
            return
        buffer = self.replay_buffer  # a CostReplayBuffer once set up (__init__ sets the class)
        metric = buffer.cost_metric if isinstance(buffer, CostReplayBuffer) else "energy_violation"
        if len(getattr(self, "_running_cost", ())) != len(infos):
            self._running_cost = np.zeros(len(infos))
        self._running_cost += [float(i.get("metrics", {}).get(metric, 0.0)) for i in infos]
        for idx, done in enumerate(dones):
            if done:
                self.ep_cost_buffer.append(float(self._running_cost[idx]))
                self._running_cost[idx] = 0.0

    def train(self, gradient_steps: int, batch_size: int = 64) -> None:
        if self.num_timesteps >= self._next_lambda_update and self.ep_cost_buffer:
            cost = float(np.mean(self.ep_cost_buffer)) if self.ep_cost_buffer else 0.0
            self.update_multiplier(cost)
            self._next_lambda_update = self.num_timesteps + self.lambda_every
            self.logger.record("rollout/ep_cost_mean", cost)
        if isinstance(self.replay_buffer, CostReplayBuffer):  # always, once set up (__init__ sets the class)
            self.replay_buffer.lagrange_multiplier = self.lagrange_multiplier
        self.logger.record("train/lagrange_multiplier", self.lagrange_multiplier)
        super().train(gradient_steps, batch_size)

    def _excluded_save_params(self) -> list[str]:
        return [*super()._excluded_save_params(), "_running_cost"]
