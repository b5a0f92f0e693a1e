"""Reward inference off the rollout loop (``policies/rewards/offloop.py``): the same
rewards as inline, refined weights reach the reward process, and a failed or dead
process is a clear error, never a hang."""

from __future__ import annotations

from functools import partial

import numpy as np
import pytest
import torch

from sim2real.errors import ConfigError
from sim2real.policies.rewards.clip_reward import ClipRewardModel
from sim2real.policies.rewards.config import RewardConfig
from sim2real.policies.rewards.offloop import RewardProcess, RewardProcessError
from sim2real.policies.rewards.vec_reward import ClipRewardVecEnv
from sim2real.sim import make_vec

GOAL = "the gripper touches the green ball"
BASELINE = "the gripper is far from the green ball"


def _rollout(venv: ClipRewardVecEnv, steps: int, seed: int) -> tuple[np.ndarray, int]:
    """Rewards ``[steps, N]`` under seeded random actions, and the episodes that ended."""
    rng = np.random.default_rng(seed)
    venv.reset()
    rewards, ended = [], 0
    for _ in range(steps):
        venv.step_async(rng.uniform(-1, 1, (venv.num_envs, venv.action_space.shape[0])).astype(np.float32))
        _, reward, dones, _ = venv.step_wait()
        rewards.append(reward)
        ended += int(dones.sum())
    return np.stack(rewards), ended


@pytest.mark.heavy
def test_off_loop_rewards_are_the_inline_rewards_and_follow_refined_weights(micro_checkpoint):
    load = partial(ClipRewardModel.load, None, str(micro_checkpoint), GOAL, BASELINE, alpha=0.5, device="cpu")
    model = load()
    inline = ClipRewardVecEnv(make_vec("ArmReach", 3, seed=0), model, camera="wrist", size=32)
    process = RewardProcess(load, chunks=2)  # 3 envs in chunks of 2 and 1
    offloop = ClipRewardVecEnv(make_vec("ArmReach", 3, seed=0), process, camera="wrist", size=32)
    try:
        # 102 steps: every episode ends at 100 (time limit) and the terminal frames,
        # rendered before the reset, go through both paths too.
        expected, ended = _rollout(inline, 102, seed=1)
        got, _ = _rollout(offloop, 102, seed=1)
        assert ended >= 3
        np.testing.assert_allclose(got, expected, atol=1e-5)
        assert np.ptp(expected) > 0  # not one constant reward
        timing = offloop.timing()
        assert timing["frames"] == 306 and timing["model_seconds"] > 0

        # A refinement round changes the model in this process; the reward process follows.
        with torch.no_grad():
            for p in model.model.visual.parameters():
                p.add_(0.05 * torch.randn_like(p))
        model.refresh()
        frames = offloop.renderer.render_all()
        before = process(frames)
        process.load_weights(model)
        np.testing.assert_allclose(process(frames), model(frames), atol=1e-5)
        assert not np.allclose(before, model(frames), atol=1e-5)

        # A step that fails half-way (rendering raised after the first chunk went out)
        # leaves no answer behind for the next step to read as its own.
        render = offloop.renderer.render

        def render_fails_on_the_last_env(i: int) -> np.ndarray:
            if i == 2:
                raise RuntimeError("GL context lost")
            return render(i)

        offloop.renderer.render = render_fails_on_the_last_env
        offloop.step_async(np.zeros((3, offloop.action_space.shape[0]), dtype=np.float32))
        with pytest.raises(RuntimeError, match="GL context lost"):
            offloop.step_wait()
        offloop.renderer.render = render
        np.testing.assert_allclose(process(frames), model(frames), atol=1e-5)
    finally:
        inline.close()
        offloop.close()
    assert not process._process.is_alive()


@pytest.mark.heavy
def test_a_reward_model_that_cannot_load_is_a_clear_error(tmp_path):
    load = partial(ClipRewardModel.load, None, str(tmp_path / "missing"), GOAL, BASELINE, device="cpu")
    with pytest.raises(RewardProcessError, match="building the reward model failed"):
        RewardProcess(load, timeout_s=120)


def test_a_dead_reward_process_is_an_error_not_a_hang(micro_checkpoint):
    process = RewardProcess(partial(ClipRewardModel.load, None, str(micro_checkpoint), GOAL, BASELINE, device="cpu"),
                            timeout_s=60)
    process._process.kill()
    process._process.join(timeout=10)
    with pytest.raises(RewardProcessError, match=r"gone|died"):
        process(np.zeros((2, 32, 32, 3), np.uint8))
    process.close()  # a second close is harmless


def test_the_inference_mode_is_checked():
    cfg = RewardConfig(source="clip", goal=[GOAL], baseline=[BASELINE], clip_weights="w", inference="thread")
    with pytest.raises(ConfigError, match=r"reward\.inference"):
        cfg.validate()
    cfg = RewardConfig(source="clip", goal=[GOAL], baseline=[BASELINE], clip_weights="w", inference="process",
                       chunks=0)
    with pytest.raises(ConfigError, match=r"reward\.chunks"):
        cfg.validate()
