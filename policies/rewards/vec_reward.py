"""Replace a batched env's reward by a CLIP reward of its rendered frames.

Every step renders the frame of each of the N environments and embeds all N in
one forward pass of the reward model (never one frame at a time), on the rollout
thread or, off the loop, in a reward process that embeds one chunk of frames while
the next is rendered (``offloop.py``). The frame of
an environment whose episode just ended is rendered *before* the automatic
reset, so the last transition of an episode (e.g. the one that reaches the
target) is rewarded on what it actually reached, not on the next episode's
first frame. The task's own reward stays in ``info["true_reward"]`` and in
``info["episode"]["r"]`` (what the trainer logs), for evaluation only.
"""

from __future__ import annotations

import copy
import sys
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import mujoco
import numpy as np
from stable_baselines3.common.vec_env import VecEnvWrapper
from stable_baselines3.common.vec_env.base_vec_env import VecEnvObs, VecEnvStepReturn

from sim2real.errors import ConfigError
from sim2real.policies.rewards.captions import Captions
from sim2real.policies.rewards.offloop import InlineReward, RewardFn, RewardProcess
from sim2real.policies.rewards.relabel import FRAME_KEY
from sim2real.sim.core.rendering import OffscreenRenderer

if TYPE_CHECKING:
    from sim2real.policies.rewards.refine import OnlineRefiner


