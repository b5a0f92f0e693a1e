"""Replay buffers: RLPD's 50/50 mixing, validation of incoming transitions, the ring."""

from __future__ import annotations

import numpy as np
import pytest

from sim2real.errors import Sim2RealError
from sim2real.policies.hil.buffers import MixedSampler, ReplayBuffer, transition_spec

SPEC = transition_spec({"state": (3,), "wrist": (3, 8, 8)}, action_dim=2)


def make_batch(n: int, value: float = 0.0, intervened: bool = False) -> dict[str, np.ndarray]:
    batch = {name: np.full((n, *shape), value, dtype=dtype) for name, (shape, dtype) in SPEC.items()}
    batch["intervened"][:] = intervened
    batch["action"][:] = value / 10  # the marker, inside the normalized action range
    return batch


def test_mixing_ratio_holds_in_every_batch() -> None:
    online, demo = ReplayBuffer(SPEC, 1000), ReplayBuffer(SPEC, 1000)
    online.add(make_batch(300, 1.0))
    demo.add(make_batch(40, 2.0, intervened=True))
    sampler = MixedSampler(online, demo, demo_fraction=0.5)
    rng = np.random.default_rng(0)
    for _ in range(20):
        batch = sampler.sample(256, rng)
        assert batch["from_demo"].sum() == 128
        # Rows marked as demo really came from the demo buffer (value 2), the rest online (1).
        np.testing.assert_array_equal(batch["reward"][batch["from_demo"]], 2.0)
        np.testing.assert_array_equal(batch["reward"][~batch["from_demo"]], 1.0)
        assert batch["obs.wrist"].shape == (256, 3, 8, 8)


def test_other_ratios_and_empty_demo_buffer() -> None:
    online, demo = ReplayBuffer(SPEC, 100), ReplayBuffer(SPEC, 100)
    online.add(make_batch(10))
    rng = np.random.default_rng(0)
    assert MixedSampler(online, demo, 0.5).sample(64, rng)["from_demo"].sum() == 0  # SAC from scratch
    demo.add(make_batch(10))
    assert MixedSampler(online, demo, 0.25).sample(64, rng)["from_demo"].sum() == 16
    with pytest.raises(Sim2RealError):
        MixedSampler(online, demo, 1.0)


def test_ring_buffer_keeps_the_newest() -> None:
    buffer = ReplayBuffer(SPEC, 5)
    for i in range(3):
        buffer.add(make_batch(3, float(i)))
    assert len(buffer) == 5 and buffer.total_added == 9
    assert sorted(buffer.data["reward"].tolist()) == [1.0, 1.0, 2.0, 2.0, 2.0]


@pytest.mark.parametrize("corrupt", ["nan", "shape", "missing", "rows"])
def test_bad_transitions_never_enter(corrupt: str) -> None:
    buffer = ReplayBuffer(SPEC, 10)
    batch = make_batch(4)
    if corrupt == "nan":
        batch["obs.state"][1, 0] = np.nan
    elif corrupt == "shape":
        batch["action"] = np.zeros((4, 3), np.float32)
    elif corrupt == "missing":
        del batch["next_obs.wrist"]
    else:
        batch["reward"] = np.zeros(3, np.float32)
    with pytest.raises(Sim2RealError):
        buffer.add(batch)
    assert len(buffer) == 0
