"""The shipped ArmReach-vlm policy (trained only on a vision-language reward from a
sentence, issue 24) still reaches the target when evaluated on the task's own success,
and its folder names the reward model it was trained on."""

from __future__ import annotations

import json

import pytest

from sim2real.policies import BASELINES_DIR

FOLDER = BASELINES_DIR / "ArmReach-vlm"


def test_the_vlm_baseline_reaches_the_target_and_names_its_reward_model(capsys: pytest.CaptureFixture) -> None:
    from sim2real.cli import main

    assert main(["eval", str(FOLDER / "policy.onnx"), "--episodes", "20", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["kind"] == "onnx" and report["task_options"] == {"tilt_limit": 0}
    assert report["success_rate"] >= 0.9  # 100 of 100 when shipped
    identity = json.loads((FOLDER / "reward_model.json").read_text())
    assert len(identity["weights_sha256"]["open_clip_model.safetensors"]) == 64
    assert identity["path_in_config"] in (FOLDER / "config.yaml").read_text()
    assert identity["metadata"]["training"]["model"] == "sim2real-tiny-rn-96"
