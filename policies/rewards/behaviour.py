"""The behaviour that drives the batched env while reward-model frames are collected
(``dataset.collect_frames``): a given policy, else the task's classical controller mixed
per episode with uniform random actions, some episodes driven to a decoy point instead
of the target (hard negatives: ``hard_negatives.py``)."""

from __future__ import annotations

from typing import Any

import numpy as np

from sim2real.errors import ConfigError
from sim2real.sim.core.layout import layout_slices

MIX_WEIGHTS = np.array([0.0, 0.5, 0.8, 1.0, 1.0])
"""Per-episode weight of the classical controller's action (the rest is uniform noise)."""

def behaviour_controller(venv: Any) -> Any | None:
    """The task's classical controller, if it has one for its action mode (else pure
    random actions)."""
    from sim2real.policies.classical import controller_for

    try:
        return controller_for(venv.task, venv.num_envs)
    except ConfigError:
        return None


def decoy_points(venv: Any, rng: np.random.Generator, ids: Any,
                 cameras: dict[str, tuple[float, float, float]] | None = None,
                 mix: dict[str, float] | None = None) -> np.ndarray | None:
    """Decoy points (world frame) for the envs ``ids`` of a reach task, drawn by kind from
    ``mix`` (:mod:`~sim2real.policies.rewards.hard_negatives`; default: anywhere in the
    workspace box); None for other tasks."""
    from sim2real.policies.rewards.hard_negatives import decoy_points as draw

    task = venv.task
    if "target_rel_ee" not in dict(task.observation_layout()) or not hasattr(task, "targets"):
        return None
    points, _ = draw(task.targets[np.asarray(ids)], task.workspace_low, task.workspace_high, cameras or {}, rng, mix)
    return points


def toward_decoys(obs: np.ndarray, venv: Any, decoys: np.ndarray, mask: np.ndarray, block: slice) -> np.ndarray:
    """Observations in which the target of the ``mask``ed envs is their decoy point
    (``block``: the ``target_rel_ee`` slice of the observation)."""
    out = obs.copy()
    out[mask, block] += decoys[mask] - venv.task.targets[mask]
    return out


class Behaviour:
    """The actions of :func:`collect_frames`: a given policy's, else the classical
    controller's mixed per episode with uniform noise (and driven to decoys)."""

    def __init__(self, venv: Any, n_envs: int, seed: int, policy: Any, decoy_fraction: float,
                 cameras: dict[str, tuple[float, float, float]] | None = None,
                 decoy_mix: dict[str, float] | None = None) -> None:
        self.venv, self.policy, self.decoy_fraction = venv, policy, decoy_fraction
        self.cameras, self.decoy_mix = cameras, decoy_mix
        self.rng = np.random.default_rng(seed)
        self.controller = behaviour_controller(venv) if policy is None else None
        self.weight = self.rng.choice(MIX_WEIGHTS, size=n_envs)
        self.decoy_rng = np.random.default_rng([seed, 1])
        self.decoys = (
            decoy_points(venv, self.decoy_rng, np.arange(n_envs), cameras, decoy_mix)
            if self.controller is not None and decoy_fraction > 0 else None
        )
        self.decoyed = self.decoy_rng.random(n_envs) < decoy_fraction
        self.target_block = layout_slices(venv.task.observation_layout()).get("target_rel_ee")

    def _driven(self, obs: np.ndarray) -> np.ndarray:
        """The observations the controller sees: decoyed envs see their decoy as the target."""
        # decoy_points gives decoys only to tasks whose observation has a target_rel_ee block.
        if self.decoys is None or self.target_block is None:
            return obs
        return toward_decoys(obs, self.venv, self.decoys, self.decoyed, self.target_block)

    def act(self, obs: np.ndarray) -> np.ndarray:
        """Actions ``[N, A]`` for observations ``[N, O]`` (not yet clipped)."""
        if self.policy is not None:
            return np.asarray(self.policy(obs), dtype=np.float32)
        noise = self.rng.uniform(-1.0, 1.0, size=(len(self.weight), self.venv.action_space.shape[0]))
        if self.controller is None:
            return noise
        return self.weight[:, None] * self.controller.act(self._driven(obs)) + (1 - self.weight[:, None]) * noise

    def new_episodes(self, done_ids: np.ndarray) -> None:
        """Draw a new mix weight (and decoy) for the envs whose episode ended; reset their controller."""
        for i in done_ids:
            self.weight[i] = self.rng.choice(MIX_WEIGHTS)
            if self.decoys is not None:
                points = decoy_points(self.venv, self.decoy_rng, [i], self.cameras, self.decoy_mix)
                assert points is not None  # the same task gave the first decoys
                self.decoys[i], self.decoyed[i] = points[0], self.decoy_rng.random() < self.decoy_fraction
        if len(done_ids) and self.controller is not None:
            self.controller.reset(done_ids)


