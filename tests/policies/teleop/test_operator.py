"""The person's command rules: one operator, finite and bounded, smooth takeover, the
dead man's hold (never the last command, never the policy), give back."""

from __future__ import annotations

import numpy as np
import pytest

from sim2real.policies.teleop.operator import HOLD, HUMAN, POLICY, OperatorControl, OperatorSettings
from sim2real.sim import robot_deployment


@pytest.fixture
def control() -> OperatorControl:
    return OperatorControl(robot_deployment("quadruped").operator, OperatorSettings(blend_seconds=0.4, timeout=0.2))


def test_one_operator_at_a_time(control: OperatorControl) -> None:
    assert control.take_over("a", 0.0) == ""
    assert "another session" in control.take_over("b", 0.1)
    assert control.command("b", [1, 0, 0], 0.1) == "read-only session"
    control.release("a", 0.2)
    assert control.mode == HOLD and "released" in control.hold_reason  # a takeover never ends in motion
    assert control.take_over("b", 0.3) == "" and control.owner == "b"


def test_commands_are_finite_bounded_and_rate_limited(control: OperatorControl) -> None:
    control.settings.blend_seconds = 0.0
    control.take_over("a", 0.0)
    assert "finite" in control.command("a", [np.nan, 0, 0], 0.01)
    assert "finite" in control.command("a", [1, 0], 0.02)
    assert "finite" in control.command("a", "fast", 0.03)  # hostile JSON: not a number list
    assert control.command("a", [5.0, -7.0, 0.5], 0.04) == ""
    np.testing.assert_allclose(control.output(0.1).command, [1.0, -0.5, 0.5])  # clipped to each limit
    assert control.command("a", [0, 0, 0], 0.041) == "rate limited"
    assert control.counts["invalid"] == 3 and control.counts["clipped"] == 1 and control.counts["rate_limited"] == 1


def test_takeover_blends_from_the_policy_command(control: OperatorControl) -> None:
    policy = np.array([0.8, 0.0, 0.0])
    control.take_over("a", 10.0)
    control.command("a", [0.0, 1.0, 0.0], 10.0)  # full left
    start = control.output(10.0, policy)
    assert start.mode == HUMAN and start.blend == 0.0
    np.testing.assert_allclose(start.command, policy)  # no jump at takeover
    control.command("a", [0.0, 1.0, 0.0], 10.1)
    half = control.output(10.2, policy)
    np.testing.assert_allclose(half.command, 0.5 * policy + 0.5 * np.array([0.0, 0.5, 0.0]))
    control.command("a", [0.0, 1.0, 0.0], 10.35)
    np.testing.assert_allclose(control.output(10.5, policy).command, [0.0, 0.5, 0.0])


@pytest.mark.parametrize("event", ["timeout", "hidden", "disconnected"])
def test_the_dead_man_holds_never_the_last_command(control: OperatorControl, event: str) -> None:
    control.take_over("a", 0.0)
    for k in range(30):
        control.command("a", [1.0, 0.0, 0.0], 0.02 * k)
    assert control.output(0.6).command[0] == pytest.approx(1.0)
    if event == "timeout":
        out = control.output(0.58 + 0.21)
    else:
        getattr(control, event)("a", 0.6)
        out = control.output(0.6)
    assert out.mode == HOLD and np.all(out.command == 0.0)
    assert control.output(5.0).mode == HOLD  # it stays held: no return to the policy on its own
    assert control.counts["holds"] == 1


def test_commanding_again_leaves_hold_and_give_back_returns_to_the_policy(control: OperatorControl) -> None:
    control.take_over("a", 0.0)
    control.output(1.0)
    assert control.mode == HOLD
    assert control.command("a", [1.0, 0.0, 0.0], 1.1) == ""
    out = control.output(1.1)
    assert out.mode == HUMAN and out.blend == 0.0 and np.all(out.command == 0.0)  # ramps up from hold
    assert "only the operator" in control.give_back("b", 1.2)
    assert control.give_back("a", 1.2) == ""
    assert control.output(1.3).mode == POLICY and control.output(1.3).command is None
    assert control.command("a", [1.0, 0.0, 0.0], 1.4) == "not in control (take over first)"
