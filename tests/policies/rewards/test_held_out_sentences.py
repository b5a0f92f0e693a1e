"""Sentences a reward model never saw (issue 24): ArmReach's target colours, captions that
name them, and fine-tuning with a caption held out."""

from __future__ import annotations

import json

import numpy as np
import pytest

from sim2real.errors import ConfigError
from sim2real.policies.rewards.captions import captioner
from sim2real.sim import make_vec
from sim2real.sim.arm.reach import TARGET_COLORS, ArmReach


def test_each_episode_draws_a_target_colour_that_is_drawn_and_named():
    venv = make_vec("ArmReach", 8, seed=3, target_colors=["red", "blue"])
    try:
        venv.reset()
        task, engine = venv.task, venv.engine
        assert isinstance(task, ArmReach)
        names = [task.target_color(i) for i in range(8)]
        assert set(names) == {"red", "blue"}  # 8 draws of two colours: both appear with this seed
        gid = engine.models[0].geom("target").id
        for i, name in enumerate(names):
            np.testing.assert_allclose(engine.models[i].geom_rgba[gid, :3], TARGET_COLORS[name])
        captions = captioner("ArmReach")(task, engine.phys)
        for i, text in enumerate(captions.text):
            assert text.endswith(f"the {names[i]} ball"), text
    finally:
        venv.close()
    # One colour draws nothing: the default keeps the seeded targets of earlier versions.
    a, b = make_vec("ArmReach", 2, seed=0), make_vec("ArmReach", 2, seed=0, target_colors=["green"])
    try:
        for venv in (a, b):
            venv.reset()
        assert isinstance(a.task, ArmReach) and isinstance(b.task, ArmReach)
        np.testing.assert_array_equal(a.task.targets, b.task.targets)
    finally:
        for venv in (a, b):
            venv.close()


@pytest.mark.parametrize("bad", [[], ["purple"], ["red", "red"]])
def test_unknown_empty_or_repeated_colours_are_refused(bad):
    with pytest.raises(ConfigError, match="target_colors"):
        make_vec("ArmReach", 1, target_colors=bad)


def test_a_held_out_caption_is_left_out_of_training(micro_model_name, tmp_path, capsys):
    from sim2real.cli import main

    unseen = "the gripper is very far from the red ball"
    args = ["reward", "finetune-clip", "ArmReach", "--frames", "160", "--steps", "2", "--batch-size", "16",
            "--model", micro_model_name, "--n-envs", "4", "--task-option", "target_colors=[green, red]", "--json"]
    assert main([*args, "--out", str(tmp_path / "m"), "--hold-out-caption", unseen]) == 0
    meta = json.loads(capsys.readouterr().out)
    captions = meta["training"]["captions"]
    assert unseen not in captions and any("red ball" in c for c in captions) and any("green" in c for c in captions)
    assert meta["held_out_captions"] == [unseen] and meta["task_options"] == {"target_colors": ["green", "red"]}
    missing = "the gripper is very far from the blue ball"
    assert main([*args, "--out", str(tmp_path / "n"), "--hold-out-caption", missing]) == 2
    assert "no rendered frame has the caption" in capsys.readouterr().err and not (tmp_path / "n").exists()