class FrameRenderer:
    """Renders any environment of a :class:`BatchedVecEnv` from one camera or
    several, small and fast.

    ``camera`` may join several camera names with ``+`` (``"reach_view+wrist"``):
    the frame then stacks the views top to bottom, each ``width`` wide and an equal
    share of ``height`` tall. One picture can so hold a view of the whole workspace
    (where the gripper is, coarsely) and a close-up (how close it is, finely).

    Shadows, reflections and multisampling are off: on software GL they cost about
    20x the rest of a 64 px frame (87 ms vs 4 ms measured here), and a reward model
    trained on these frames does not need them.
    """

    def __init__(self, venv: Any, camera: str | None = None, width: int = 64, height: int = 64) -> None:
        self.engine = venv.engine
        self.camera = camera or venv.task.render_camera
        base = copy.copy(self.engine.models[0])
        views: Sequence[str | int] = self.camera.split("+") if isinstance(self.camera, str) else [self.camera]
        names = [base.camera(i).name for i in range(base.ncam)]
        for view in views:
            if isinstance(view, str) and view not in names:
                raise ConfigError("reward.camera", f"no camera {view!r} in this task; cameras: {names}")
        if height < len(views):
            raise ConfigError("reward.camera", f"{len(views)} views do not fit in {height} px")
        base.vis.quality.offsamples = 0
        # Every view gets height // n rows; the first takes what the division leaves over.
        heights = [height // len(views)] * len(views)
        heights[0] += height - sum(heights)
        self._views = []
        for view, h in zip(views, heights):
            renderer = OffscreenRenderer(base, width, h)
            scene = renderer._renderer.scene
            scene.flags[mujoco.mjtRndFlag.mjRND_SHADOW] = 0
            scene.flags[mujoco.mjtRndFlag.mjRND_REFLECTION] = 0
            self._views.append((view, renderer))
        self._data = mujoco.MjData(base)
        self.width, self.height = width, height

    def render(self, i: int) -> np.ndarray:
        model = self.engine.load_env_into(int(i), self._data)
        images = []
        for view, renderer in self._views:
            for h in range(model.nhfield):
                renderer.upload_heightfield(model, h)
            images.append(renderer.render(model, self._data, view))
        return images[0] if len(images) == 1 else np.concatenate(images, axis=0)

    def render_all(self) -> np.ndarray:
        return np.stack([self.render(i) for i in range(self.engine.num_envs)])

    def close(self) -> None:
        for _, renderer in self._views:
            renderer.close()


class BeforeResetHook:
    """Calls ``before_reset(env_ids)`` whenever the engine is about to reset some
    environments while armed (i.e. inside ``step_wait``), so a caller can read the
    last state of a finished episode before the automatic reset replaces it.

    ``BatchedVecEnv`` resets finished environments inside ``step_wait``; the
    engine's ``reset`` is the one place to see their final state.
    """

    def __init__(self, engine: Any, before_reset: Callable[[list[int]], None]) -> None:
        self.engine = engine
        self.before_reset = before_reset
        self.armed = False
        self._original = engine.reset
        engine.reset = self._reset

    def _reset(self, env_ids: Any = None) -> None:
        if self.armed and env_ids is not None:
            self.before_reset([int(i) for i in env_ids])
        self._original(env_ids)

    def remove(self) -> None:
        self.engine.reset = self._original


class ClipRewardVecEnv(VecEnvWrapper):
    """A ``BatchedVecEnv`` whose reward is ``reward_model(frame) + shift``.

    Args:
        venv: The batched env (must expose ``engine``, as ``BatchedVecEnv`` does).
        reward_model: Maps ``uint8 [B, H, W, 3]`` frames to rewards ``[B]`` (a
            :class:`ClipRewardModel` or an ensemble of them), called on the rollout
            thread; or a :class:`RewardProcess` serving one off the loop.
        camera: Camera to render (default: the task's render camera).
        size: Rendered frame width and height in pixels.
        shift: Added to every reward. VLM-RM's reward is positive; with episodes that
            *end* on success, a positive reward per step teaches the policy to avoid
            success, so the default ``-1`` makes it non-positive.
        refiner: Refines the reward model on the rewarded frames (``refine.py``); it then
            needs ``caption``, the task's captioner, to label them.

    With a refiner and a replay buffer in :attr:`relabel_targets` (``relabel.connect_relabelling``
    puts it there), each transition's frame goes on in ``info["reward_frame"]`` and after each
    round the buffer's stored rewards become the refined model's.
    """

    def __init__(
        self,
        venv: Any,
        reward_model: RewardFn | RewardProcess,
        camera: str | None = None,
        size: int = 64,
        shift: float = -1.0,
        refiner: OnlineRefiner | None = None,
        caption: Callable[[Any, Any], Captions] | None = None,
    ) -> None:
        super().__init__(venv)
        if refiner is not None and caption is None:
            raise ConfigError("reward.refine", "refining the reward model needs the task's captions")
        self.refiner, self.caption = refiner, caption
        self.relabel_targets: list[Callable[[Callable[[np.ndarray], np.ndarray]], Any]] = []
        """Called after each refinement round with :meth:`score` (a replay buffer's ``relabel``)."""
        self._batched: Any = venv  # the BatchedVecEnv: its task and physics label the frames
        self.env_steps = 0
        self._terminal_labels: dict[int, tuple[str, bool, float]] = {}
        self.reward_model = reward_model
        self._inference = reward_model if isinstance(reward_model, RewardProcess) else InlineReward(reward_model)
        self.renderer = FrameRenderer(venv, camera, size, size)
        self.shift = float(shift)
        self.render_seconds = 0.0
        self.reward_seconds = 0.0
        self.refine_seconds = 0.0
        self.relabel_seconds = 0.0
        self.frames = 0
        self._terminal_frames: dict[int, np.ndarray] = {}
        self._clip_return = np.zeros(self.num_envs)
        self._hook = BeforeResetHook(venv.engine, self._render_terminal_frames)

    def _render_terminal_frames(self, env_ids: list[int]) -> None:
        t0 = time.perf_counter()
        for i in env_ids:
            self._terminal_frames[i] = self.renderer.render(i)
        if self.caption is not None:
            labels = self.caption(self._batched.task, self._batched.engine.phys)
            for i in env_ids:
                self._terminal_labels[i] = (labels.text[i], bool(labels.success[i]), float(labels.progress[i]))
        self.render_seconds += time.perf_counter() - t0

    def _labels(self) -> Captions:
        """This step's labels per env: the ended episodes' from before their reset."""
        assert self.caption is not None
        now = self.caption(self._batched.task, self._batched.engine.phys)
        rows = [self._terminal_labels.get(i, (now.text[i], bool(now.success[i]), float(now.progress[i])))
                for i in range(self.num_envs)]
        return Captions([r[0] for r in rows], np.array([r[1] for r in rows]), np.array([r[2] for r in rows]))

    def _refine(self, frames: np.ndarray) -> bool:
        """Offer this step's frames to the refiner; True when a round ran."""
        assert self.refiner is not None
        self.refiner.observe(frames, self._labels())
        done = self.refiner.maybe_refine(self.env_steps)
        if done is None:
            return False
        self._inference.load_weights(self.refiner.reward_model)
        self.refine_seconds += done.seconds
        print(f"reward model refined at {done.env_steps} env steps on {done.policy_frames} policy + "
              f"{done.anchor_frames} anchor frames in {done.seconds:.0f} s (loss {done.final_loss:.3f})",
              file=sys.stderr, flush=True)
        for relabel in self.relabel_targets:
            result = relabel(self.score)
            self.relabel_seconds += result.seconds
            self.refiner.relabels.append({"env_steps": done.env_steps, **vars(result)})
            print(f"replay buffer relabelled: {result.transitions} transitions in {result.seconds:.0f} s, "
                  f"mean reward {result.mean_reward_before:.3f} -> {result.mean_reward_after:.3f} "
                  f"(mean |change| {result.mean_abs_change:.3f})", file=sys.stderr, flush=True)
        return True

    def score(self, frames: np.ndarray) -> np.ndarray:
        """The refined model's reward of ``frames`` (``uint8 [B, H, W, 3]``), the shift
        included: what a transition with that frame would be given now."""
        assert self.refiner is not None
        return np.asarray(self.refiner.reward_model(frames), dtype=np.float64) + self.shift

    def _render_and_submit(self) -> np.ndarray:
        """This step's frames (the ended episodes' last ones from before their reset), sent
        to the reward model chunk by chunk as they are rendered."""
        chunks = []
        try:
            for ids in np.array_split(np.arange(self.num_envs), min(self._inference.chunks, self.num_envs)):
                t0 = time.perf_counter()
                chunk = np.stack([self._terminal_frames[i] if i in self._terminal_frames else self.renderer.render(i)
                                  for i in ids])
                self.render_seconds += time.perf_counter() - t0
                self._inference.submit(chunk)
                chunks.append(chunk)
        except BaseException:
            self._inference.cancel()  # no half step's rewards may reach the next step
            raise
        return chunks[0] if len(chunks) == 1 else np.concatenate(chunks)

    def reset(self) -> VecEnvObs:
        self._clip_return[:] = 0.0
        return self.venv.reset()

    def step_wait(self) -> VecEnvStepReturn:
        self._terminal_frames.clear()
        self._terminal_labels.clear()
        self._hook.armed = True
        try:
            obs, true_reward, dones, infos = self.venv.step_wait()
        finally:
            self._hook.armed = False
        frames = self._render_and_submit()
        t0 = time.perf_counter()
        reward = self._inference.collect() + self.shift
        self.reward_seconds += time.perf_counter() - t0
        self.frames += len(frames)
        self.env_steps += self.num_envs
        if self.refiner is not None and self._refine(frames) and self.relabel_targets:
            # This step's transitions reach the buffer after the relabelling: give them the new model's reward too.
            reward = self.score(frames)
        self._clip_return += reward
        for i, info in enumerate(infos):
            info["true_reward"] = float(true_reward[i])
            info["clip_reward"] = float(reward[i])
            if self.relabel_targets:
                info[FRAME_KEY] = frames[i]
            if dones[i]:
                if "episode" in info:
                    info["episode"]["clip_r"] = float(self._clip_return[i])
                self._clip_return[i] = 0.0
        return obs, reward.astype(np.float32), dones, infos

    def checkpoint_files(self) -> dict[str, bytes]:
        """Training state this wrapper adds to a checkpoint: the refined reward model, if refining."""
        return self.refiner.state_files() if self.refiner is not None else {}

    def restore_checkpoint_files(self, read: Callable[[str], bytes | None]) -> None:
        """Continue from a checkpoint's files (``read(name)``: its bytes, None if absent)."""
        if self.refiner is None:
            return
        files = {name: read(name) for name in (self.refiner.WEIGHTS, self.refiner.SCHEDULE)}
        present = {k: v for k, v in files.items() if v is not None}
        if present:  # none: saved before the first round, the model is still the original
            if len(present) != len(files):
                raise ConfigError("reward.refine", f"a checkpoint holds only {sorted(present)} of {sorted(files)}")
            self.refiner.load_state_files(present)
            self._inference.load_weights(self.refiner.reward_model)

    def timing(self) -> dict[str, float]:
        """Seconds spent rendering, waiting for the reward model (off the loop: only what
        rendering did not hide), inside the model, refining it, relabelling a replay buffer
        with it, and frames rewarded."""
        return {"render_seconds": self.render_seconds, "reward_seconds": self.reward_seconds,
                "model_seconds": self._inference.model_seconds, "refine_seconds": self.refine_seconds,
                "relabel_seconds": self.relabel_seconds,
                "frames": self.frames}

    def close(self) -> None:
        self._hook.remove()
        self._inference.close()
        self.renderer.close()
        self.venv.close()
