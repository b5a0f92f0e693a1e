"""Captioned frames from our own tasks: the training and evaluation data of CLIP rewards.

A behaviour policy drives the batched env: the task's classical controller
mixed, per episode, with uniform random actions (weight drawn from
``MIX_WEIGHTS``), so the frames cover the whole range from "far from the goal"
to "at the goal". Every step renders every environment; the frame and caption of
an environment whose episode just ended are taken before its automatic reset.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from sim2real.errors import ConfigError
from sim2real.policies.rewards.captions import captioner
from sim2real.policies.rewards.vec_reward import BeforeResetHook, FrameRenderer
from sim2real.sim.core.layout import layout_slices

MIX_WEIGHTS = np.array([0.0, 0.5, 0.8, 1.0, 1.0])
"""Per-episode weight of the classical controller's action (the rest is uniform noise)."""

DECOY_FRACTION = 0.3
"""Default share (``finetune-clip --decoy-fraction``) of the classical controller's reach
episodes that drive to a random point of the whole workspace instead of the target
(``decoy_points``). Without them the scripted frames show the gripper only on its way
to the target, and RL policies found the states they never showed: the arm swung close
to the fixed camera, or lined up with the target along its ray, both rated like a near
miss."""

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

    def __len__(self) -> int:
        return len(self.frames)

    def subset(self, mask: np.ndarray) -> FrameSet:
        idx = np.flatnonzero(mask)
        return FrameSet(
            self.frames[idx],
            [self.captions[i] for i in idx],
            self.success[idx],
            self.progress[idx],
            self.episode[idx],
            self.step[idx],
        )


def default_camera(task_cls: type) -> str | None:
    from sim2real.sim.core.registry import gym_id

    return REWARD_CAMERAS.get(gym_id(task_cls), REWARD_CAMERAS.get(task_cls.robot, task_cls.render_camera))


def behaviour_controller(venv: Any) -> Any | None:
    """The task's classical controller, if it has one for its action mode (else pure
    random actions)."""
    from sim2real.policies.classical import controller_for

    try:
        return controller_for(venv.task, venv.num_envs)
    except ConfigError:
        return None


def decoy_points(venv: Any, rng: np.random.Generator, n: int) -> np.ndarray | None:
    """``n`` random points (world frame) of a reach task's workspace box, else None."""
    task = venv.task
    if "target_rel_ee" not in dict(task.observation_layout()) or not hasattr(task, "targets"):
        return None
    return rng.uniform(task.workspace_low, task.workspace_high, size=(n, 3))


def toward_decoys(obs: np.ndarray, venv: Any, decoys: np.ndarray, mask: np.ndarray, block: slice) -> np.ndarray:
    """Observations in which the target of the ``mask``ed envs is their decoy point
    (``block``: the ``target_rel_ee`` slice of the observation)."""
    out = obs.copy()
    out[mask, block] += decoys[mask] - venv.task.targets[mask]
    return out


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
) -> FrameSet:
    """``n_frames`` captioned frames of ``task``.

    Args:
        policy: Callable from observations ``[N, O]`` to actions ``[N, A]``; default:
            the classical controller mixed with noise (see module docstring).
        decoy_fraction: Share of the controller's reach episodes driven to a random
            workspace point instead of the target (see ``DECOY_FRACTION``); drawn from
            a generator of its own, so ``0`` (the default) renders what earlier
            versions rendered.
    """
    from sim2real.sim import REGISTRY, make_vec

    if not 0.0 <= decoy_fraction <= 1.0:
        raise ConfigError("decoy_fraction", f"must be in [0, 1], got {decoy_fraction}")
    task_cls = REGISTRY.get(task)
    caption = captioner(task)
    venv = make_vec(task, n_envs, dr=dr, seed=seed)
    renderer = FrameRenderer(venv, camera or default_camera(task_cls), size, size)
    rng = np.random.default_rng(seed)
    controller = behaviour_controller(venv) if policy is None else None
    weight = rng.choice(MIX_WEIGHTS, size=n_envs)
    decoy_rng = np.random.default_rng([seed, 1])
    decoys = decoy_points(venv, decoy_rng, n_envs) if controller is not None and decoy_fraction > 0 else None
    decoyed = decoy_rng.random(n_envs) < decoy_fraction
    target_block = layout_slices(venv.task.observation_layout()).get("target_rel_ee")
    episode = np.arange(n_envs)
    step = np.zeros(n_envs, dtype=np.int64)
    next_episode = n_envs
    frames: list[np.ndarray] = []
    rows: list[tuple[str, bool, float, int, int]] = []

    def record(env_ids: list[int]) -> None:
        labels = caption(venv.task, venv.engine.phys)
        for i in env_ids:
            frames.append(renderer.render(i))
            rows.append(
                (labels.text[i], bool(labels.success[i]), float(labels.progress[i]), int(episode[i]), int(step[i]))
            )

    def driven(obs: np.ndarray) -> np.ndarray:
        # decoy_points gives decoys only to tasks whose observation has a target_rel_ee block.
        if decoys is None or target_block is None:
            return obs
        return toward_decoys(obs, venv, decoys, decoyed, target_block)

    hook = BeforeResetHook(venv.engine, record)
    try:
        obs = venv.reset()
        record(list(range(n_envs)))
        while len(frames) < n_frames:
            if policy is not None:
                action = np.asarray(policy(obs), dtype=np.float32)
            else:
                noise = rng.uniform(-1.0, 1.0, size=(n_envs, venv.action_space.shape[0]))
                action = (
                    noise
                    if controller is None
                    else weight[:, None] * controller.act(driven(obs)) + (1 - weight[:, None]) * noise
                )
            venv.step_async(np.clip(action, -1.0, 1.0))
            step += 1
            hook.armed = True
            try:
                obs, _, dones, _ = venv.step_wait()
            finally:
                hook.armed = False
            done_ids = np.flatnonzero(dones)
            live = [i for i in range(n_envs) if not dones[i]]
            record(live)
            for i in done_ids:
                episode[i], step[i] = next_episode, 0
                next_episode += 1
                weight[i] = rng.choice(MIX_WEIGHTS)
                if decoys is not None:
                    points = decoy_points(venv, decoy_rng, 1)
                    assert points is not None  # the same task gave the first decoys
                    decoys[i], decoyed[i] = points[0], decoy_rng.random() < decoy_fraction
            if len(done_ids) and controller is not None:
                controller.reset(done_ids)
    finally:
        hook.remove()
        renderer.close()
        venv.close()
    text, success, progress, ep, st = zip(*rows[:n_frames])
    return FrameSet(
        np.stack(frames[:n_frames]), list(text), np.array(success), np.array(progress), np.array(ep), np.array(st)
    )


def policy_frames(run: Any, n_frames: int, **options: Any) -> FrameSet:
    """``n_frames`` captioned frames of the states a loaded run's (``load_run``) stochastic
    policy visits on its own task: where RL takes a reward model. ``options`` go to
    :func:`collect_frames`."""
    return collect_frames(run.config.task, n_frames, policy=run.policy(deterministic=False), **options)
