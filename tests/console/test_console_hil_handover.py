"""Issue 42, defect 4 on the HIL-SERL attachment (the simulated arm here; a real arm's
actor is the same target): after a hold, the action the actor steps is the person's,
blended from zero, never the policy's. The actor's policy commands the report's twist."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "policies" / "hil"))

from sim2real.policies.safety.spaces import command_space
from sim2real.policies.teleop.operator import HOLD, HUMAN, POLICY

REPORTED = np.array([0.473, -0.473, -0.126, -0.104, 0.277, 0.425])
LIMITS = np.array([0.15, 0.15, 0.15, 0.6, 0.6, 0.6])
SCALE = command_space("arm", "ee_delta").scale[:6]
"""m/s and rad/s per unit of the arm's ee_delta action."""
UP = [0, 0, 1, 0, 0, 0, 0]  # R held: +z at the operator's limit
STILL = [0.0] * 7


@pytest.fixture(scope="module")
def target() -> Iterator[Any]:
    from hil_helpers import tiny_config

    from sim2real.policies.hil.console import HilConsoleTarget
    from sim2real.policies.hil.env import HilEnv

    cfg = tiny_config()
    cfg.env.task = "ArmReach"
    env = HilEnv(cfg.env, seed=0)
    t = HilConsoleTarget(env, real_time=False)
    policy = np.zeros(env.action_dim)
    policy[:6] = REPORTED / SCALE  # the policy's action: the report's twist
    t.observe_policy(policy)
    yield t
    env.close()


def twist(target: Any) -> np.ndarray | None:
    """The twist of the action the actor would step now (None: the policy's)."""
    action = target.poll(None, None)
    return None if action is None else np.asarray(action[:6], dtype=float) * SCALE


def act(target: Any, what: str, *args: Any) -> str:
    if what == "command":
        time.sleep(0.01)  # past the rate limit (8 ms)
    with target.lock:
        return getattr(target.control, what)(*args, time.monotonic())


def hold_by(target: Any, cause: str) -> None:
    if cause == "dead man":
        time.sleep(0.25)
        target.poll(None, None)
    elif cause == "e-stop":
        target.estop("test")
        assert target.control.mode == HOLD
        target.reset_estop()
    else:
        act(target, {"hidden page": "hidden", "lost connection": "disconnected"}[cause], "a")
    assert target.control.mode == HOLD, cause


@pytest.mark.parametrize("cause", ["dead man", "hidden page", "lost connection", "e-stop"])
def test_after_a_hold_the_actor_steps_the_persons_command_from_zero(target: Any, cause: str) -> None:
    assert act(target, "take_over", "a") == "" and act(target, "command", "a", [1, 0, 0, 0, 0, 0, 0]) == ""
    assert twist(target) is not None and target.control.mode == HUMAN
    hold_by(target, cause)
    assert twist(target) is not None  # held: the actor pauses, the device says hold
    assert act(target, "take_over", "b" if cause == "lost connection" else "a") == ""  # Space alone
    session = target.control.owner
    space_only = twist(target)
    assert space_only is not None and np.all(space_only == 0.0), np.round(space_only, 3).tolist()
    assert act(target, "command", session, UP) == ""  # and R
    for _ in range(5):
        up = twist(target)
        assert up is not None and 0.0 <= up[2] <= 0.15 + 1e-6 and np.all(up[[0, 1, 3, 4, 5]] == 0.0), up
        time.sleep(0.05)
        act(target, "command", session, UP)
    assert act(target, "give_back", session) == "" and twist(target) is None
    assert target.control.mode == POLICY


def test_from_the_policy_the_takeover_starts_within_the_operators_limit(target: Any) -> None:
    assert act(target, "take_over", "a") == "" and act(target, "command", "a", UP) == ""
    first = twist(target)
    assert first is not None and np.all(np.abs(first) <= LIMITS + 1e-6) and first[2] >= 0.0, first
    np.testing.assert_allclose(first[:2], [0.15, -0.15], atol=0.02)  # continues the policy's, bounded
    assert act(target, "give_back", "a") == ""
