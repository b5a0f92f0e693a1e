"""Captioned frames from our own tasks: the training and evaluation data of CLIP rewards.

A behaviour policy drives the batched env: the task's classical controller
mixed, per episode, with uniform random actions (weight drawn from
``behaviour.MIX_WEIGHTS``), so the frames cover the whole range from "far from the goal"
to "at the goal". Every step renders every environment; the frame and caption of
an environment whose episode just ended are taken before its automatic reset.
With ``balance``, a frame is rendered only while its caption has fewer frames than
its share: the physics runs on until the rare captions (the last centimetres of a
reach) have as many frames as the common ones.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from sim2real.errors import ConfigError
from sim2real.policies.rewards.behaviour import Behaviour
from sim2real.policies.rewards.captions import Captions, captioner
from sim2real.policies.rewards.vec_reward import BeforeResetHook, FrameRenderer

DECOY_FRACTION = 0.3
"""Default share (``finetune-clip --decoy-fraction``) of the classical controller's reach
episodes that drive to a random point of the whole workspace instead of the target
(``decoy_points``). Without them the scripted frames show the gripper only on its way
to the target, and RL policies found the states they never showed: the arm swung close
to the fixed camera, or lined up with the target along its ray, both rated like a near
miss."""

BALANCE_STEP_BUDGET = 60
"""Env steps per requested frame that a balanced collection may simulate before it stops
holding captions to their share and takes every frame (a caption the behaviour never
reaches must not make it run forever)."""

REWARD_CAMERAS = {"sim2real/ArmReach-v0": "reach_view+wrist", "arm": "wrist"}
"""Default reward camera per task (Gymnasium id), else per robot. For reach, the
fixed ``reach_view`` shows where the gripper is relative to the target from any
distance, and the ``wrist`` close-up resolves the last centimetres: the wrist view
alone loses the 2 cm target beyond about 10 cm, and a fixed view alone shows it as
two pixels. Robots not listed use their task's render camera."""


@dataclass
class FrameSet:
    """Frames with their captions and labels, in collection order."""

    frames: np.ndarray
    """``uint8 [N, H, W, 3]``."""
    captions: list[str]
    success: np.ndarray
    """Ground-truth success label per frame (bool)."""
    progress: np.ndarray
    """Higher is closer to the goal."""
    episode: np.ndarray
    """Episode id per frame (unique within the set)."""
    step: np.ndarray
    """Step index within the episode."""
    state: dict[str, np.ndarray] = field(default_factory=dict)
    """Simulator state per frame (first axis), from the task's captioner (``Captions.state``):
    what the reward audit groups failures by. Empty for frame sets built without it; the
    audit then groups by caption."""
    cameras: dict[str, tuple[float, float, float]] = field(default_factory=dict)
    """World position of each camera fixed in the world that the frames show (not the wrist's)."""

    def __len__(self) -> int:
        return len(self.frames)

    @staticmethod
    def concat(parts: list[FrameSet]) -> FrameSet:
        """The frames of every part in order; episode ids offset to stay unique across parts
        (their per-frame state and cameras are dropped: parts may come from different tasks)."""
        offset, episodes = 0, []
        for p in parts:
            episodes.append(p.episode + offset)
            offset += int(p.episode.max()) + 1 if len(p) else 0
        return FrameSet(
            np.concatenate([p.frames for p in parts]),
            [c for p in parts for c in p.captions],
            np.concatenate([p.success for p in parts]),
            np.concatenate([p.progress for p in parts]),
            np.concatenate(episodes),
            np.concatenate([p.step for p in parts]),
        )

    def subset(self, mask: np.ndarray) -> FrameSet:
        idx = np.flatnonzero(mask)
        return FrameSet(
            self.frames[idx],
            [self.captions[i] for i in idx],
            self.success[idx],
            self.progress[idx],
            self.episode[idx],
            self.step[idx],
            {k: v[idx] for k, v in self.state.items()},
            dict(self.cameras),
        )


def fixed_cameras(model: Any, camera: str | None) -> dict[str, tuple[float, float, float]]:
    """World positions of the cameras of ``camera`` (names joined by ``+``) that are fixed
    in the world (a world-body camera's ``cam_pos`` is its world position)."""
    out = {}
    for name in (camera or "").split("+"):
        if not name:
            continue
        cam = model.camera(name)
        if int(model.cam_bodyid[cam.id]) == 0:
            x, y, z = (float(v) for v in model.cam_pos[cam.id])
            out[name] = (x, y, z)
    return out


def default_camera(task_cls: type) -> str | None:
    from sim2real.sim.core.registry import gym_id

    return REWARD_CAMERAS.get(gym_id(task_cls), REWARD_CAMERAS.get(task_cls.robot, task_cls.render_camera))


