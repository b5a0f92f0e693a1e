"""Observation noise of a batch: standard normal draws times each entry's scale.

Training draws from the engine's one stream in blocks (one generator call per 256
steps instead of one per step). A paired evaluation draws each environment's noise from
its episode's own generator, once per control step: observing again after some
environments reset redraws only theirs, so an environment's draws do not depend on when
the others reset or which others share its batch (``eval --workers`` relies on it).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

BLOCK = 256
"""Steps of noise drawn per generator call from the shared stream."""


class ObservationNoise:
    """Noise ``[B, O]`` to add to each observation.

    Args:
        scale: Standard deviation of each observation entry ``[O]``.
        num_envs: Batch size.
    """

    def __init__(self, scale: np.ndarray, num_envs: int) -> None:
        self.scale = np.asarray(scale, dtype=np.float64)
        self.num_envs = num_envs
        self._block = np.zeros((0, num_envs, len(self.scale)))
        self._cursor = 0
        self._episode = np.zeros((num_envs, len(self.scale)))
        self._due = np.ones(num_envs, dtype=bool)

    def new_step(self) -> None:
        """Every env observes a new state: the next per-episode draws are due."""
        self._due[:] = True

    def new_episode(self, env_id: int) -> None:
        """Env ``env_id`` was reset: its next observation gets a fresh per-episode draw."""
        self._due[env_id] = True

    def restart_stream(self) -> None:
        """The shared generator was replaced: drop the block drawn from the old one."""
        self._cursor = len(self._block)

    def sample(self, rng: np.random.Generator | Sequence[np.random.Generator]) -> np.ndarray:
        """Scaled noise ``[B, O]`` from the shared stream or one generator per env."""
        if isinstance(rng, np.random.Generator):
            if self._cursor >= len(self._block):
                self._block = rng.normal(size=(BLOCK, self.num_envs, len(self.scale)))
                self._cursor = 0
            self._cursor += 1
            return self._block[self._cursor - 1] * self.scale
        for i in np.flatnonzero(self._due):
            self._episode[i] = rng[int(i)].standard_normal(len(self.scale))
        self._due[:] = False
        return self._episode * self.scale
