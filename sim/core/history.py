"""A short history of observation blocks, as an input the policy can adapt from.

Under randomized dynamics a policy that sees only the present state cannot tell a
heavy robot on ice from a light one on carpet; the last few steps of joint states
and actions can (RMA's adaptation module and history-conditioned locomotion
policies read the same signal). The history holds what the policy *saw*: the
observations after noise, recorded through :meth:`Task.record_observation` by the
engine in simulation and by the observation builder in deployment, so both fill it
the same way.

Bookkeeping is per environment and keyed on the physics time stamp, because an
observation may be taken more than once per control step (an env reset mid-batch
re-observes all envs): a repeated time stamp records nothing, an earlier one means
the env was reset and the history restarts from the current observation.
"""

from __future__ import annotations

import numpy as np

from sim2real.sim.core.layout import layout_slices


class ObservationHistory:
    """The previous ``steps`` values of some observation blocks, newest first.

    Args:
        num_envs: Batch size ``B``.
        layout: The task's observation layout (without the history block itself).
        blocks: Names of the layout blocks to remember.
        steps: How many previous control steps to keep.
    """

    def __init__(self, num_envs: int, layout: list[tuple[str, int]], blocks: tuple[str, ...], steps: int) -> None:
        if steps < 1:
            raise ValueError(f"steps must be >= 1, got {steps}")
        offsets = layout_slices(layout)
        missing = [b for b in blocks if b not in offsets]
        if missing:
            raise ValueError(f"history blocks {missing} are not in the observation layout {[n for n, _ in layout]}")
        self.columns = np.concatenate([np.arange(offsets[b].start, offsets[b].stop) for b in blocks])
        self.steps = steps
        self.entry_size = len(self.columns)
        self.size = steps * self.entry_size
        # One slot more than returned: after recording step t, observe(t) again still
        # returns t-1 ... t-steps (slot 0 is the entry of time ``recorded_at``).
        self._ring = np.zeros((num_envs, steps + 1, self.entry_size))
        self._recorded_at = np.full(num_envs, np.nan)

    def block(self, current: np.ndarray, time: np.ndarray) -> np.ndarray:
        """The history block ``[B, steps * entry]`` for observations being taken at ``time``.

        ``current`` is the noise-free observation ``[B, O]`` now being assembled: an env
        with nothing recorded before ``time`` (just reset) repeats it, as a robot that
        has been standing still would have seen.
        """
        fresh = ~(self._recorded_at <= time)  # NaN (never recorded) or a reset clock
        again = self._recorded_at == time
        out = np.where(again[:, None, None], self._ring[:, 1:], self._ring[:, :-1])
        if fresh.any():
            out[fresh] = current[fresh][:, None, self.columns]
        return out.reshape(len(out), -1)

    def restart(self) -> None:
        """Forget everything: the next observation starts a fresh history (a robot
        re-activated after a pause, whose old history no longer describes it)."""
        self._recorded_at[:] = np.nan

    def record(self, obs: np.ndarray, time: np.ndarray) -> None:
        """Remember the observation ``[B, O]`` the policy was given at ``time``."""
        entry = obs[:, self.columns]
        fresh = ~(self._recorded_at <= time)
        advanced = self._recorded_at < time
        if advanced.any():
            self._ring[advanced, 1:] = self._ring[advanced, :-1]
            self._ring[advanced, 0] = entry[advanced]
        if fresh.any():
            self._ring[fresh] = entry[fresh][:, None, :]
        self._recorded_at = np.where(fresh | advanced, time, self._recorded_at)
