"""A micro open_clip model through the batched env, a short PPO run on its reward,
and the CLI's clean errors."""

from __future__ import annotations

import numpy as np
import pytest

from sim2real.policies.config_loading import resolve_config
from sim2real.policies.rewards.clip_reward import ClipRewardModel
from sim2real.policies.rewards.vec_reward import ClipRewardVecEnv
from sim2real.sim import make_vec

GOAL = "the gripper touches the green ball"
BASELINE = "the gripper is far from the green ball"


def test_vec_env_rewards_are_the_models_rewards_of_the_rendered_frames(micro_checkpoint):
    model = ClipRewardModel.load(None, micro_checkpoint, GOAL, BASELINE, alpha=0.5, device="cpu")
    venv = ClipRewardVecEnv(make_vec("ArmReach", 3, seed=0), model, camera="wrist", size=32, shift=-1.0)
    try:
        venv.reset()
        for _ in range(3):
            venv.step_async(np.zeros((3, venv.action_space.shape[0]), dtype=np.float32))
            _, reward, dones, infos = venv.step_wait()
            assert not dones.any()
            frames = venv.renderer.render_all()
            np.testing.assert_allclose(reward, model(frames) - 1.0, atol=1e-5)
            assert all("true_reward" in info and info["true_reward"] <= 0.0 for info in infos)  # -distance
        assert venv.timing()["frames"] == 9
    finally:
        venv.close()


def test_the_last_frame_of_an_episode_is_rendered_before_the_reset(micro_checkpoint):
    from sim2real.policies.classical.arm import ArmCartesianController

    model = ClipRewardModel.load(None, micro_checkpoint, GOAL, BASELINE, device="cpu")
    venv = ClipRewardVecEnv(make_vec("ArmReach", 2, seed=1), model, camera="wrist", size=32)
    controller = ArmCartesianController.for_task(venv.venv.task)
    try:
        obs = venv.reset()
        for _ in range(100):  # the controller reaches the target (success ends the episode) in ~40 steps
            venv.step_async(controller.act(obs))
            obs, reward, dones, infos = venv.step_wait()
            if dones.any():
                break
        done = int(np.flatnonzero(dones)[0])
        assert infos[done]["success"]
        terminal = venv._terminal_frames[done]
        fresh = venv.renderer.render(done)  # the new episode's first frame
        assert not np.array_equal(terminal, fresh)
        assert reward[done] == pytest.approx(model(terminal[None])[0] - 1.0, abs=1e-5)
        assert "clip_r" in infos[done]["episode"]
    finally:
        venv.close()


