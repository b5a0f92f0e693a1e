"""Training on a CLIP reward: build the reward model and wrap the batched env."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sim2real.policies.rewards.clip_reward import ClipRewardModel
from sim2real.policies.rewards.dataset import default_camera
from sim2real.policies.rewards.finetune import read_metadata
from sim2real.policies.rewards.vec_reward import ClipRewardVecEnv

DEFAULT_IMAGE_SIZE = 64


def reward_model_from_config(reward: Any) -> ClipRewardModel:
    """The :class:`ClipRewardModel` a ``RewardConfig`` describes."""
    return ClipRewardModel.load(
        reward.clip_model,
        reward.clip_weights,
        reward.goal,
        reward.baseline,
        alpha=reward.alpha,
        device=reward.device,
        batch_size=reward.batch_size,
    )


def render_settings(reward: Any, task_id: str, task_cls: type) -> tuple[str | None, int]:
    """Camera and frame size: the config's, else what the model was trained on, else defaults."""
    meta = read_metadata(reward.clip_weights) if reward.clip_weights and Path(reward.clip_weights).is_dir() else {}
    camera = reward.camera or meta.get("cameras", {}).get(task_id) or default_camera(task_cls)
    size = reward.image_size or int(meta.get("image_size", DEFAULT_IMAGE_SIZE))
    return camera, size


def wrap_clip_reward(venv: Any, config: Any) -> ClipRewardVecEnv:
    """``venv`` rewarded by the CLIP reward of ``config.reward``."""
    from sim2real.sim import REGISTRY
    from sim2real.sim.core.registry import gym_id

    task_cls = REGISTRY.get(config.task)
    model = reward_model_from_config(config.reward)
    camera, size = render_settings(config.reward, gym_id(task_cls), task_cls)
    return ClipRewardVecEnv(venv, model, camera=camera, size=size, shift=config.reward.shift)
