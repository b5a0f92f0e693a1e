"""Training on a CLIP reward: build the reward model and wrap the batched env."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sim2real.policies.rewards.clip_reward import ClipRewardModel
from sim2real.policies.rewards.dataset import default_camera
from sim2real.policies.rewards.ensemble import EnsembleReward
from sim2real.policies.rewards.finetune import read_metadata
from sim2real.policies.rewards.vec_reward import ClipRewardVecEnv

DEFAULT_IMAGE_SIZE = 64


def reward_model_from_config(reward: Any) -> ClipRewardModel | EnsembleReward:
    """The reward model a ``RewardConfig`` describes: one :class:`ClipRewardModel`, or
    with ``ensemble`` the lower-confidence-bound :class:`EnsembleReward` of all of them."""
    members = [
        ClipRewardModel.load(
            reward.clip_model,
            weights,
            reward.goal,
            reward.baseline,
            alpha=reward.alpha,
            device=reward.device,
            batch_size=reward.batch_size,
        )
        for weights in [reward.clip_weights, *reward.ensemble]
    ]
    return EnsembleReward(members, reward.lcb) if reward.ensemble else members[0]


def frame_settings(
    weights: str | None,
    task_cls: type,
    camera: str | None = None,
    size: int | None = None,
    model_size: int | None = None,
) -> tuple[str | None, int]:
    """Camera and frame size of a reward model's frames: the ones asked for, else what the
    model folder was trained on, else the task's reward camera and ``model_size`` (the
    model's input size) or ``DEFAULT_IMAGE_SIZE``."""
    from sim2real.sim.core.registry import gym_id

    meta = read_metadata(weights) if weights and Path(weights).is_dir() else {}
    camera = camera or meta.get("cameras", {}).get(gym_id(task_cls)) or default_camera(task_cls)
    return camera, int(size or meta.get("image_size") or model_size or DEFAULT_IMAGE_SIZE)


def render_settings(reward: Any, task_cls: type) -> tuple[str | None, int]:
    """Camera and frame size of a ``reward:`` config block (see :func:`frame_settings`)."""
    return frame_settings(reward.clip_weights, task_cls, reward.camera, reward.image_size)


def wrap_clip_reward(venv: Any, config: Any) -> ClipRewardVecEnv:
    """``venv`` rewarded by the CLIP reward of ``config.reward``."""
    from sim2real.sim import REGISTRY

    task_cls = REGISTRY.get(config.task)
    model = reward_model_from_config(config.reward)
    camera, size = render_settings(config.reward, task_cls)
    return ClipRewardVecEnv(venv, model, camera=camera, size=size, shift=config.reward.shift)
