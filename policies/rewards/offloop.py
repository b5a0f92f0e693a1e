"""Reward inference off the rollout loop: the reward model in its own process.

``ClipRewardVecEnv`` renders the N environments' frames one after another on the
rollout thread. Inline, the reward model then embeds all N while nothing else runs.
Off the loop, the frames go to a :class:`RewardProcess` in chunks as soon as each
chunk is rendered, so the model embeds one chunk while the next is rendered, on
another core, without the GIL; the rollout thread only waits for the last chunk.

Both paths have the same interface (``submit`` frames, ``collect`` rewards in
submission order), so the vec env does not branch on which one it has, and both
return the same rewards for the same frames (tested).
"""

from __future__ import annotations

import contextlib
import multiprocessing
import time
import traceback
from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import Any

import numpy as np

from sim2real.errors import Sim2RealError

RewardFn = Callable[[np.ndarray], np.ndarray]
"""Frames ``uint8 [B, H, W, 3]`` to rewards ``[B]``."""


class RewardProcessError(Sim2RealError):
    """The reward process failed to start, raised, died or stopped answering."""


class InlineReward:
    """The reward model called on the rollout thread, once per step on all frames
    (one batch: what inline inference does best)."""

    chunks = 1

    def __init__(self, model: RewardFn) -> None:
        self.model = model
        self._pending: list[np.ndarray] = []
        self.model_seconds = 0.0

    def submit(self, frames: np.ndarray) -> None:
        self._pending.append(frames)

    def collect(self) -> np.ndarray:
        frames = self._pending[0] if len(self._pending) == 1 else np.concatenate(self._pending)
        self._pending.clear()
        t0 = time.perf_counter()
        reward = np.asarray(self.model(frames), dtype=np.float64)
        self.model_seconds += time.perf_counter() - t0
        return reward

    def cancel(self) -> None:
        """Drop the frames submitted since the last collect."""
        self._pending.clear()

    def load_weights(self, model: Any) -> None:
        """Nothing to do: the refined model is this model."""

    def close(self) -> None:
        self._pending.clear()


def _serve(conn: Connection, factory: Callable[[], RewardFn], torch_threads: int) -> None:
    """The reward process: build the model, then answer ``frames`` and ``weights`` requests
    in order until ``close`` or the parent's end of the pipe closes."""
    import torch

    torch.set_num_threads(torch_threads)
    try:
        model = factory()
    except BaseException as exc:  # the parent reports it; nothing here may crash silently
        conn.send(("error", f"building the reward model failed: {type(exc).__name__}: {exc}"))
        return
    conn.send(("ready", None))
    while True:
        try:
            kind, payload = conn.recv()
        except (EOFError, OSError):  # the parent is gone
            return
        if kind == "close":
            return
        try:
            if kind == "frames":
                t0 = time.perf_counter()
                reward = np.asarray(model(payload), dtype=np.float64)
                conn.send(("rewards", (reward, time.perf_counter() - t0)))
            elif kind == "weights":
                inner: Any = model
                inner.model.load_state_dict(payload)
                inner.refresh()
                conn.send(("ok", None))
            else:
                conn.send(("error", f"unknown request {kind!r}"))
        except Exception as exc:
            conn.send(("error", f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=3)}"))


class RewardProcess:
    """A reward model served by its own process (``spawn``: no GL or CUDA state is inherited).

    Args:
        factory: Builds the reward model in the child; must be picklable (a module-level
            function or a ``functools.partial`` of one).
        chunks: Pieces each step's frames are sent in; rendering of one piece overlaps
            the model's work on the previous one.
        torch_threads: Intra-op threads of the child's torch.
        timeout_s: Longest wait for the model to load or for an answer before the
            process counts as hung (then it is killed and an error raised).
    """

    def __init__(
        self, factory: Callable[[], RewardFn], chunks: int = 2, torch_threads: int = 1, timeout_s: float = 300.0
    ) -> None:
        if chunks < 1:
            raise ValueError(f"chunks must be >= 1, got {chunks}")
        self.chunks = int(chunks)
        self.timeout_s = float(timeout_s)
        self.model_seconds = 0.0
        self._pending = 0
        context = multiprocessing.get_context("spawn")
        self._conn, child = context.Pipe(duplex=True)
        self._process = context.Process(
            target=_serve, args=(child, factory, torch_threads), name="sim2real-reward", daemon=True
        )
        self._process.start()
        child.close()
        self._answer("ready")

    def _answer(self, expected: str) -> Any:
        if not self._conn.poll(self.timeout_s):
            self.close()
            raise RewardProcessError(f"the reward process gave no answer in {self.timeout_s:.0f} s")
        try:
            kind, payload = self._conn.recv()
        except (EOFError, OSError) as exc:
            code = self._process.exitcode
            self.close()
            raise RewardProcessError(f"the reward process died (exit code {code})") from exc
        if kind == "error":
            self.close()
            raise RewardProcessError(str(payload).strip())
        if kind != expected:
            self.close()
            raise RewardProcessError(f"the reward process answered {kind!r} where {expected!r} was due")
        return payload

    def submit(self, frames: np.ndarray) -> None:
        """Send frames to be rewarded; returns at once."""
        try:
            self._conn.send(("frames", np.ascontiguousarray(frames)))
        except (BrokenPipeError, OSError) as exc:
            self.close()
            raise RewardProcessError("the reward process is gone") from exc
        self._pending += 1

    def collect(self) -> np.ndarray:
        """Rewards of every submitted chunk since the last collect, concatenated in order."""
        rewards = []
        while self._pending:
            reward, seconds = self._answer("rewards")
            self._pending -= 1
            self.model_seconds += seconds
            rewards.append(reward)
        return rewards[0] if len(rewards) == 1 else np.concatenate(rewards)

    def cancel(self) -> None:
        """Drop the answers to frames submitted since the last collect (a step that failed
        half-way), so the next collect cannot return a previous step's rewards."""
        with contextlib.suppress(RewardProcessError):
            self.collect()

    def load_weights(self, model: Any) -> None:
        """Give the child the weights of ``model`` (a :class:`ClipRewardModel` refined in
        this process) and have it embed its prompts again."""
        state = {k: v.detach().cpu() for k, v in model.model.state_dict().items()}
        self._conn.send(("weights", state))
        self._answer("ok")

    def __call__(self, frames: np.ndarray) -> np.ndarray:
        self.submit(frames)
        return self.collect()

    def close(self) -> None:
        if self._process.is_alive():
            with contextlib.suppress(BrokenPipeError, OSError):
                self._conn.send(("close", None))
            self._process.join(timeout=5)
            if self._process.is_alive():
                self._process.kill()
                self._process.join(timeout=5)
        self._conn.close()
