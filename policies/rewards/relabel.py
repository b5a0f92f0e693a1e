"""Recomputing an off-policy replay buffer's rewards after the reward model is refined.

``reward.refine.every`` refines the reward model on the policy's own states during
training (``refine.py``). SAC and TD3 then learn from a replay buffer whose rewards the
*old* model gave: the hole the refinement closed stays open in every stored
transition, which is why refinement alone did not teach (docs/vlm_rewards.md, run BR).
:class:`RelabelReplayBuffer` keeps each transition's reward frame (the frame the reward
model scored, ``info["reward_frame"]`` from ``ClipRewardVecEnv``) beside it, and after
each round the env calls :meth:`RelabelReplayBuffer.relabel` with the refined model, so
every stored reward is the current model's.

Frames are kept in lazily allocated blocks (a 96 px frame is 27 KB, so a 200k buffer
holds up to 5.5 GB of them) and are not pickled with ``last`` checkpoints: after
``train --resume`` the transitions stored before the resume keep the rewards they had
(:attr:`RelabelReplayBuffer.frames_kept` says how many can still be relabelled).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from stable_baselines3.common.buffers import ReplayBuffer

FRAME_KEY = "reward_frame"
"""The info key under which ``ClipRewardVecEnv`` hands each transition's reward frame on."""
BLOCK = 2048
"""Buffer rows (each ``n_envs`` transitions) per block of frames."""


@dataclass
class RelabelRound:
    """What one relabelling did: transitions rescored, how far the rewards moved, time."""

    transitions: int
    mean_abs_change: float
    mean_reward_before: float
    mean_reward_after: float
    seconds: float


class RelabelReplayBuffer(ReplayBuffer):
    """SB3's ``ReplayBuffer`` that also keeps each transition's reward frame, so its
    rewards can be recomputed (:meth:`relabel`)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._blocks: dict[int, np.ndarray] = {}
        self.has_frame = np.zeros((self.buffer_size, self.n_envs), dtype=bool)

    def add(self, obs: np.ndarray, next_obs: np.ndarray, action: np.ndarray, reward: np.ndarray,
            done: np.ndarray, infos: list[dict[str, Any]]) -> None:
        row = self.pos
        frames: list[np.ndarray] = [info[FRAME_KEY] for info in infos if info.get(FRAME_KEY) is not None]
        if len(frames) == len(infos):
            stacked = np.stack(frames)
            block = self._blocks.get(row // BLOCK)
            if block is None:
                block = self._blocks[row // BLOCK] = np.zeros((BLOCK, self.n_envs, *stacked.shape[1:]), np.uint8)
            block[row % BLOCK] = stacked
            self.has_frame[row] = True
        else:  # a transition without its frame cannot be relabelled; it keeps its reward
            self.has_frame[row] = False
        super().add(obs, next_obs, action, reward, done, infos)

    @property
    def frames_kept(self) -> int:
        """Stored transitions whose reward frame is kept (those :meth:`relabel` rescores)."""
        return int(self.has_frame[: self.size()].sum())

    def relabel(self, score: Callable[[np.ndarray], np.ndarray], batch_size: int = 512) -> RelabelRound:
        """Replace every stored reward that has its frame by ``score(frames)`` (``uint8
        [B, H, W, 3]`` -> rewards ``[B]``, the shift included), in batches."""
        t0 = time.perf_counter()
        rows, envs = np.nonzero(self.has_frame[: self.size()])
        before = self.rewards[rows, envs].copy()
        after = np.empty_like(before)
        for start in range(0, len(rows), batch_size):
            r, e = rows[start:start + batch_size], envs[start:start + batch_size]
            frames = np.stack([self._blocks[i // BLOCK][i % BLOCK, j] for i, j in zip(r, e)])
            values = np.asarray(score(frames), dtype=np.float32).reshape(-1)
            if len(values) != len(frames) or not np.all(np.isfinite(values)):
                raise ValueError(f"relabelling got {len(values)} rewards (finite: {np.isfinite(values).all()}) "
                                 f"for {len(frames)} frames; the buffer keeps its rewards")
            after[start:start + len(values)] = values
        self.rewards[rows, envs] = after  # all or nothing: a failed batch above changes no reward
        n = len(rows)
        return RelabelRound(
            transitions=n,
            mean_abs_change=float(np.abs(after - before).mean()) if n else 0.0,
            mean_reward_before=float(before.mean()) if n else 0.0,
            mean_reward_after=float(after.mean()) if n else 0.0,
            seconds=round(time.perf_counter() - t0, 2),
        )

    def __getstate__(self) -> dict[str, Any]:
        # Frames stay out of checkpoints (GBs); the transitions they belonged to keep their rewards.
        state = self.__dict__.copy()
        state["_blocks"] = {}
        state["has_frame"] = np.zeros_like(self.has_frame)
        return state


def connect_relabelling(env: Any, model: Any) -> bool:
    """Have the reward-refining env in ``env``'s wrapper chain relabel ``model``'s replay
    buffer after each refinement round; False when there is nothing to connect (no
    refinement, or no :class:`RelabelReplayBuffer`)."""
    buffer = getattr(model, "replay_buffer", None)
    while env is not None and not hasattr(env, "relabel_targets"):
        env = getattr(env, "venv", None)
    if env is None or getattr(env, "refiner", None) is None or not isinstance(buffer, RelabelReplayBuffer):
        return False
    env.relabel_targets[:] = [buffer.relabel]
    return True
