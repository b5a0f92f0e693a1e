"""Refining the reward model on the policy's own states during training (issue 24)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from sim2real.errors import ConfigError
from sim2real.policies.rewards.captions import Captions, captioner
from sim2real.policies.rewards.clip_reward import ClipRewardModel
from sim2real.policies.rewards.config import RefineConfig, RewardConfig
from sim2real.policies.rewards.finetune import FinetuneConfig
from sim2real.policies.rewards.refine import OnlineRefiner
from sim2real.policies.rewards.vec_reward import ClipRewardVecEnv
from sim2real.sim import make_vec

GOAL, BASELINE = "the gripper touches the green ball", "the gripper is very far from the green ball"


def labels(n: int, start: int) -> Captions:
    k = np.arange(start, start + n)
    return Captions([f"caption {i % 3}" for i in k], k % 3 == 2, (k % 3).astype(float))


def test_the_reservoir_keeps_a_uniform_sample_of_everything_seen(micro_checkpoint):
    model = ClipRewardModel.load(None, micro_checkpoint, GOAL, BASELINE, device="cpu")
    refiner = OnlineRefiner(model, None, every=10**9, capacity=50, cfg=FinetuneConfig(steps=1), seed=0)
    frames = np.zeros((10, 8, 8, 3), np.uint8)
    for step in range(100):  # 1000 frames; pixel (0, 0) holds the step and the env it was seen at
        frames[:, 0, 0, 0] = step
        frames[:, 0, 0, 1] = np.arange(10)
        refiner.observe(frames, labels(10, 10 * step))
    kept = refiner.policy_set()
    assert len(kept) == 50 and refiner.seen == 1000
    steps = kept.frames[:, 0, 0, 0].astype(int)
    # Uniform over all 1000: the mean step is near 50 (a "keep the newest" buffer would give ~97).
    assert 35 < steps.mean() < 65 and steps.min() < 20 and steps.max() > 80
    # Each kept frame carries its own labels.
    index = 10 * steps + kept.frames[:, 0, 0, 1].astype(int)
    assert kept.captions == [f"caption {k % 3}" for k in index]
    np.testing.assert_array_equal(kept.progress, index % 3)


def test_rounds_follow_the_schedule_and_change_the_reward(micro_model_name, micro_checkpoint):
    model = ClipRewardModel.load(None, micro_checkpoint, GOAL, BASELINE, device="cpu")
    cfg = FinetuneConfig(steps=5, batch_size=8, learning_rate=3e-3, model=micro_model_name)
    refiner = OnlineRefiner(model, None, every=100, capacity=64, cfg=cfg)
    rng = np.random.default_rng(0)
    frames = rng.integers(0, 256, (16, 32, 32, 3), dtype=np.uint8)
    refiner.observe(frames, labels(16, 0))
    before_goal = model.goal.clone()
    before = model(frames)
    assert refiner.maybe_refine(99) is None  # not yet due
    done = refiner.maybe_refine(130)
    assert done is not None and done.env_steps == 130 and done.policy_frames == 16 and done.optimizer_steps == 5
    assert refiner.next_round == 200 and refiner.maybe_refine(150) is None
    assert not torch.allclose(model.goal, before_goal)  # the prompts were embedded again
    assert not np.allclose(model(frames), before)
    assert not model.model.training  # back in eval mode
    assert refiner.describe()["rounds"][0]["policy_frames"] == 16


def test_the_training_env_labels_each_frame_with_the_state_it_shows(micro_model_name, micro_checkpoint):
    """Frames of ended episodes carry the labels of their last state, not of the reset one."""
    from sim2real.policies.classical.arm import ArmCartesianController

    model = ClipRewardModel.load(None, micro_checkpoint, GOAL, BASELINE, device="cpu")
    cfg = FinetuneConfig(steps=2, batch_size=8, model=micro_model_name)
    refiner = OnlineRefiner(model, None, every=10**9, capacity=10_000, cfg=cfg)
    batched = make_vec("ArmReach", 2, seed=1)
    venv = ClipRewardVecEnv(batched, model, camera="wrist", size=32, refiner=refiner, caption=captioner("ArmReach"))
    controller = ArmCartesianController.for_task(batched.task)
    try:
        obs = venv.reset()
        for _ in range(100):
            assert isinstance(obs, np.ndarray)
            venv.step_async(controller.act(obs))
            obs, _, dones, infos = venv.step_wait()
            if dones.any():
                break
        done = int(np.flatnonzero(dones)[0])
        assert infos[done]["success"]
        kept = refiner.policy_set()
        assert len(kept) == venv.env_steps == 2 * (len(kept) // 2)
        # The last frame of env `done` is a success, labelled "touches", as the simulator said.
        last = len(kept) - 2 + done
        assert kept.success[last] and kept.captions[last] == GOAL
        np.testing.assert_array_equal(kept.frames[last], venv._terminal_frames[done])
    finally:
        venv.close()
    with pytest.raises(ConfigError, match="captions"):
        ClipRewardVecEnv(make_vec("ArmReach", 1), model, camera="wrist", size=32, refiner=refiner)


def test_bad_refine_settings_are_refused():
    for field, value in (("every", -1), ("frames", 1), ("steps", 0), ("learning_rate", float("nan"))):
        refine = RefineConfig(every=1000)
        setattr(refine, field, value)
        with pytest.raises(ConfigError, match=f"reward.refine.{field}"):
            refine.validate()
    cfg = RewardConfig(source="clip", goal=[GOAL], baseline=[BASELINE], clip_weights="a", ensemble=["b"],
                       refine=RefineConfig(every=1000))
    with pytest.raises(ConfigError, match="ensemble"):
        cfg.validate()
