"""Recomputing a replay buffer's rewards after the reward model is refined (issue 24)."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from gymnasium import spaces

from sim2real.policies.rewards.captions import Captions
from sim2real.policies.rewards.clip_reward import ClipRewardModel
from sim2real.policies.rewards.dataset import FrameSet
from sim2real.policies.rewards.finetune import FinetuneConfig
from sim2real.policies.rewards.refine import OnlineRefiner
from sim2real.policies.rewards.relabel import FRAME_KEY, RelabelReplayBuffer
from sim2real.policies.rewards.vec_reward import ClipRewardVecEnv

GOAL, BASELINE = "the gripper touches the green ball", "the gripper is very far from the green ball"


def buffer(size: int, n_envs: int = 2) -> RelabelReplayBuffer:
    box = spaces.Box(-1.0, 1.0, (3,), np.float32)
    return RelabelReplayBuffer(size, box, box, device="cpu", n_envs=n_envs)


def add(buf: RelabelReplayBuffer, step: int, with_frames: bool = True) -> None:
    """One batch of transitions whose frames hold ``step`` and the env index in pixel (0, 0)."""
    n = buf.n_envs
    infos = [{FRAME_KEY: np.full((4, 4, 3), 0, np.uint8)} if with_frames else {} for _ in range(n)]
    for i, info in enumerate(infos):
        if with_frames:
            info[FRAME_KEY][0, 0, 0], info[FRAME_KEY][0, 0, 1] = step % 256, i
    zeros = np.zeros((n, 3), np.float32)
    buf.add(zeros, zeros, zeros, np.full(n, -1.0, np.float32), np.zeros(n), infos)


def pixel_score(frames: np.ndarray) -> np.ndarray:
    return frames[:, 0, 0, 0] * 10.0 + frames[:, 0, 0, 1]


def test_relabelling_gives_each_transition_the_reward_of_its_own_frame_after_wrap_around():
    buf = buffer(size=10)  # 5 rows of 2 envs: steps 0-7 overwrite rows 0-2 with steps 5-7
    for step in range(8):
        add(buf, step)
    assert buf.full and buf.frames_kept == 10
    done = buf.relabel(pixel_score, batch_size=3)
    assert done.transitions == 10 and done.mean_reward_before == -1.0
    steps = np.array([5, 6, 7, 3, 4])  # what each row holds now
    np.testing.assert_array_equal(buf.rewards, steps[:, None] * 10.0 + np.arange(2)[None, :])
    assert done.mean_abs_change == pytest.approx(float(np.abs(buf.rewards + 1.0).mean()))


def test_transitions_without_their_frame_keep_their_reward_and_a_bad_scorer_changes_nothing():
    buf = buffer(size=20)
    add(buf, 1)
    add(buf, 2, with_frames=False)
    add(buf, 3)
    assert buf.frames_kept == 4
    with pytest.raises(ValueError, match="keeps its rewards"):
        buf.relabel(lambda f: np.where(f[:, 0, 0, 0] == 3, np.nan, 0.0), batch_size=2)
    np.testing.assert_array_equal(buf.rewards[:3], -1.0)  # the failed batch came after a good one
    buf.relabel(pixel_score)
    np.testing.assert_array_equal(buf.rewards[:3], [[10, 11], [-1, -1], [30, 31]])


def test_frames_stay_out_of_the_pickle_and_the_restored_buffer_keeps_its_rewards():
    buf = buffer(size=20)
    for step in range(4):
        add(buf, step)
    buf.relabel(pixel_score)
    restored = pickle.loads(pickle.dumps(buf))
    assert len(pickle.dumps(buf)) < 20_000 and restored.frames_kept == 0
    np.testing.assert_array_equal(restored.rewards, buf.rewards)
    assert restored.relabel(pixel_score).transitions == 0
    add(restored, 9)  # new transitions after a resume are relabelled again
    restored.relabel(lambda f: np.zeros(len(f)))
    np.testing.assert_array_equal(restored.rewards[:5], [[0, 1], [10, 11], [20, 21], [30, 31], [0, 0]])


def test_held_out_captions_never_reach_a_refinement_round(micro_checkpoint):
    model = ClipRewardModel.load(None, micro_checkpoint, GOAL, BASELINE, device="cpu")
    n = 6
    anchor = FrameSet(np.zeros((n, 8, 8, 3), np.uint8), [GOAL, BASELINE] * 3, np.arange(n) % 2 == 0,
                      np.zeros(n), np.arange(n), np.zeros(n, int))
    refiner = OnlineRefiner(model, anchor, every=10**9, capacity=50, cfg=FinetuneConfig(steps=1),
                            held_out=frozenset({GOAL}))
    refiner.observe(np.zeros((4, 8, 8, 3), np.uint8),
                    Captions([GOAL, BASELINE, GOAL, BASELINE], np.array([1, 0, 1, 0], bool), np.zeros(4)))
    assert refiner.policy_set().captions == [BASELINE, BASELINE] and refiner.seen == 2
    assert refiner.anchor is not None and refiner.anchor.captions == [BASELINE] * 3
    assert refiner.describe()["held_out"] == [GOAL]


def test_sac_with_refinement_trains_on_the_refined_models_rewards(micro_checkpoint, tmp_path):
    """After a run, every reward in SAC's buffer is what the final refined model gives its frame."""
    from sim2real.policies.config_loading import resolve_config
    from sim2real.policies.trainer import Trainer

    overrides = {
        "algo": "sac", "total_steps": 256, "n_envs": 4, "sac.learning_starts": 64, "sac.batch_size": 32,
        "sac.buffer_size": 400, "eval.every_steps": 0, "eval.episodes": 1, "eval.n_envs": 1,
        "checkpoint.every_steps": 256, "net.pi": [16], "net.vf": [16], "reward.source": "clip",
        "reward.goal": [GOAL], "reward.baseline": [BASELINE], "reward.clip_weights": str(micro_checkpoint),
        "reward.device": "cpu", "reward.refine.every": 128, "reward.refine.frames": 64,
        "reward.refine.anchor_frames": 0, "reward.refine.steps": 2, "reward.refine.batch_size": 8,
    }
    trainer = Trainer(resolve_config("ArmReach", overrides=overrides), tmp_path / "run", progress=False)
    try:
        trainer.run()
        env = trainer.env.venv
        assert isinstance(env, ClipRewardVecEnv) and env.refiner is not None
        buf = trainer.model.replay_buffer
        assert isinstance(buf, RelabelReplayBuffer)
        assert [r["env_steps"] for r in env.refiner.relabels] == [128, 256]
        assert env.refiner.relabels[0]["transitions"] == 124 and env.timing()["relabel_seconds"] > 0
        rows, envs = np.nonzero(buf.has_frame[: buf.size()])
        assert len(rows) == 256
        frames = np.stack([buf._blocks[0][r, e] for r, e in zip(rows, envs)])
        np.testing.assert_allclose(buf.rewards[rows, envs], env.score(frames), rtol=1e-4, atol=1e-4)
    finally:
        trainer.close()
