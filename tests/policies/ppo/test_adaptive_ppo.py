"""rsl_rl's KL-adaptive learning rate on SB3's PPO: direction, bounds, the
optimizer sees it, and it survives save/load (so --resume keeps it)."""

from __future__ import annotations

import io

import pytest
from policy_helpers import tiny_config
from stable_baselines3 import PPO
from stable_baselines3.common.logger import Logger

from sim2real.policies.common.envs import make_train_env
from sim2real.policies.ppo import AdaptivePPO, build_ppo


@pytest.fixture
def model(puck):
    cfg = tiny_config("ppo", {"ppo.learning_rate": 1e-3, "ppo.desired_kl": 0.01, "ppo.lr_max": 2e-3})
    return with_logger(build_ppo(cfg, make_train_env(cfg)))


def with_logger(model: AdaptivePPO) -> AdaptivePPO:
    model.set_logger(Logger(None, []))  # learn() would set one; train() records into it (no /tmp folder)
    return model


def train_with_kl(model: AdaptivePPO, kl: float, monkeypatch: pytest.MonkeyPatch) -> float:
    """One AdaptivePPO.train() whose PPO update reported ``kl``; returns the new lr."""
    monkeypatch.setattr(PPO, "train", lambda self: self.logger.record("train/approx_kl", kl))
    model.train()
    return model.current_lr


def test_lr_follows_the_kl(model: AdaptivePPO, monkeypatch: pytest.MonkeyPatch) -> None:
    assert train_with_kl(model, 0.05, monkeypatch) == pytest.approx(1e-3 / 1.5)  # KL too high: smaller steps
    assert train_with_kl(model, 0.01, monkeypatch) == pytest.approx(1e-3 / 1.5)  # in band: unchanged
    assert train_with_kl(model, 0.001, monkeypatch) == pytest.approx(1e-3)  # KL too low: larger steps
    for _ in range(5):
        train_with_kl(model, 0.001, monkeypatch)
    assert model.current_lr == pytest.approx(2e-3)  # capped at lr_max
    assert model.policy.optimizer.param_groups[0]["lr"] == pytest.approx(2e-3)
    assert model.lr_schedule(0.3) == pytest.approx(2e-3)  # what SB3 applies at the next update


def test_adapted_lr_survives_save_and_load(model: AdaptivePPO, monkeypatch: pytest.MonkeyPatch) -> None:
    train_with_kl(model, 0.05, monkeypatch)
    buf = io.BytesIO()
    model.save(buf)
    buf.seek(0)
    loaded = with_logger(AdaptivePPO.load(buf, env=model.env))
    assert loaded.current_lr == pytest.approx(1e-3 / 1.5)
    assert loaded.lr_schedule(1.0) == pytest.approx(1e-3 / 1.5)  # not the initial learning_rate


def test_constant_when_desired_kl_is_null(puck, monkeypatch: pytest.MonkeyPatch) -> None:
    cfg = tiny_config("ppo")
    cfg.ppo.desired_kl = None  # (None in an overrides dict means "flag not given")
    model = with_logger(build_ppo(cfg, make_train_env(cfg)))
    assert train_with_kl(model, 1.0, monkeypatch) == pytest.approx(cfg.ppo.learning_rate)
