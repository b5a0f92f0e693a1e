"""N environments stepped as one batch, as a Stable-Baselines3 ``VecEnv``.

Physics for the whole batch runs in ``mujoco.rollout`` worker threads; Python
runs once per control step for all environments together. Finished
environments reset automatically (SB3 semantics: the returned observation is
the new episode's first, the last one is in ``info["terminal_observation"]``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import mujoco
import numpy as np
from stable_baselines3.common.vec_env.base_vec_env import VecEnv

from sim2real.sim.core.engine import Engine
from sim2real.sim.core.env import resolve_dr
from sim2real.sim.core.physics import engine_backend
from sim2real.sim.core.randomization import DomainRandomization
from sim2real.sim.core.rendering import OffscreenRenderer
from sim2real.sim.core.solver import SolverVariant
from sim2real.sim.core.task import Task


class BatchedVecEnv(VecEnv):
    """A batch of ``num_envs`` environments of one task.

    Args:
        task_cls: The task class.
        num_envs: Batch size.
        action_mode: One of ``task_cls.action_modes``.
        dr: Randomization preset name, dict or object (``None``: none).
        seed: Seed of the whole batch (per-env draws come from one generator).
        nthread: Rollout threads (default: all cores).
        camera, width, height: Used by :meth:`get_images`.
        privileged_obs: Append the privileged state (:meth:`Task.privileged`) to every
            observation, terminal ones included, for an asymmetric critic: the learner
            splits it off again and the deployed actor never sees it.
        physics: ``"mujoco"`` (CPU MuJoCo) or ``"warp"`` (MuJoCo Warp, float32, every
            environment in one set of kernels: the GPU path).
        task_options: Passed to the task constructor.
    """

    observation_space: gym.spaces.Box
    action_space: gym.spaces.Box

    def __init__(
        self,
        task_cls: type[Task],
        num_envs: int,
        action_mode: str | None = None,
        dr: str | DomainRandomization | dict | None = None,
        seed: int | None = None,
        nthread: int | None = None,
        camera: str | None = None,
        width: int = 240,
        height: int = 180,
        privileged_obs: bool = False,
        physics: str = "mujoco",
        solver: SolverVariant | None = None,
        **task_options: Any,
    ) -> None:

        self.task = task_cls(num_envs=num_envs, action_mode=action_mode, **task_options)
        self.engine = Engine(
            self.task,
            resolve_dr(task_cls, dr),
            seed=seed,
            nthread=nthread,
            solver=solver,
            backend=engine_backend(physics, num_envs),
        )
        self.engine.want_privileged = False  # on request only: see privileged()
        self.privileged_obs = bool(privileged_obs)
        self.task_obs_size = int(self.engine.obs_size)
        """The task's observation (what a robot measures), without any privileged part."""
        size = self.task_obs_size + (self.engine.priv_size if self.privileged_obs else 0)
        obs_space = gym.spaces.Box(-np.inf, np.inf, (size,), np.float32)
        act_space = gym.spaces.Box(-1.0, 1.0, (self.engine.act_size,), np.float32)
        self.render_mode = "rgb_array"  # before VecEnv.__init__, which reads it
        super().__init__(num_envs, obs_space, act_space)
        self._camera = camera or task_cls.render_camera
        self._size = (width, height)
        self._renderer: OffscreenRenderer | None = None
        self._render_data: mujoco.MjData | None = None
        self._actions: np.ndarray | None = None
        self._episode_return = np.zeros(num_envs)
        self._episode_len = np.zeros(num_envs, dtype=np.int64)

    # -- VecEnv API ------------------------------------------------------------
    def reset(self) -> np.ndarray:
        seeds = getattr(self, "_seeds", None)  # set by VecEnv.seed(); one generator serves the batch
        if seeds and seeds[0] is not None:
            self.engine.seed(seeds[0])
        self._reset_seeds()
        self.engine.reset()
        self._episode_return[:] = 0.0
        self._episode_len[:] = 0
        privileged = self.task.privileged(self.engine.phys)
        self.reset_infos = [
            {"dr": self.engine.dr_sampled[i], "task": self.task.task_state(i), "privileged": privileged[i]}
            for i in range(self.num_envs)
        ]
        return self._observation(self.engine.observe(), privileged)

    def step_async(self, actions: np.ndarray) -> None:
        self._actions = actions

    def step_wait(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[dict]]:
        out = self.engine.step(self._actions)
        r = out.result
        done = r.terminated | out.truncated
        self._episode_return += r.reward
        self._episode_len += 1
        obs = self._observation(out.obs)
        metrics = r.metrics
        infos: list[dict[str, Any]] = []
        for i in range(self.num_envs):
            info: dict[str, Any] = {
                "success": bool(r.success[i]),
                "metrics": {k: float(v[i]) for k, v in metrics.items()},
            }
            if done[i]:
                info["terminal_observation"] = obs[i].copy()
                info["TimeLimit.truncated"] = bool(out.truncated[i])
                info["is_success"] = bool(r.success[i])
                info["episode"] = {"r": float(self._episode_return[i]), "l": int(self._episode_len[i])}
                info["dr"] = self.engine.dr_sampled[i]
                info["task"] = self.task.task_state(i)
                if out.diverged[i]:
                    info["physics_diverged"] = True
            infos.append(info)
        ids = np.flatnonzero(done)
        if len(ids):
            self.engine.reset(ids)
            self._episode_return[ids] = 0.0
            self._episode_len[ids] = 0
            fresh = self._observation(self.engine.observe())
            obs[ids] = fresh[ids]
        return obs, r.reward.astype(np.float32), done, infos

    def _observation(self, obs: np.ndarray, privileged: np.ndarray | None = None) -> np.ndarray:
        """The task's observation, with the current privileged state appended if asked."""
        if not self.privileged_obs:
            return obs.astype(np.float32)
        priv = self.task.privileged(self.engine.phys) if privileged is None else privileged
        return np.concatenate([obs, priv], axis=1).astype(np.float32)

    def privileged(self) -> np.ndarray:
        """Privileged state ``[N, P]`` of the current step (asymmetric critics)."""
        return self.task.privileged(self.engine.phys)

    def close(self) -> None:
        self.engine.close()
        if self._renderer is not None:
            self._renderer.close()
            self._renderer = None

    def get_images(self) -> Sequence[np.ndarray | None]:
        return [self.render_env(i) for i in range(self.num_envs)]

    def render_env(self, i: int = 0) -> np.ndarray:
        """One frame of environment ``i`` from the task camera."""
        if self._renderer is None:
            self._renderer = OffscreenRenderer(self.engine.models[0], *self._size)
        if self._render_data is None:
            self._render_data = mujoco.MjData(self.engine.models[0])
        model = self.engine.load_env_into(i, self._render_data)
        for h in range(model.nhfield):
            self._renderer.upload_heightfield(model, h)
        return self._renderer.render(model, self._render_data, self._camera)

    def get_attr(self, attr_name: str, indices: Any = None) -> list[Any]:
        return [getattr(self, attr_name) for _ in self._get_indices(indices)]

    def set_attr(self, attr_name: str, value: Any, indices: Any = None) -> None:
        setattr(self, attr_name, value)

    def env_method(self, method_name: str, *args: Any, indices: Any = None, **kwargs: Any) -> list[Any]:
        return [getattr(self, method_name)(*args, **kwargs) for _ in self._get_indices(indices)]

    def env_is_wrapped(self, wrapper_class: type, indices: Any = None) -> list[bool]:
        return [False for _ in self._get_indices(indices)]
