"""Training on a CLIP reward: build the reward model and wrap the batched env."""

from __future__ import annotations

from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import Any

from sim2real.policies.rewards.captions import captioner
from sim2real.policies.rewards.clip_reward import ClipRewardModel
from sim2real.policies.rewards.dataset import DECOY_FRACTION, collect_frames, default_camera
from sim2real.policies.rewards.ensemble import EnsembleReward
from sim2real.policies.rewards.finetune import FinetuneConfig, read_metadata
from sim2real.policies.rewards.hard_negatives import HARD_MIX
from sim2real.policies.rewards.offloop import RewardFn, RewardProcess
from sim2real.policies.rewards.refine import OnlineRefiner
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
            runtime=reward.runtime,
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
    camera, size = render_settings(config.reward, task_cls)
    refine = config.reward.refine
    # The refiner trains a model in this process; off the loop, the reward process gets
    # its weights after every round, and this copy never embeds a frame: torch only, so
    # no round exports an ONNX tower here that nothing runs.
    model = None
    if config.reward.inference == "inline":
        model = reward_model_from_config(config.reward)
    elif refine.every:
        model = reward_model_from_config(replace(config.reward, runtime="torch"))
    inference: RewardFn | RewardProcess
    if config.reward.inference == "process":
        inference = RewardProcess(partial(reward_model_from_config, config.reward), chunks=config.reward.chunks,
                                  torch_threads=config.torch_threads)
    else:
        assert model is not None
        inference = model
    try:
        if not refine.every:
            return ClipRewardVecEnv(venv, inference, camera=camera, size=size, shift=config.reward.shift)
        assert isinstance(model, ClipRewardModel)  # RewardConfig.validate refuses refining an ensemble
        return ClipRewardVecEnv(venv, inference, camera=camera, size=size, shift=config.reward.shift,
                                refiner=online_refiner(model, config, camera, size), caption=captioner(config.task))
    except BaseException:
        if isinstance(inference, RewardProcess):
            inference.close()
        raise


def online_refiner(model: ClipRewardModel, config: Any, camera: str | None, size: int) -> OnlineRefiner:
    """The refiner a training config's ``reward.refine`` block describes, with its scripted
    anchor frames rendered now (hard-negative decoys included; seeded apart from training).
    Captions the model folder was fine-tuned without stay out of its refinement."""
    refine = config.reward.refine
    anchor = None
    if refine.anchor_frames:
        anchor = collect_frames(config.task, refine.anchor_frames, n_envs=8, size=size, camera=camera,
                                seed=config.seed + 7919, decoy_fraction=DECOY_FRACTION, decoy_mix=HARD_MIX,
                                task_options=config.task_options)
    cfg = FinetuneConfig(steps=refine.steps, batch_size=refine.batch_size, learning_rate=refine.learning_rate,
                         progress_weight=refine.progress_weight, progress_alpha=config.reward.alpha, seed=config.seed)
    held_out = config.reward.clip_weights and Path(config.reward.clip_weights).is_dir() and \
        read_metadata(config.reward.clip_weights).get("held_out_captions")
    return OnlineRefiner(model, anchor, refine.every, refine.frames, cfg, seed=config.seed,
                         held_out=frozenset(held_out or ()))