class _Recorder:
    """Renders and captions frames, with the episode and step of each."""

    def __init__(
        self, venv: Any, n_envs: int, renderer: FrameRenderer, caption: Callable[[Any, Any], Captions],
        balance_to: int | None = None,
    ) -> None:
        self.venv, self.renderer, self.caption = venv, renderer, caption
        self.balance_to = balance_to
        """Frames to share equally among the captions seen so far (None: record every frame)."""
        self.counts: Counter[str] = Counter()
        self.captions_seen: set[str] = set()
        self.episode = np.arange(n_envs)
        self.step = np.zeros(n_envs, dtype=np.int64)
        self.next_episode = n_envs
        self.frames: list[np.ndarray] = []
        self.rows: list[tuple[str, bool, float, int, int]] = []
        self.states: list[dict[str, np.ndarray]] = []

    def record(self, env_ids: list[int]) -> None:
        """Render and caption the current state of ``env_ids``."""
        labels = self.caption(self.venv.task, self.venv.engine.phys)
        for i in env_ids:
            if not self._wanted(labels.text[i]):
                continue
            self.counts[labels.text[i]] += 1
            self.frames.append(self.renderer.render(i))
            self.rows.append(
                (
                    labels.text[i],
                    bool(labels.success[i]),
                    float(labels.progress[i]),
                    int(self.episode[i]),
                    int(self.step[i]),
                )
            )
            self.states.append({k: np.asarray(v[i]) for k, v in labels.state.items()})

    def _wanted(self, caption: str) -> bool:
        """Whether to render a frame of ``caption``: always, unless balancing and the caption
        already holds its share of the frames among the captions seen so far."""
        if self.balance_to is None:
            return True
        self.captions_seen.add(caption)
        return self.counts[caption] < math.ceil(self.balance_to / len(self.captions_seen))

    def new_episodes(self, done_ids: np.ndarray) -> None:
        """Give the envs whose episode ended a fresh episode id, at step 0."""
        for i in done_ids:
            self.episode[i], self.step[i] = self.next_episode, 0
            self.next_episode += 1

    def frame_set(self, n_frames: int) -> FrameSet:
        """The first ``n_frames`` recorded frames."""
        text, success, progress, ep, st = zip(*self.rows[:n_frames])
        states = self.states[:n_frames]
        camera = self.renderer.camera if isinstance(self.renderer.camera, str) else None
        return FrameSet(
            np.stack(self.frames[:n_frames]),
            list(text),
            np.array(success),
            np.array(progress),
            np.array(ep),
            np.array(st),
            {k: np.stack([s[k] for s in states]) for k in states[0]},
            fixed_cameras(self.venv.engine.models[0], camera),
        )


def _collect_step(
    venv: Any, hook: BeforeResetHook, behaviour: Behaviour, recorder: _Recorder, obs: np.ndarray
) -> np.ndarray:
    """Step every env once and record its frame; returns the new observations."""
    venv.step_async(np.clip(behaviour.act(obs), -1.0, 1.0))
    recorder.step += 1
    # Armed, the hook records an ended episode's last frame before its automatic reset.
    hook.armed = True
    try:
        obs, _, dones, _ = venv.step_wait()
    finally:
        hook.armed = False
    done_ids = np.flatnonzero(dones)
    recorder.record([i for i in range(len(dones)) if not dones[i]])
    recorder.new_episodes(done_ids)
    behaviour.new_episodes(done_ids)
    return obs


def collect_frames(
    task: str,
    n_frames: int,
    n_envs: int = 16,
    size: int = 64,
    camera: str | None = None,
    seed: int = 0,
    dr: str = "train",
    policy: Any = None,
    decoy_fraction: float = 0.0,
    decoy_mix: dict[str, float] | None = None,
    task_options: dict[str, Any] | None = None,
    balance: bool = False,
) -> FrameSet:
    """``n_frames`` captioned frames of ``task``.

    Args:
        policy: Callable from observations ``[N, O]`` to actions ``[N, A]``; default:
            the classical controller mixed with noise (see module docstring).
        decoy_fraction: Share of the controller's reach episodes driven to a random
            workspace point instead of the target (see ``DECOY_FRACTION``); drawn from
            a generator of its own, so ``0`` (the default) renders what earlier
            versions rendered.
        decoy_mix: Shares of the decoy kinds (``hard_negatives.KINDS``: anywhere in the
            workspace, along a fixed reward camera's ray, near misses); default: anywhere.
        task_options: The task's constructor options (e.g. ArmReach's ``target_colors``).
        balance: Give every caption the same number of frames (see the module docstring),
            simulating up to ``BALANCE_STEP_BUDGET`` env steps per frame; without it the
            frames follow the behaviour, which spends most steps far from the goal (a
            reach: 1.4 % of frames within 3 cm).
    """
    from sim2real.sim import REGISTRY, make_vec

    if not 0.0 <= decoy_fraction <= 1.0:
        raise ConfigError("decoy_fraction", f"must be in [0, 1], got {decoy_fraction}")
    task_cls = REGISTRY.get(task)
    caption = captioner(task)
    venv = make_vec(task, n_envs, dr=dr, seed=seed, **(task_options or {}))
    renderer = FrameRenderer(venv, camera or default_camera(task_cls), size, size)
    cameras = fixed_cameras(venv.engine.models[0], camera or default_camera(task_cls))
    behaviour = Behaviour(venv, n_envs, seed, policy, decoy_fraction, cameras, decoy_mix)
    recorder = _Recorder(venv, n_envs, renderer, caption, n_frames if balance else None)
    hook = BeforeResetHook(venv.engine, recorder.record)
    try:
        obs = venv.reset()
        recorder.record(list(range(n_envs)))
        env_steps = 0
        while len(recorder.frames) < n_frames:
            obs = _collect_step(venv, hook, behaviour, recorder, obs)
            env_steps += n_envs
            if recorder.balance_to is not None and env_steps > BALANCE_STEP_BUDGET * n_frames:
                recorder.balance_to = None
    finally:
        hook.remove()
        renderer.close()
        venv.close()
    return recorder.frame_set(n_frames)


def policy_frames(run: Any, n_frames: int, **options: Any) -> FrameSet:
    """``n_frames`` captioned frames of the states a loaded run's (``load_run``) stochastic
    policy visits on its own task: where RL takes a reward model. ``options`` go to
    :func:`collect_frames`."""
    options.setdefault("task_options", run.config.task_options)
    return collect_frames(run.config.task, n_frames, policy=run.policy(deterministic=False), **options)
