"""Captions from simulator state, contrastive training that actually learns, and
the reward evaluation (Pearson, EPIC distance, plot)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from sim2real.policies.rewards.captions import REACH_BINS, REACH_FAR, captioner
from sim2real.policies.rewards.clip_reward import ClipRewardModel
from sim2real.policies.rewards.dataset import FrameSet, collect_frames
from sim2real.policies.rewards.finetune import (
    FinetuneConfig,
    caption_accuracy,
    multi_positive_loss,
    ordinal_targets,
    train_clip,
)
from sim2real.policies.rewards.reward_eval import ALPHAS, epic_distance, evaluate_reward, pearson, plot_episodes


def test_reach_frames_are_captioned_from_the_state_including_the_successful_last_frames():
    from sim2real.policies.classical.arm import ArmCartesianController
    from sim2real.sim import make_vec

    probe = make_vec("ArmReach", 1)
    controller = ArmCartesianController.for_task(probe.task)
    probe.close()
    data = collect_frames("ArmReach", 240, n_envs=4, size=32, seed=3, policy=controller.act)
    assert data.frames.shape == (240, 32, 32, 3) and data.frames.dtype == np.uint8
    for caption, progress in zip(data.captions, data.progress):
        distance = -progress
        expected = next((text for bound, text in REACH_BINS if distance < bound), REACH_FAR)
        assert caption == expected
    # Success ends a reach episode: its frame exists only because it is taken before the reset.
    assert data.success.any()
    assert all(data.captions[i] == "the gripper touches the green ball" for i in np.flatnonzero(data.success))
    assert len(np.unique(data.episode)) > 4


def test_decoy_episodes_drive_the_scripted_arm_to_random_workspace_points_not_the_target():
    from sim2real.errors import ConfigError
    from sim2real.policies.classical.arm import ArmCartesianController
    from sim2real.policies.rewards.behaviour import decoy_points, toward_decoys
    from sim2real.sim import make_vec
    from sim2real.sim.core.layout import layout_slices

    venv = make_vec("ArmReach", 2, dr="none", seed=0)
    try:
        controller = ArmCartesianController.for_task(venv.task)
        obs = venv.reset()
        decoys = decoy_points(venv, np.random.default_rng(0), np.arange(2))
        decoys[0] = [0.5, 0.0, 0.3]  # the middle of the workspace
        far_apart = np.linalg.norm(decoys[0] - venv.task.targets[0])
        assert far_apart > 0.12
        mask = np.array([True, False])
        block = layout_slices(venv.task.observation_layout())["target_rel_ee"]
        for _ in range(60):
            obs, *_ = venv.step(controller.act(toward_decoys(obs, venv, decoys, mask, block)))
        ee = venv.task.ee_pos(venv.engine.phys)
        assert np.linalg.norm(ee[0] - decoys[0]) < 0.02  # at its decoy, not at its target
        assert np.linalg.norm(ee[0] - venv.task.targets[0]) > far_apart - 0.02
    finally:
        venv.close()
    near = collect_frames("ArmReach", 160, n_envs=4, size=16, seed=1, decoy_fraction=0.0)
    far = collect_frames("ArmReach", 160, n_envs=4, size=16, seed=1, decoy_fraction=1.0)
    assert np.median(far.progress) < np.median(near.progress)
    with pytest.raises(ConfigError, match="decoy_fraction"):
        collect_frames("ArmReach", 8, n_envs=2, size=16, decoy_fraction=1.5)


def test_tasks_without_captions_are_refused():
    from sim2real.errors import ConfigError

    with pytest.raises(ConfigError, match="no captions"):
        captioner("ArmMaze")


def synthetic_frames(n: int, seed: int) -> FrameSet:
    """Red frames are 'successes', blue ones are not; a brightness ramp as progress."""
    rng = np.random.default_rng(seed)
    red = rng.random(n) < 0.5
    frames = np.zeros((n, 32, 32, 3), dtype=np.uint8)
    level = rng.integers(120, 255, n)
    frames[red, :, :, 0] = level[red, None, None]
    frames[~red, :, :, 2] = level[~red, None, None]
    frames = np.clip(frames.astype(int) + rng.integers(0, 30, frames.shape), 0, 255).astype(np.uint8)
    captions = ["a red square" if r else "a blue square" for r in red]
    return FrameSet(frames, captions, red, red.astype(float), np.arange(n) // 10, np.arange(n) % 10)


def test_contrastive_training_learns_the_captions_and_the_reward_then_separates_success(micro_model_name, tmp_path):
    train = synthetic_frames(200, seed=0)
    cfg = FinetuneConfig(steps=60, batch_size=32, learning_rate=3e-3, model=micro_model_name, shift_pixels=2)
    model, tokenizer, stats = train_clip(train, cfg)
    assert stats["captions"] == ["a blue square", "a red square"]
    reward = ClipRewardModel(model, tokenizer, "a red square", "a blue square", alpha=0.5)
    held = synthetic_frames(100, seed=1)
    assert caption_accuracy(reward, held, stats["captions"]) > 0.95
    assert caption_accuracy(reward, held.subset(np.zeros(len(held), bool)), stats["captions"]) is None  # not NaN
    result = evaluate_reward(reward, held)
    assert [row["alpha"] for row in result["alphas"]] == list(ALPHAS)
    for row in result["alphas"]:
        assert row["pearson_success"] > 0.8
        assert row["epic_distance"] == pytest.approx(np.sqrt((1 - row["pearson_success"]) / 2))
        assert row["mean_reward_success"] > row["mean_reward_other"]
        bands = row["mean_reward_by_caption"]
        assert bands["captions"] == ["a blue square", "a red square"] and sum(bands["frames"]) == len(held)
        assert bands["mean"][1] > bands["mean"][0] and bands["dips"] == 0
    assert reward.alpha == 0.5  # restored after the sweep
    png = plot_episodes({"trained": reward}, held, tmp_path / "plot.png", episodes=2)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_zero_steps_keeps_the_initial_model_as_a_control_and_negative_steps_are_refused(micro_model_name):
    import torch

    from sim2real.errors import ConfigError

    cfg = FinetuneConfig(steps=0, batch_size=8, model=micro_model_name, seed=5)
    model, _, stats = train_clip(synthetic_frames(16, seed=0), cfg)
    torch.manual_seed(5)
    import open_clip

    fresh = open_clip.create_model(micro_model_name, pretrained=None)
    for (name, a), b in zip(model.state_dict().items(), fresh.state_dict().values(), strict=True):
        assert torch.equal(a, b), name
    assert stats["steps"] == 0 and stats["final_loss"] is None
    with pytest.raises(ConfigError, match="steps must be >= 0"):
        train_clip(synthetic_frames(8, seed=0), FinetuneConfig(steps=-1, model=micro_model_name))


def test_ordinal_targets_rank_captions_by_their_frames_mean_progress():
    import torch

    labels = np.array([0, 0, 1, 1, 2, 2])
    progress = np.array([3.0, 3.2, 1.0, 0.8, 2.0, 2.1])  # caption 1 is the farthest, 0 the closest
    targets = ordinal_targets(progress, labels, 3, temperature=1.0).numpy()
    np.testing.assert_allclose(targets.sum(axis=1), 1.0, rtol=1e-6)
    assert targets[1, 1] > targets[1, 2] > targets[1, 0]  # rank distance 0, 1, 2
    np.testing.assert_allclose(targets[1, 2] / targets[1, 0], np.e, rtol=1e-5)
    np.testing.assert_array_equal(ordinal_targets(progress, labels, 3, temperature=0.0).numpy(), np.eye(3))
    from sim2real.errors import ConfigError

    with pytest.raises(ConfigError, match="ordinal_smoothing"):
        train_clip(synthetic_frames(8, seed=0), FinetuneConfig(ordinal_smoothing=-1.0))
    # One-hot targets give the plain contrastive loss.
    gen = torch.Generator().manual_seed(0)
    image = torch.nn.functional.normalize(torch.randn(6, 8, generator=gen), dim=1)
    text = torch.nn.functional.normalize(torch.randn(3, 8, generator=gen), dim=1)
    scale, y = torch.tensor(10.0), torch.from_numpy(labels)
    assert multi_positive_loss(image, text, y, scale, torch.eye(3)).item() == pytest.approx(
        multi_positive_loss(image, text, y, scale).item(), rel=1e-6
    )


def graded_frames(n: int, seed: int, levels: int = 5) -> FrameSet:
    """Green squares whose size grows with the level (0: none, the goal at the top level)."""
    rng = np.random.default_rng(seed)
    level = rng.integers(0, levels, n)
    frames = np.full((n, 32, 32, 3), 90, dtype=np.uint8)
    for i, k in enumerate(level):
        half = 3 * int(k)
        cy, cx = rng.integers(12, 20, 2)
        frames[i, max(cy - half, 0) : cy + half, max(cx - half, 0) : cx + half] = (40, 200, 60)
    frames = np.clip(frames.astype(int) + rng.integers(0, 20, frames.shape), 0, 255).astype(np.uint8)
    captions = [f"level {'abcde'[k]}" for k in level]
    return FrameSet(frames, captions, level == levels - 1, level.astype(float), np.arange(n) // 10, np.arange(n) % 10)


def test_with_ordinal_targets_the_goal_baseline_reward_follows_the_levels(micro_model_name):
    # Captions in alphabetical order are not the levels' order ("level a" < ... happens to be);
    # the ranks come from progress, so shuffle the names to make sure nothing relies on it.
    train, held = graded_frames(400, seed=0), graded_frames(300, seed=1)
    names = dict(zip("abcde", "dbeac"))
    for data in (train, held):
        data.captions[:] = [f"level {names[c[-1]]}" for c in data.captions]
    cfg = FinetuneConfig(steps=150, batch_size=40, learning_rate=3e-3, model=micro_model_name, shift_pixels=1)
    model, tokenizer, _ = train_clip(train, cfg)
    reward = ClipRewardModel(model, tokenizer, f"level {names['e']}", f"level {names['a']}", alpha=1.0)
    r = reward(held.frames)
    assert pearson(r, held.progress) > 0.85
    assert r[held.progress == 4].mean() > r[held.progress == 0].mean() + 0.2


def test_pearson_and_epic_distance():
    a = np.array([0.0, 1.0, 2.0, 3.0])
    assert pearson(a, 2 * a + 1) == pytest.approx(1.0)
    assert pearson(a, -a) == pytest.approx(-1.0)
    assert pearson(a, np.ones(4)) is None  # undefined, not a number pretending to be one
    assert epic_distance(1.0) == 0.0 and epic_distance(-1.0) == pytest.approx(1.0)
    assert epic_distance(0.0) == pytest.approx(np.sqrt(0.5))
    with pytest.raises(ValueError):
        pearson(a, a[:3])


def test_evaluation_needs_both_kinds_of_frames(micro_checkpoint):
    from sim2real.errors import ConfigError

    model = ClipRewardModel.load(None, micro_checkpoint, "a red square", "a blue square", device="cpu")
    data = synthetic_frames(20, seed=2)
    only_failures = data.subset(~data.success)
    with pytest.raises(ConfigError, match="both successful and unsuccessful"):
        evaluate_reward(model, only_failures)


@pytest.mark.heavy
def test_finetune_cli_writes_a_loadable_local_model(micro_model_name, tmp_path, capsys):
    from sim2real.cli import main

    out = tmp_path / "clip"
    code = main(
        [
            "reward",
            "finetune-clip",
            "ArmReach",
            "--out",
            str(out),
            "--frames",
            "120",
            "--steps",
            "3",
            "--batch-size",
            "16",
            "--model",
            micro_model_name,
            "--n-envs",
            "4",
            "--json",
        ]
    )
    assert code == 0
    summary = json.loads(capsys.readouterr().out)
    # The frame size defaults to the model's input size; reach renders the fixed view above the wrist's.
    assert summary["cameras"] == {"sim2real/ArmReach-v0": "reach_view+wrist"} and summary["image_size"] == 32
    assert set(summary["caption_accuracy"]) == {"train", "heldout"}
    meta = json.loads((out / "sim2real_clip.json").read_text())
    assert meta["training"]["steps"] == 3 and meta["decoy_fraction"] == 0.3
    model = ClipRewardModel.load(
        None, out, "the gripper touches the green ball", "the gripper is far from the green ball", device="cpu"
    )
    assert model(np.zeros((1, 32, 32, 3), dtype=np.uint8)).shape == (1,)
    # Its evaluation renders what it was trained on and compares with the same architecture untrained.
    code = main(
        ["reward", "eval", "ArmReach", "--clip-weights", str(out), "--include-untrained", "--frames", "400", "--json"]
    )
    assert code == 0
    report = json.loads(capsys.readouterr().out)
    assert report["camera"] == "reach_view+wrist" and report["image_size"] == 32
    assert set(report["models"]) == {str(out), f"untrained {micro_model_name}"}
    # The same report for people: one block per model, one line per alpha.
    text_args = ["reward", "eval", "ArmReach", "--clip-weights", str(out), "--include-untrained", "--frames", "400"]
    assert main(text_args) == 0
    text = capsys.readouterr().out
    assert f"untrained {micro_model_name}: 400 frames" in text and text.count("rho(success)") == 10


@pytest.mark.parametrize("task", ["DroneHover", "QuadrupedVelocity"])
def test_drone_and_quadruped_frames_are_captioned(task):
    from sim2real.policies.rewards.captions import GOAL_PROMPTS

    data = collect_frames(task, 16, n_envs=4, size=32, seed=0)
    assert data.frames.shape == (16, 32, 32, 3)
    assert all(isinstance(c, str) and c.startswith(("the drone", "the robot dog")) for c in data.captions)
    goal, baseline = GOAL_PROMPTS[f"sim2real/{task}-v0"]
    assert goal != baseline


def test_fine_tuning_keeps_the_camera_and_architecture_the_init_model_was_trained_on(
    micro_model_name, tmp_path, capsys
):
    from sim2real.cli import main

    common = ["--frames", "60", "--steps", "1", "--batch-size", "8", "--n-envs", "2", "--json"]
    first, second = tmp_path / "first", tmp_path / "second"
    args = ["reward", "finetune-clip", "ArmReach", "--model", micro_model_name, "--camera", "reach_side"]
    assert main([*args, "--out", str(first), *common]) == 0
    capsys.readouterr()
    assert main(["reward", "finetune-clip", "ArmReach", "--init", str(first), "--out", str(second), *common]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["cameras"] == {"sim2real/ArmReach-v0": "reach_side"} and summary["image_size"] == 32
    assert summary["training"]["model"] == micro_model_name  # not the default architecture's name
