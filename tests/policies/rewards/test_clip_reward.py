"""The VLM-RM formula on hand-made embeddings, prompt averaging, preprocessing,
local checkpoints and the offline error messages."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from sim2real.errors import ConfigError
from sim2real.policies.rewards.clip_reward import ClipRewardModel, projection, vlm_rm_reward
from sim2real.policies.rewards.clip_weights import ClipWeightsError


def unit(v):
    v = np.asarray(v, dtype=np.float64)
    return v / np.linalg.norm(v)


def reference_reward(x, g, b, alpha):
    """The paper's formula written out with numpy, independently of the implementation."""
    d = g - b
    p = alpha * np.outer(d, d) / (d @ d) + (1 - alpha) * np.eye(len(g))
    diff = (x - g) @ p
    return 1.0 - 0.5 * np.sum(diff * diff, axis=-1)


G = unit([1.0, 0.2, 0.0, 0.0])
B = unit([0.3, 1.0, 0.0, 0.0])
X = np.stack([unit([1, 0.2, 0, 0]), unit([0, 1, 0, 0]), unit([0.5, 0.5, 0.7, 0.1]), unit([0, 0, 0, 1])])


@pytest.mark.parametrize("alpha", [0.0, 0.25, 0.5, 1.0])
def test_reward_matches_the_formula_on_hand_made_embeddings(alpha):
    got = vlm_rm_reward(torch.tensor(X), torch.tensor(G), torch.tensor(B), alpha).numpy()
    np.testing.assert_allclose(got, reference_reward(X, G, B, alpha), atol=1e-12)


def test_alpha_zero_is_cosine_similarity_and_alpha_one_ignores_the_orthogonal_part():
    r0 = vlm_rm_reward(torch.tensor(X), torch.tensor(G), torch.tensor(B), 0.0).numpy()
    np.testing.assert_allclose(r0, X @ G, atol=1e-12)  # 1 - |x-g|^2/2 = x.g for unit vectors
    assert r0[0] == pytest.approx(1.0)
    # alpha = 1: moving x orthogonally to d = g - b changes nothing.
    d = unit(G - B)
    orth = unit([*np.cross(d[:3], [0, 0, 1.0]), 0.0])
    x1, x2 = X[2], X[2] + 0.3 * orth
    r = vlm_rm_reward(torch.tensor(np.stack([x1, x2])), torch.tensor(G), torch.tensor(B), 1.0).numpy()
    assert r[0] == pytest.approx(r[1], abs=1e-12)
    # ...and the projection is idempotent only at alpha = 1 (a true projection).
    p1 = projection(torch.tensor(G), torch.tensor(B), 1.0).numpy()
    np.testing.assert_allclose(p1 @ p1, p1, atol=1e-12)


def test_reward_model_averages_normalised_prompts_and_matches_the_formula(micro_checkpoint):
    goal = ["the gripper touches the green ball", "a gripper at a green ball"]
    model = ClipRewardModel.load(
        None, micro_checkpoint, goal, "the gripper is far from the green ball", alpha=0.25, device="cpu"
    )
    each = F.normalize(model.embed_text(goal), dim=-1)
    np.testing.assert_allclose(model.goal.numpy(), F.normalize(each.mean(0), dim=0).numpy(), atol=1e-6)
    frames = np.random.default_rng(0).integers(0, 256, size=(5, 40, 48, 3), dtype=np.uint8)
    x = model.embed_images(frames).numpy().astype(np.float64)
    np.testing.assert_allclose(np.linalg.norm(x, axis=1), 1.0, atol=1e-5)
    ref = reference_reward(x, model.goal.numpy().astype(np.float64), model.baseline.numpy().astype(np.float64), 0.25)
    np.testing.assert_allclose(model(frames), ref, atol=1e-5)
    # Batched embedding equals one frame at a time.
    model.batch_size = 2
    np.testing.assert_allclose(model(frames), np.concatenate([model(frames[i : i + 1]) for i in range(5)]), atol=1e-5)


