"""The SB3 callback that drives evaluation, checkpoints and the progress bar.

Evaluations and checkpoints happen at ``on_rollout_start``: SB3 calls it after
the previous update finished (PPO: after ``train()`` on the last rollout; SAC/TD3:
after the gradient steps), so a checkpoint never holds a half-used rollout and
its step counter counts exactly the data the weights were trained on.
"""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np
from stable_baselines3.common.callbacks import BaseCallback

from sim2real.policies.common.progress import TrainProgress


class Session(Protocol):
    """What the callback needs from the trainer."""

    def evaluate(self, step: int) -> object: ...  # the result (the trainer's metrics) is not used here
    def save_last(self, step: int) -> None: ...


def next_multiple(step: int, every: int) -> int:
    """The first multiple of ``every`` strictly after ``step`` (never, for ``every == 0``)."""
    return (step // every + 1) * every if every > 0 else np.iinfo(np.int64).max


class TrainingCallback(BaseCallback):
    """Periodic evaluation, periodic ``last`` checkpoints, progress updates.

    Args:
        session: The trainer (``evaluate(step)``, ``save_last(step)``).
        eval_every: Environment steps between evaluations (0: only at the end).
        checkpoint_every: Environment steps between ``last`` checkpoints.
        progress: The progress bar.
    """

    def __init__(self, session: Session, eval_every: int, checkpoint_every: int, progress: TrainProgress) -> None:
        super().__init__(verbose=0)
        self.session = session
        self.eval_every = eval_every
        self.checkpoint_every = checkpoint_every
        self.progress = progress
        self.next_eval = 0
        self.next_checkpoint = 0

    def _on_training_start(self) -> None:
        step = self.model.num_timesteps
        self.next_eval = next_multiple(step, self.eval_every)
        self.next_checkpoint = next_multiple(step, self.checkpoint_every)

    def _on_rollout_start(self) -> None:
        step = self.model.num_timesteps
        if step >= self.next_eval:
            self.session.evaluate(step)
            self.next_eval = next_multiple(step, self.eval_every)
        if step >= self.next_checkpoint:
            self.session.save_last(step)
            self.next_checkpoint = next_multiple(step, self.checkpoint_every)

    def _on_step(self) -> bool:
        fields = getattr(self.model, "progress_fields", None)
        extra = fields() if fields is not None and self.progress.enabled else ""
        self.progress.update(self.model.num_timesteps, *recent_episodes(self.model), extra=extra)
        return True


def recent_episodes(model: Any) -> tuple[float | None, float | None]:
    """Mean return and success rate of SB3's recent training episodes (``None``: none yet)."""
    returns = [e["r"] for e in model.ep_info_buffer] if model.ep_info_buffer else []
    successes = list(model.ep_success_buffer) if model.ep_success_buffer else []
    return (float(np.mean(returns)) if returns else None, float(np.mean(successes)) if successes else None)
