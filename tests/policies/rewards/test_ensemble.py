"""The ensemble's lower-confidence-bound reward, and its place in the training config."""

from __future__ import annotations

import numpy as np
import open_clip
import pytest
import torch

from sim2real.errors import ConfigError
from sim2real.policies.rewards.clip_reward import ClipRewardModel
from sim2real.policies.rewards.config import RewardConfig
from sim2real.policies.rewards.ensemble import EnsembleReward
from sim2real.policies.rewards.finetune import save_model
from sim2real.policies.rewards.training import reward_model_from_config

GOAL, BASELINE = "the gripper touches the green ball", "the gripper is very far from the green ball"


def micro_member(name: str, seed: int) -> ClipRewardModel:
    torch.manual_seed(seed)
    model = open_clip.create_model(name, pretrained=None).eval()
    return ClipRewardModel(model, open_clip.get_tokenizer(name), GOAL, BASELINE, alpha=0.5)


def frames(n: int = 6) -> np.ndarray:
    return np.random.default_rng(0).integers(0, 256, (n, 32, 32, 3), dtype=np.uint8)


def test_the_reward_is_the_members_mean_minus_k_times_their_spread(micro_model_name):
    members = [micro_member(micro_model_name, seed) for seed in (0, 1, 2)]
    x = frames()
    each = np.stack([m(x) for m in members])
    assert not np.allclose(each[0], each[1])  # different models, so the spread is not zero
    for k in (0.0, 1.0, 2.5):
        ensemble = EnsembleReward(members, lcb=k)
        np.testing.assert_allclose(ensemble(x), each.mean(0) - k * each.std(0), atol=1e-12)
        np.testing.assert_allclose(ensemble.member_rewards(x), each)
    # The bound never pays more than the mean, and one member is just that member.
    assert np.all(EnsembleReward(members, 1.0)(x) <= each.mean(0) + 1e-12)
    np.testing.assert_allclose(EnsembleReward(members[:1], lcb=3.0)(x), each[0])
    assert EnsembleReward(members, 1.0).describe()["lcb"] == 1.0


def test_bad_ensembles_are_refused(micro_model_name):
    member = micro_member(micro_model_name, 0)
    with pytest.raises(ConfigError, match="at least one"):
        EnsembleReward([])
    for bad in (-1.0, float("nan"), float("inf")):
        with pytest.raises(ConfigError, match=r"reward\.lcb"):
            EnsembleReward([member], bad)
    with pytest.raises(ValueError, match="uint8"):
        EnsembleReward([member])(np.zeros((2, 32, 32, 3), dtype=np.float32))
    cfg = RewardConfig(source="clip", goal=[GOAL], baseline=[BASELINE], clip_weights="w", lcb=-0.5)
    with pytest.raises(ConfigError, match=r"reward\.lcb"):
        cfg.validate()


def test_a_config_with_ensemble_members_builds_the_bound_of_all_of_them(micro_model_name, micro_checkpoint, tmp_path):
    from tests.policies.rewards.conftest import MICRO_CFG

    torch.manual_seed(7)
    other = save_model(open_clip.create_model(micro_model_name, pretrained=None).eval(), tmp_path / "m2", MICRO_CFG,
                       {"image_size": 32})
    cfg = RewardConfig(source="clip", goal=[GOAL], baseline=[BASELINE], clip_weights=str(micro_checkpoint),
                       ensemble=[str(other)], lcb=0.5, device="cpu")
    cfg.validate()
    reward = reward_model_from_config(cfg)
    assert isinstance(reward, EnsembleReward) and len(reward.members) == 2
    x = frames()
    each = np.stack([m(x) for m in reward.members])
    np.testing.assert_allclose(reward(x), each.mean(0) - 0.5 * each.std(0), atol=1e-12)
    single = reward_model_from_config(RewardConfig(source="clip", goal=[GOAL], baseline=[BASELINE],
                                                   clip_weights=str(micro_checkpoint), device="cpu"))
    assert isinstance(single, ClipRewardModel)
    np.testing.assert_allclose(single(x), each[0], atol=1e-6)
