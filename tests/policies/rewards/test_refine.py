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


def test_the_refined_model_is_saved_with_the_run_and_a_resume_continues_with_it(
    micro_checkpoint, micro_model_name, tmp_path
):
    from safetensors.torch import load_file

    from sim2real.policies.common import checkpoint
    from sim2real.policies.config_loading import resolve_config
    from sim2real.policies.trainer import Trainer

    overrides = {
        "total_steps": 256, "n_envs": 4, "ppo.n_steps": 32, "ppo.batch_size": 64, "ppo.n_epochs": 1,
        "eval.every_steps": 0, "eval.episodes": 1, "eval.n_envs": 1, "checkpoint.every_steps": 256,
        "net.pi": [16], "net.vf": [16], "reward.source": "clip", "reward.goal": [GOAL],
        "reward.baseline": [BASELINE], "reward.clip_weights": str(micro_checkpoint), "reward.device": "cpu",
        "reward.refine.every": 128, "reward.refine.frames": 64, "reward.refine.anchor_frames": 0,
        "reward.refine.steps": 2, "reward.refine.batch_size": 8,
    }
    run = tmp_path / "run"
    trainer = Trainer(resolve_config("ArmReach", overrides=overrides), run, progress=False)
    try:
        trainer.run()
        refiner = trainer.env.venv.refiner
        assert [r.env_steps for r in refiner.rounds] == [128, 256]
        refined = {k: v.detach().clone() for k, v in refiner.reward_model.model.state_dict().items()}
    finally:
        trainer.close()
    original = load_file(str(micro_checkpoint / "open_clip_model.safetensors"))
    last = checkpoint.locate(run / "checkpoints", "last")
    saved = load_file(str(last / OnlineRefiner.WEIGHTS))
    assert any(not torch.equal(saved[k], original[k]) for k in original)  # the refined weights, not the start
    assert all(torch.equal(saved[k], refined[k]) for k in refined)
    # A resumed run continues with the refined model and its schedule (the next round at 384).
    resumed = Trainer(resolve_config("ArmReach", overrides={**overrides, "total_steps": 384}), run, resume=True,
                      progress=False)
    try:
        again = resumed.env.venv.refiner
        assert [r.env_steps for r in again.rounds] == [128, 256] and again.next_round == 384
        state = again.reward_model.model.state_dict()
        assert all(torch.equal(state[k], refined[k]) for k in refined)
    finally:
        resumed.close()