@pytest.mark.heavy
def test_a_short_ppo_run_trains_on_the_clip_reward_and_evaluates_on_the_task(
    micro_checkpoint, micro_model_name, tmp_path, capsys
):
    from sim2real.policies.trainer import Trainer

    cfg = resolve_config(
        "ArmReach",
        overrides={
            "total_steps": 256,
            "n_envs": 4,
            "ppo.n_steps": 64,
            "ppo.batch_size": 128,
            "ppo.n_epochs": 1,
            "eval.every_steps": 0,
            "eval.episodes": 2,
            "eval.n_envs": 2,
            "checkpoint.every_steps": 256,
            "net.pi": [16],
            "net.vf": [16],
            "reward.source": "clip",
            "reward.goal": [GOAL],
            "reward.baseline": [BASELINE],
            "reward.clip_weights": str(micro_checkpoint),
            "reward.alpha": 1.0,
            "reward.device": "cpu",
        },
    )
    trainer = Trainer(cfg, tmp_path / "run", progress=False)
    try:
        wrapper = trainer.env.venv
        assert isinstance(wrapper, ClipRewardVecEnv)
        assert wrapper.renderer.camera == "wrist" and wrapper.renderer.width == 32  # from the checkpoint's metadata
        result = trainer.run()
        assert result.steps == 256
        assert wrapper.timing()["frames"] == 256
        rollout = trainer.model.rollout_buffer.rewards  # what PPO learned from: CLIP rewards, not -distance
        assert np.all(rollout <= 0.0) and np.all(rollout >= -2.0) and rollout.std() > 0
        assert result.last_eval is not None and "success_rate" in result.last_eval  # evaluated on the task
    finally:
        trainer.close()
    # The reward model can then learn the states this policy drives the arm into.
    import json

    from sim2real.cli import main

    args = ["reward", "finetune-clip", "ArmReach", "--out", str(tmp_path / "clip"), "--frames", "60", "--n-envs", "4"]
    args += ["--policy", str(tmp_path / "run"), "--policy", str(tmp_path / "run")]  # repeatable: one set each
    args += ["--policy-frames", "40", "--policy-checkpoint", "last", "--steps", "2", "--batch-size", "8"]
    assert main([*args, "--model", micro_model_name, "--size", "32", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["policy"] == {"runs": [str(tmp_path / "run")] * 2, "frames": 40, "checkpoint": "last"}
    assert summary["frames"]["train"] + summary["frames"]["heldout"] == 140
    # ... and an evaluation reports the reward on the states it visits as well.
    args = ["reward", "eval", "ArmReach", "--clip-weights", str(tmp_path / "clip"), "--frames", "400"]
    assert main([*args, "--policy", str(tmp_path / "run"), "--json"]) == 0
    scored = json.loads(capsys.readouterr().out)["models"][str(tmp_path / "clip")]
    visited = scored["policy_states"]
    assert visited["frames"] == 400 and visited["step"] == 256 and len(visited["alphas"]) == 5
    # Its audit counts the policy's failed states scored like the scripted successes.
    assert visited["quality"]["audit"]["threshold"] == scored["quality"]["audit"]["threshold"]


def test_train_cli_without_weights_exits_cleanly_with_instructions(tmp_path, capsys):
    from sim2real.cli import main

    code = main(
        [
            "train",
            "ArmReach",
            "--reward",
            f"clip:{GOAL}",
            "--steps",
            "64",
            "--out",
            str(tmp_path / "run"),
            "--no-progress",
        ]
    )
    err = capsys.readouterr().err
    assert code == 2, err
    assert "clip_weights" in err and "finetune-clip" in err and "Traceback" not in err
    code = main(
        [
            "train",
            "ArmReach",
            "--reward",
            "clip:x",
            "--clip-weights",
            str(tmp_path / "nowhere"),
            "--out",
            str(tmp_path / "run2"),
            "--no-progress",
        ]
    )
    err = capsys.readouterr().err
    assert code == 2 and "not found" in err and "Traceback" not in err
    code = main(["train", "ArmReach", "--reward", "gpt:x", "--out", str(tmp_path / "run3"), "--no-progress"])
    assert code == 2 and "clip:GOAL PROMPT" in capsys.readouterr().err


def test_an_unknown_camera_is_refused_by_name(micro_checkpoint):
    from sim2real.errors import ConfigError

    model = ClipRewardModel.load(None, micro_checkpoint, GOAL, BASELINE, device="cpu")
    venv = make_vec("ArmReach", 1, seed=0)
    try:
        with pytest.raises(ConfigError, match=r"no camera 'nose'.*wrist"):
            ClipRewardVecEnv(venv, model, camera="nose", size=32)
    finally:
        venv.close()


def test_joined_cameras_stack_their_views_top_to_bottom():
    from sim2real.errors import ConfigError
    from sim2real.policies.rewards.vec_reward import FrameRenderer

    venv = make_vec("ArmReach", 2, seed=0)
    venv.reset()
    stacked = FrameRenderer(venv, "reach_view+wrist", 48, 33)
    fixed, wrist = FrameRenderer(venv, "reach_view", 48, 17), FrameRenderer(venv, "wrist", 48, 16)
    try:
        frame = stacked.render(1)
        assert frame.shape == (33, 48, 3)  # the first view takes the odd row
        np.testing.assert_array_equal(frame[:17], fixed.render(1))
        np.testing.assert_array_equal(frame[17:], wrist.render(1))
        assert not np.array_equal(frame[17:], stacked.render(0)[17:])  # each env's own state
        with pytest.raises(ConfigError, match=r"no camera 'nose'"):
            FrameRenderer(venv, "reach_view+nose", 48, 32)
    finally:
        for r in (stacked, fixed, wrist):
            r.close()
        venv.close()


def test_reach_rewards_default_to_the_fixed_view_and_the_wrist_close_up():
    from sim2real.policies.rewards.dataset import default_camera
    from sim2real.sim import REGISTRY

    assert default_camera(REGISTRY.get("ArmReach")) == "reach_view+wrist"
    assert default_camera(REGISTRY.get("ArmPush")) == "wrist"
    assert default_camera(REGISTRY.get("DroneHover")) == REGISTRY.get("DroneHover").render_camera


@pytest.mark.slow
def test_reward_bench_uses_the_models_camera_and_size(micro_checkpoint):
    from sim2real.bench.reward import run_reward_bench

    result = run_reward_bench("ArmReach", str(micro_checkpoint), 16, 512, 8, log=lambda m: None)
    assert result["camera"] == "wrist" and result["image_size"] == 32  # the checkpoint's metadata
    for runtime in ("torch", "onnxruntime"):
        assert set(result["reward_fps"][runtime]) == {"batch_1", "batch_32", "batch_256"}
        assert set(result["achieved_gflops"][runtime]) == set(result["reward_fps"][runtime])
    assert result["image_gflop_per_frame"] > 0 and result["onnxruntime_batched_vs_torch_one_frame"] > 0
    for key in ("clip_reward", "clip_reward_off_loop"):
        clip = result["training"][key]
        assert clip["steps"] == 512 and 0 < clip["render_share"] < 1 and 0 <= clip["reward_model_share"] < 1
        assert clip["model_seconds"] > 0
    fresh = run_reward_bench("ArmReach", None, 16, 512, 8, log=lambda m: None)
    assert fresh["camera"] == "reach_view+wrist" and fresh["image_size"] == 96
