"""Guards: they trip exactly when their condition holds (or their measurement is
missing), latched guards stay tripped until an explicit reset, and a guard never
alters the command it passes."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from safety_strategies import commands, finite_vectors, unit_quaternions

from sim2real.policies.safety import guards
from sim2real.policies.safety.types import SafetyState

FAST = settings(max_examples=100, deadline=None)


@FAST
@given(cmd=commands(3), ages=st.tuples(st.floats(0, 1), st.floats(0, 1)), latch=st.booleans())
def test_watchdog_trips_exactly_on_stale_streams(cmd, ages, latch) -> None:
    w = guards.Watchdog(guards.WatchdogParams(0.1, 0.2, latch))
    cmd_age, state_age = ages
    out, report = w.filter(cmd, SafetyState(now=10.0, command_stamp=10.0 - cmd_age, state_stamp=10.0 - state_age))
    assert out is cmd
    assert report.tripped == (cmd_age > 0.1 or state_age > 0.2)
    # Fresh again: a latched watchdog stays tripped, an unlatched one recovers.
    _, again = w.filter(cmd, SafetyState(now=11.0, command_stamp=11.0, state_stamp=11.0))
    assert again.tripped == (report.tripped and latch)
    w.reset()
    assert not w.filter(cmd, SafetyState(now=11.0, command_stamp=11.0, state_stamp=11.0))[1].tripped


def test_watchdog_before_the_first_command_trips_without_latching() -> None:
    w = guards.Watchdog(guards.WatchdogParams(0.1, 0.1, latch=True))
    assert "no command" in w.filter(np.zeros(1), SafetyState(now=0.0, state_stamp=0.0))[1].reason
    assert not w.filter(np.zeros(1), SafetyState(now=0.0, state_stamp=0.0, command_stamp=0.0))[1].tripped


def test_estop_is_latched_until_reset() -> None:
    e = guards.EStop()
    s = SafetyState(now=0.0)
    assert not e.filter(np.zeros(2), s)[1].tripped
    e.trip("operator")
    for _ in range(3):
        assert e.filter(np.zeros(2), s)[1].reason == "operator"
    e.reset()
    assert not e.filter(np.zeros(2), s)[1].tripped


@FAST
@given(quat=unit_quaternions(), max_tilt=st.floats(0.2, 1.5))
def test_attitude_guard_latches_a_fall(quat, max_tilt) -> None:
    g = guards.AttitudeGuard(guards.AttitudeGuardParams(max_tilt))
    fallen = guards.tilt_angle(quat) > max_tilt
    assert g.filter(np.zeros(12), SafetyState(now=0.0, base_quat=quat))[1].tripped == fallen
    upright = SafetyState(now=1.0, base_quat=np.array([1.0, 0, 0, 0]))
    assert g.filter(np.zeros(12), upright)[1].tripped == fallen  # latched
    g.reset()
    assert not g.filter(np.zeros(12), upright)[1].tripped


def test_attitude_guard_without_orientation_fails_closed() -> None:
    g = guards.AttitudeGuard(guards.AttitudeGuardParams(1.0))
    assert g.filter(np.zeros(12), SafetyState(now=0.0, base_quat=np.array([np.nan, 0, 0, 1.0])))[1].tripped


@FAST
@given(q=finite_vectors(3, -3, 3), qd=finite_vectors(3, -5, 5))
def test_joint_state_guard(q, qd) -> None:
    p = guards.JointStateGuardParams([-2.0] * 3, [2.0] * 3, [2.0] * 3, position_margin=0.1, velocity_ratio=1.5)
    g = guards.JointStateGuard(p)
    bad = np.any(np.abs(q) > 2.1) or np.any(np.abs(qd) > 3.0)
    assert g.filter(np.zeros(3), SafetyState(now=0.0, joint_pos=q, joint_vel=qd))[1].tripped == bad


def test_effort_guard_needs_consecutive_samples_and_latches() -> None:
    g = guards.EffortGuard(guards.EffortGuardParams([10.0, 10.0], ratio=1.0, samples=3))
    over, ok = np.array([11.0, 0.0]), np.array([1.0, 0.0])
    tripped = []
    for i, effort in enumerate([over, over, ok, over, over, over, ok]):
        s = SafetyState(now=float(i), state_stamp=float(i), joint_effort=effort)
        tripped.append(g.filter(np.zeros(2), s)[1].tripped)
    assert tripped == [False, False, False, False, False, True, True]


@FAST
@given(p=finite_vectors(3, -5, 5), v=finite_vectors(3, -3, 3))
def test_geofence_trips_outside_or_heading_out(p, v) -> None:
    low, high = np.array([-3.0, -3.0, 0.0]), np.array([3.0, 3.0, 2.5])
    g = guards.Geofence(guards.BoxGuardParams(list(low), list(high), lookahead=0.5))
    ahead = p + 0.5 * v
    out = np.any(p < low) or np.any(p > high) or np.any(ahead < low) or np.any(ahead > high)
    assert g.filter(np.zeros(4), SafetyState(now=0.0, base_pos=p, base_lin_vel=v))[1].tripped == out
    if out:
        inside = SafetyState(now=1.0, base_pos=np.array([0.0, 0.0, 1.0]), base_lin_vel=np.zeros(3))
        assert g.filter(np.zeros(4), inside)[1].tripped  # latched until reset
