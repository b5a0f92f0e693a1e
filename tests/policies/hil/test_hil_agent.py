"""The learner's networks and updates: DrQ shift, pixel + state encoder, gripper critic,
weights round trip, the optional pretrained backbone from a local file."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from sim2real.errors import Sim2RealError
from sim2real.policies.hil.buffers import MixedSampler, ReplayBuffer, transition_spec
from sim2real.policies.hil.config import LearnerConfig
from sim2real.policies.hil.networks import discrete_to_gripper, gripper_to_discrete, random_shift
from sim2real.policies.hil.sac import HilAgent, tensors_from_bytes, tensors_to_bytes

SHAPES = {"state": (5,), "wrist": (3, 32, 32)}


def random_buffers(shapes, action_dim: int, n: int = 64, seed: int = 0):
    rng = np.random.default_rng(seed)
    spec = transition_spec(shapes, action_dim)
    batch = {}
    for name, (shape, dtype) in spec.items():
        if dtype == np.uint8:
            batch[name] = rng.integers(0, 256, (n, *shape), dtype=np.uint8)
        elif dtype == np.bool_:
            batch[name] = rng.random((n, *shape)) < 0.1
        else:
            batch[name] = rng.uniform(-1, 1, (n, *shape)).astype(np.float32)
    online, demo = ReplayBuffer(spec, 1000), ReplayBuffer(spec, 1000)
    online.add(batch)
    demo.add(batch)
    return MixedSampler(online, demo, 0.5)


def test_random_shift_moves_content_within_the_pad() -> None:
    images = torch.zeros(16, 3, 20, 20)
    images[:, :, 10, 10] = 1.0
    shifted = random_shift(images, pad=4)
    assert shifted.shape == images.shape
    for img in shifted:
        ys, xs = torch.nonzero(img[0], as_tuple=True)
        assert len(ys) == 1 and abs(int(ys[0]) - 10) <= 4 and abs(int(xs[0]) - 10) <= 4
    moved = [not torch.equal(s, images[0]) for s in shifted]
    assert any(moved)


def test_pixel_agent_updates_change_encoder_and_actor() -> None:
    torch.set_num_threads(1)
    config = LearnerConfig(batch_size=8, hidden=(32, 32), latent_dim=16)
    agent = HilAgent(SHAPES, 6, config, seed=0)
    sampler = random_buffers(SHAPES, 6)
    rng = np.random.default_rng(0)
    before_encoder = [p.clone() for p in agent.encoder.parameters()]
    before_actor = [p.clone() for p in agent.actor.parameters()]
    for _ in range(3):
        info = agent.update(lambda: sampler.sample(8, rng))
    assert agent.updates == 3 and np.isfinite(info["critic_loss"]) and np.isfinite(info["actor_loss"])
    assert any(not torch.equal(a, b) for a, b in zip(before_encoder, agent.encoder.parameters()))
    assert any(not torch.equal(a, b) for a, b in zip(before_actor, agent.actor.parameters()))
    assert info["temperature"] == pytest.approx(1e-2, rel=0.05)  # starts at the paper's 1e-2
    obs = {"state": np.zeros(5, np.float32), "wrist": np.zeros((3, 32, 32), np.uint8)}
    action = agent.act(obs)
    assert action.shape == (6,) and np.all(np.abs(action) <= 1)


def test_critic_learns_a_constant_reward_value() -> None:
    """With reward 1 everywhere and discount 0.5, Q converges toward 1 / (1 - 0.5) = 2."""
    torch.set_num_threads(1)
    shapes = {"state": (3,)}
    config = LearnerConfig(batch_size=32, hidden=(32, 32), discount=0.5, tau=0.1, lr=3e-3)
    agent = HilAgent(shapes, 2, config, seed=0)
    spec = transition_spec(shapes, 2)
    rng = np.random.default_rng(0)
    batch = {"obs.state": rng.uniform(-1, 1, (200, 3)).astype(np.float32),
             "next_obs.state": rng.uniform(-1, 1, (200, 3)).astype(np.float32),
             "action": rng.uniform(-1, 1, (200, 2)).astype(np.float32), "reward": np.ones(200, np.float32),
             "terminated": np.zeros(200, bool), "intervened": np.zeros(200, bool)}
    online = ReplayBuffer(spec, 500)
    online.add(batch)
    sampler = MixedSampler(online, ReplayBuffer(spec, 10), 0.5)
    for _ in range(300):
        info = agent.update(lambda: sampler.sample(32, rng))
    assert info["q_mean"] == pytest.approx(2.0, abs=0.3)


def test_gripper_critic_discretises_and_trains() -> None:
    g = torch.tensor([-1.0, -0.2, 0.0, 0.7, 1.0])
    assert gripper_to_discrete(g).tolist() == [0, 1, 1, 2, 2]
    assert discrete_to_gripper(torch.tensor([0, 1, 2])).tolist() == [-1.0, 0.0, 1.0]
    shapes = {"state": (4,)}
    agent = HilAgent(shapes, 4, LearnerConfig(batch_size=8, hidden=(16,), gripper_critic=True), seed=0)
    assert agent.continuous_dim == 3
    sampler = random_buffers(shapes, 4)
    info = agent.update(lambda: sampler.sample(8, np.random.default_rng(0)))
    assert np.isfinite(info["critic_loss"])
    action = agent.act({"state": np.zeros(4, np.float32)})
    assert action.shape == (4,) and action[-1] in (-1.0, 0.0, 1.0)


def test_policy_weights_round_trip_and_reject_garbage() -> None:
    a = HilAgent(SHAPES, 6, LearnerConfig(hidden=(16,), latent_dim=8), seed=0)
    b = HilAgent(SHAPES, 6, LearnerConfig(hidden=(16,), latent_dim=8), seed=1)
    b.load_policy_state(tensors_from_bytes(tensors_to_bytes(a.policy_state())))
    obs = {"state": np.ones(5, np.float32), "wrist": np.full((3, 32, 32), 100, np.uint8)}
    np.testing.assert_allclose(a.act(obs, deterministic=True), b.act(obs, deterministic=True))
    with pytest.raises(Sim2RealError):
        tensors_from_bytes(b"not a torch file")


def test_pretrained_backbone_from_a_local_file(tmp_path) -> None:
    from torchvision.models import resnet18

    weights = tmp_path / "resnet18.pt"
    torch.save(resnet18(weights=None).state_dict(), weights)
    agent = HilAgent(SHAPES, 6, LearnerConfig(hidden=(16,), latent_dim=8, backbone_weights=str(weights)))
    backbone = agent.encoder.image_encoders["wrist"].backbone
    assert not any(p.requires_grad for p in backbone.parameters())  # frozen
    assert agent.act({"state": np.zeros(5, np.float32), "wrist": np.zeros((3, 32, 32), np.uint8)}).shape == (6,)
    bad = tmp_path / "bad.pt"
    torch.save({"conv1.weight": torch.zeros(1)}, bad)
    with pytest.raises(Sim2RealError):
        HilAgent(SHAPES, 6, LearnerConfig(backbone_weights=str(bad)))
