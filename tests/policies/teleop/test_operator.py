"""The person's command rules: one operator, finite and bounded, smooth takeover from what
the robot last received, the dead man's hold (never the last command, never the policy),
the e-stop, give back (test_handover_machine.py checks them over random sequences)."""

from __future__ import annotations

import time

import numpy as np
import pytest

from sim2real.policies.teleop.operator import ESTOP_LATCHED, HOLD, HUMAN, POLICY, OperatorControl, OperatorSettings
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


def test_giving_back_releases_ownership(control: OperatorControl) -> None:
    """Issue 42, defect 9: the first operator gave back, yet every other page stayed
    read-only until its tab closed."""
    assert control.take_over("a", 0.0) == "" and control.give_back("a", 0.5) == ""
    assert control.owner == "" and control.mode == POLICY
    assert control.take_over("b", 0.6) == "" and control.owner == "b"


@pytest.mark.parametrize("hostile", [["1", 0, 0], [True, 0, 0], [0, False, 0], [10**400, 0, 0], [None, 0, 0],
                                     [np.nan, 0, 0], [0, np.inf, 0], [[1], 0, 0], [1, 0], "fast", {"vx": 1}])
def test_only_finite_numbers_are_axes(control: OperatorControl, hostile: object) -> None:
    """Issue 42, defect 9: strings and booleans passed as axis values ("1" and True as 1)."""
    control.take_over("a", 0.0)
    assert "finite numbers" in control.command("a", hostile, 0.01)
    assert control.counts["invalid"] == 1 and control.counts["accepted"] == 0
    assert np.all(control.output(0.05).human == 0.0)


def test_commands_are_bounded_and_rate_limited(control: OperatorControl) -> None:
    control.settings.blend_seconds = 0.0
    control.take_over("a", 0.0)
    assert control.command("a", [5.0, -7.0, 0.5], 0.04) == ""
    np.testing.assert_allclose(control.output(0.1).command, [1.0, -0.5, 0.5])  # clipped to each limit
    assert control.command("a", [0, 0, 0], 0.041) == "rate limited"
    assert control.counts["clipped"] == 1 and control.counts["rate_limited"] == 1


def test_a_takeover_blends_from_what_the_robot_last_received(control: OperatorControl) -> None:
    policy = np.array([0.8, 0.0, 0.0])
    assert control.output(9.98, policy).mode == POLICY  # the robot receives the policy's command
    control.take_over("a", 10.0, [0.0, 1.0, 0.0])  # full left, from the first output
    start = control.output(10.0, policy * 0.0)  # the policy's later commands no longer matter
    assert start.mode == HUMAN
    np.testing.assert_allclose(start.command, policy)  # no jump at takeover
    control.command("a", [0.0, 1.0, 0.0], 10.1)
    np.testing.assert_allclose(control.output(10.2).command, 0.5 * policy + 0.5 * np.array([0.0, 0.5, 0.0]))
    control.command("a", [0.0, 1.0, 0.0], 10.35)
    np.testing.assert_allclose(control.output(10.5).command, [0.0, 0.5, 0.0])


def test_the_blend_never_exceeds_the_limit_nor_opposes_the_held_key(control: OperatorControl) -> None:
    """Issue 42, defect 4 at its root: the policy commanded 3x the operator's limit, and
    the opposite of the key held."""
    control.output(0.0, np.array([3.0, -1.2, -3.0]))
    control.take_over("a", 0.01, [0.0, 0.0, 1.0])  # yaw + while the policy turns -
    out = control.output(0.01)
    np.testing.assert_allclose(out.command, [1.0, -0.5, 0.0])  # the policy's, clipped; yaw from 0
    mid = control.output(0.21)
    assert np.all(np.abs(mid.command) <= [1.0, 0.5, 1.0]) and mid.command[2] > 0.0


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


def test_commanding_again_leaves_hold_from_zero_and_give_back_returns_to_the_policy(control: OperatorControl) -> None:
    control.output(0.0, np.array([0.8, 0.0, 0.0]))
    control.take_over("a", 0.0)
    control.output(1.0, np.array([0.8, 0.0, 0.0]))
    assert control.mode == HOLD
    assert control.command("a", [1.0, 0.0, 0.0], 1.1) == ""
    out = control.output(1.1, np.array([0.8, 0.0, 0.0]))
    assert out.mode == HUMAN and np.all(out.command == 0.0)  # ramps up from the hold, not from the policy
    assert "only the operator" in control.give_back("b", 1.2)
    assert control.give_back("a", 1.2) == ""
    assert control.output(1.3).mode == POLICY and control.output(1.3).command is None
    assert control.command("a", [1.0, 0.0, 0.0], 1.4) == "read-only session"


def test_the_estop_holds_refuses_takeovers_and_its_reset_keeps_the_hold(control: OperatorControl) -> None:
    control.take_over("a", 0.0, [1.0, 0.0, 0.0])
    control.estop_latched(0.1, "console e-stop button")
    assert control.mode == HOLD and "e-stop" in control.hold_reason
    assert control.status(0.2)["estop"] == "console e-stop button"
    assert control.take_over("a", 0.2) == ESTOP_LATCHED and control.command("a", [1, 0, 0], 0.3) == ESTOP_LATCHED
    control.estop_reset(0.4)
    assert control.output(0.5).mode == HOLD  # still held: a person acts first
    assert control.command("a", [1.0, 0.0, 0.0], 0.6) == ""
    assert np.all(control.output(0.6).command == 0.0)  # from zero


def test_the_status_age_counts_from_the_consoles_start_not_the_boot() -> None:
    """Issue 42, defect 9: the badge showed seconds since the machine booted."""
    control = OperatorControl(robot_deployment("arm").operator)
    status = control.status(time.monotonic())
    assert status["mode"] == POLICY and 0.0 <= float(status["seconds"]) < 1.0  # type: ignore[arg-type]
    assert abs(float(status["since"]) - time.time()) < 1.0  # type: ignore[arg-type]


def test_an_episode_held_by_a_latched_guard_stays_out_of_the_success_rate() -> None:
    from sim2real.policies.teleop.target import EpisodeLog

    log = EpisodeLog()
    log.end(True)
    log.end(False, counted=False)  # the filter's hold after a fall: neither the policy's nor the person's
    log.end(False, counted=False)
    summary = log.summary()
    assert summary["success_rate"] == 1.0 and summary["episode"] == 3 and len(summary["history"]) == 3