def test_preprocessing_matches_open_clips_own_transform(micro_checkpoint):
    import open_clip
    from PIL import Image

    model = ClipRewardModel.load(None, micro_checkpoint, "a", "b", device="cpu")
    _, _, val = open_clip.create_model_and_transforms(f"local-dir:{micro_checkpoint}")
    # A smooth image, like a render (resampling filters differ most on pixel noise).
    yy, xx = np.mgrid[0:72, 0:96]
    frame = np.stack([128 + 100 * np.sin(xx / 9.0), 128 + 100 * np.cos(yy / 7.0), (xx + yy) % 256], -1)[None].astype(
        np.uint8
    )
    ours = model.preprocess(frame)[0].numpy()
    theirs = val(Image.fromarray(frame[0])).numpy()
    assert ours.shape == theirs.shape == (3, 32, 32)
    # PIL and torch bicubic resampling differ slightly; the normalisation and crop must agree.
    assert np.abs(ours - theirs).mean() < 0.05


def test_local_checkpoint_round_trips(micro_checkpoint, micro_model_name):
    import open_clip

    torch.manual_seed(0)
    original = open_clip.create_model(micro_model_name, pretrained=None).eval()  # same seed as the fixture
    loaded = ClipRewardModel.load(None, micro_checkpoint, "a", "b", device="cpu")
    for name, tensor in original.state_dict().items():
        torch.testing.assert_close(loaded.model.state_dict()[name], tensor)
    # A weight file with its architecture named loads too.
    again = ClipRewardModel.load(
        micro_model_name, micro_checkpoint / "open_clip_model.safetensors", "a", "b", device="cpu"
    )
    frames = np.full((2, 32, 32, 3), 90, dtype=np.uint8)
    np.testing.assert_allclose(again(frames), loaded(frames), atol=1e-6)


def test_no_weights_gives_a_message_that_says_how_to_provide_them(tmp_path, micro_checkpoint):
    with pytest.raises(ClipWeightsError, match=r"finetune-clip.*ViT-bigG-14|ViT-bigG-14.*finetune-clip") as err:
        ClipRewardModel.load("ViT-B-32", None, "a", "b", device="cpu")
    assert "--clip-weights" in str(err.value)
    with pytest.raises(ClipWeightsError, match="not found"):
        ClipRewardModel.load("ViT-B-32", tmp_path / "missing.bin", "a", "b", device="cpu")
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "open_clip_config.json").write_text((micro_checkpoint / "open_clip_config.json").read_text())
    with pytest.raises(ClipWeightsError, match="no weight file"):
        ClipRewardModel.load(None, empty, "a", "b", device="cpu")
    with pytest.raises(ClipWeightsError, match="--clip-model"):
        ClipRewardModel.load(None, micro_checkpoint / "open_clip_model.safetensors", "a", "b", device="cpu")


def test_bad_inputs_fail_closed(micro_checkpoint):
    with pytest.raises(ConfigError, match="alpha"):
        ClipRewardModel.load(None, micro_checkpoint, "a", "b", alpha=1.5, device="cpu")
    with pytest.raises(ConfigError, match="alpha"):
        ClipRewardModel.load(None, micro_checkpoint, "a", "b", alpha=float("nan"), device="cpu")
    with pytest.raises(ConfigError, match="goal"):
        ClipRewardModel.load(None, micro_checkpoint, ["  "], "b", device="cpu")
    with pytest.raises(ConfigError, match="same vector"):
        ClipRewardModel.load(None, micro_checkpoint, "same words", "same words", device="cpu")
    model = ClipRewardModel.load(None, micro_checkpoint, "a", "b", device="cpu")
    with pytest.raises(ValueError, match="uint8"):
        model(np.zeros((2, 32, 32, 3), dtype=np.float32))
    with pytest.raises(ValueError, match="uint8"):
        model(np.zeros((32, 32, 3), dtype=np.uint8))
