"""The image tower under ONNX Runtime (``policies/rewards/onnx_tower.py``) gives the
torch tower's rewards, follows refined weights, and is refused where it cannot run."""

from __future__ import annotations

import numpy as np
import open_clip
import pytest
import torch

from sim2real.errors import ConfigError
from sim2real.policies.rewards.clip_reward import ClipRewardModel
from sim2real.policies.rewards.clip_weights import register_model_configs
from sim2real.policies.rewards.onnx_tower import resolve_runtime

GOAL, BASELINE = "the gripper touches the green ball", "the gripper is far from the green ball"


def _frames(size: int, n: int = 5) -> np.ndarray:
    return np.random.default_rng(0).integers(0, 256, (n, size, size, 3), dtype=np.uint8)


@pytest.mark.parametrize("architecture", ["micro-vit", "sim2real-tiny-rn-96"])
def test_onnx_runtime_rewards_equal_torch_rewards(architecture, micro_model_name):
    register_model_configs()
    name = micro_model_name if architecture == "micro-vit" else architecture
    torch.manual_seed(0)
    model = open_clip.create_model(name, pretrained=None).eval()
    tokenizer = open_clip.get_tokenizer(name)
    by_torch = ClipRewardModel(model, tokenizer, GOAL, BASELINE, alpha=0.5, runtime="torch")
    by_onnx = ClipRewardModel(model, tokenizer, GOAL, BASELINE, alpha=0.5, runtime="onnxruntime", batch_size=3)
    frames = _frames(by_torch.image_size[0])
    expected = by_torch(frames)
    np.testing.assert_allclose(by_onnx(frames), expected, atol=1e-5)  # batches of 3 and 2: a dynamic batch
    assert by_onnx.describe()["runtime"] == "onnxruntime"

    # Refinement changes the torch weights; refresh() exports them again.
    with torch.no_grad():
        for p in model.visual.parameters():
            p.mul_(1.1)
    by_torch.refresh()
    by_onnx.refresh()
    np.testing.assert_allclose(by_onnx(frames), by_torch(frames), atol=1e-5)
    assert not np.allclose(by_onnx(frames), expected, atol=1e-5)


def test_auto_runtime_is_onnx_runtime_on_the_cpu_only():
    assert resolve_runtime("auto", torch.device("cpu")) == "onnxruntime"
    assert resolve_runtime("auto", torch.device("cuda")) == "torch"
    with pytest.raises(ValueError, match="runtime"):
        resolve_runtime("tensorrt", torch.device("cpu"))


def test_onnx_runtime_refuses_a_half_precision_model(micro_model_name):
    model = open_clip.create_model(micro_model_name, pretrained=None).eval().half()
    with pytest.raises(ConfigError, match=r"reward\.runtime"):
        ClipRewardModel(model, open_clip.get_tokenizer(micro_model_name), GOAL, BASELINE, runtime="onnxruntime")
