"""Property tests of the limit filters: for any command, NaN, +-inf and huge values
included, the output is finite and respects the filter's limit."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from safety_strategies import boxes, commands, finite_vectors, unit_quaternions

from sim2real.policies.safety.aerial import TiltLimit, TiltLimitParams, rotation
from sim2real.policies.safety.guards import tilt_angle
from sim2real.policies.safety.limits import (
    BoxLimit,
    BoxLimitParams,
    RateLimit,
    RateLimitParams,
    ServoEffortLimit,
    ServoEffortLimitParams,
    TargetVelocityLimit,
    TargetVelocityLimitParams,
    WorkspaceBox,
    WorkspaceBoxParams,
)
from sim2real.policies.safety.types import SafetyState

EPS = 1e-9
FAST = settings(max_examples=150, deadline=None)


@FAST
@given(box=boxes(5), cmds=st.lists(commands(5), min_size=1, max_size=4))
def test_box_limit_output_is_inside_the_box(box, cmds) -> None:
    lo, hi = box
    f = BoxLimit(BoxLimitParams(list(lo), list(hi)))
    for cmd in cmds:
        out, report = f.filter(cmd, SafetyState(now=0.0))
        assert np.all(np.isfinite(out)) and np.all(out >= lo) and np.all(out <= hi)
        inside = np.isfinite(cmd) & (cmd >= lo) & (cmd <= hi)
        np.testing.assert_array_equal(out[inside], cmd[inside])  # a limit never touches what is allowed
        assert report.acted == (not inside.all())
        f.observe_output(out, SafetyState(now=0.0))


@FAST
@given(
    rate=finite_vectors(3, 0.1, 50.0),
    accel=st.one_of(st.none(), finite_vectors(3, 0.1, 500.0)),
    steps=st.lists(st.tuples(commands(3), st.one_of(st.just(0.0), st.floats(1e-4, 0.5))), min_size=1, max_size=8),
    initial=st.sampled_from(["zero", "joint_pos", "free"]),
)
def test_rate_limit_bounds_change_and_change_of_rate(rate, accel, steps, initial) -> None:
    params = RateLimitParams(list(rate), None if accel is None else list(accel), max_dt=0.1, initial=initial)
    f = RateLimit(params, 3)
    now, prev, prev_rate = 0.0, None, np.zeros(3)
    q = np.array([0.3, -0.2, 1.0])
    for cmd, dt in steps:
        now += dt
        state = SafetyState(now=now, joint_pos=q)
        out, _ = f.filter(cmd, state)
        assert np.all(np.isfinite(out))
        if prev is not None:
            elapsed = min(dt, 0.1)
            ulp = 4 * np.spacing(np.abs(prev))  # a "free" first command may be huge
            assert np.all(np.abs(out - prev) <= rate * elapsed + EPS + ulp)
            if accel is not None and elapsed > 0:
                new_rate = (out - prev) / elapsed
                tol = 1e-6 + ulp / elapsed
                assert np.all(np.abs(new_rate - np.clip(prev_rate, -rate, rate)) <= accel * elapsed + tol)
                prev_rate = new_rate
        elif initial != "free":
            ref = np.zeros(3) if initial == "zero" else q
            assert np.all(np.abs(out - ref) <= rate * 0.1 + EPS)
            prev_rate = (out - ref) / 0.1  # the first output moved from the reference
        f.observe_output(out, state)
        prev = out


@FAST
@given(cmd=commands(4), q=finite_vectors(4), vmax=finite_vectors(4, 0.1, 30.0), horizon=st.floats(0.001, 0.1))
def test_target_velocity_limit_keeps_targets_near_the_measured_joints(cmd, q, vmax, horizon) -> None:
    f = TargetVelocityLimit(TargetVelocityLimitParams(list(vmax), horizon), 4)
    out, _ = f.filter(cmd, SafetyState(now=0.0, joint_pos=q))
    assert np.all(np.isfinite(out)) and np.all(np.abs(out - q) <= vmax * horizon + EPS)


def test_target_velocity_limit_without_joint_state_trips() -> None:
    f = TargetVelocityLimit(TargetVelocityLimitParams(1.0, 0.02), 2)
    _, report = f.filter(np.zeros(2), SafetyState(now=0.0, joint_pos=np.array([np.nan, 0.0])))
    assert report.tripped and "no joint positions" in report.reason


@FAST
@given(
    cmd=commands(3), q=finite_vectors(3), qd=finite_vectors(3, -30, 30),
    tau=finite_vectors(3, 1.0, 50.0), kp=finite_vectors(3, 5.0, 100.0), kd=finite_vectors(3, 0.0, 5.0),
)
def test_servo_effort_limit_bounds_the_servo_torque(cmd, q, qd, tau, kp, kd) -> None:
    f = ServoEffortLimit(ServoEffortLimitParams(list(tau), list(kp), list(kd)), 3)
    state = SafetyState(now=0.0, joint_pos=q, joint_vel=qd)
    out, _ = f.filter(cmd, state)
    assert np.all(np.isfinite(out))
    assert np.all(np.abs(f.servo_effort(out, state)) <= tau * (1 + 1e-9) + 1e-6)


LOW, HIGH = np.array([0.25, -0.45, -0.02]), np.array([0.8, 0.45, 0.6])


@FAST
@given(cmd=commands(7), p=finite_vectors(3, -1.0, 1.5), use_desired=st.booleans())
def test_workspace_box_never_moves_the_setpoint_out_of_the_box(cmd, p, use_desired) -> None:
    f = WorkspaceBox(WorkspaceBoxParams(list(LOW), list(HIGH), 0.05), 7)
    state = SafetyState(now=0.0, ee_pos=p + 0.5) if use_desired else SafetyState(now=0.0, ee_pos=p)
    if use_desired:
        state.ee_pos_desired = p  # the setpoint is what the command moves
    out, _ = f.filter(cmd, state)
    assert np.all(np.isfinite(out[:3]))
    nxt = p + 0.05 * out[:3]
    inside = (p >= LOW) & (p <= HIGH)
    # Inside: stays inside. Outside along an axis: never moves further out along it.
    assert np.all(np.where(inside, (nxt >= LOW - EPS) & (nxt <= HIGH + EPS), True))
    assert np.all(np.where(p > HIGH, nxt <= p + EPS, True)) and np.all(np.where(p < LOW, nxt >= p - EPS, True))


@FAST
@given(cmd=commands(4), quat=unit_quaternions(), max_tilt=st.floats(0.1, 1.4))
def test_tilt_limit_levels_beyond_the_limit(cmd, quat, max_tilt) -> None:
    f = TiltLimit(TiltLimitParams(max_tilt))
    out, report = f.filter(cmd, SafetyState(now=0.0, base_quat=quat))
    if tilt_angle(quat) > max_tilt:
        R = rotation(quat)
        assert np.all(np.isfinite(out[1:3]))
        # d(R22)/dt = R20 wy - R21 wx under rate tracking: the body z axis turns up.
        assert R[2, 0] * out[2] - R[2, 1] * out[1] >= -EPS
        assert report.acted or np.allclose(out[1:3], cmd[1:3])
    else:
        np.testing.assert_array_equal(out, cmd)


def test_tilt_limit_without_attitude_trips() -> None:
    _, report = TiltLimit(TiltLimitParams(0.5)).filter(np.zeros(4), SafetyState(now=0.0))
    assert report.tripped
