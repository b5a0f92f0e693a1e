"""The per-robot chains: whatever arrives (any length, NaN, inf, huge), the output is
finite and inside every hard limit; invalid commands are rejected with a reason;
the watchdog gives the safe action within 3 control periods; the e-stop holds
until an explicit reset and no command sent before or during it reaches the robot."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from safety_strategies import ANY_FLOAT, finite_vectors, unit_quaternions

from sim2real.policies.safety import SafetyState, command_space, make_chain
from sim2real.policies.safety.limits import BoxLimit
from sim2real.sim.arm import constants as ARM
from sim2real.sim.quadruped import constants as QUAD

ROBOTS = [
    ("arm", "ee_delta"),
    ("arm", "ee_impedance"),
    ("arm", "joint_torque"),
    ("quadruped", "joint_pos"),
    ("drone", "ctbr"),
    ("drone", "velocity"),
]


def nominal_state(robot: str, now: float) -> SafetyState:
    s = SafetyState(now=now, state_stamp=now)
    if robot == "arm":
        s.joint_pos, s.joint_vel = ARM.HOME_QPOS.copy(), np.zeros(7)
        s.ee_pos = np.array([0.5, 0.0, 0.4])
        s.ee_quat = np.array([0.0, 1.0, 0.0, 0.0])  # gripper down
        s.ee_pos_desired, s.ee_quat_desired = s.ee_pos.copy(), s.ee_quat.copy()
    elif robot == "quadruped":
        s.joint_pos, s.joint_vel, s.joint_effort = QUAD.DEFAULT_POSE.copy(), np.zeros(12), np.zeros(12)
        s.base_quat, s.base_ang_vel = np.array([1.0, 0, 0, 0]), np.zeros(3)
        s.base_pos, s.base_lin_vel = np.array([0, 0, 0.3]), np.zeros(3)
    else:
        s.base_pos, s.base_quat = np.array([0.0, 0.0, 1.0]), np.array([1.0, 0, 0, 0])
        s.base_lin_vel, s.base_ang_vel = np.zeros(3), np.zeros(3)
    return s


def hard_box(chain) -> tuple[np.ndarray, np.ndarray]:
    box = [f for f in chain.limits if isinstance(f, BoxLimit)]
    assert len(box) == 1
    return box[0].lower, box[0].upper


@pytest.mark.parametrize("robot,mode", ROBOTS)
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_any_input_gives_a_finite_command_inside_the_hard_limits(robot, mode, data) -> None:
    space = command_space(robot, mode)
    chain = make_chain(space)
    lo, hi = hard_box(chain)
    n = space.size
    now = 0.0
    for _ in range(data.draw(st.integers(1, 6))):
        now += data.draw(st.floats(0.0, 0.05))
        size = data.draw(st.sampled_from([n, n, n, 0, 1, n + 3]))
        values = data.draw(hnp.arrays(np.float64, (size,), elements=ANY_FLOAT))
        reason = chain.accept(values, now)
        if size != n:
            assert reason.startswith("wrong length")
        elif not np.all(np.isfinite(values)):
            assert reason.startswith("non-finite")
        else:
            assert reason == ""
        state = nominal_state(robot, now)
        if robot == "quadruped":
            state.joint_pos = state.joint_pos + data.draw(finite_vectors(12, -0.5, 0.5))
        if robot == "drone":
            state.base_quat = data.draw(unit_quaternions())
        out = chain.step(state)
        assert out.command is not None and out.command.shape == (n,)
        assert np.all(np.isfinite(out.command))
        assert np.all(out.command >= lo) and np.all(out.command <= hi), (out.command, lo, hi)


@pytest.mark.parametrize("robot,mode", ROBOTS)
def test_wrong_names_are_rejected_with_a_reason(robot, mode) -> None:
    chain = make_chain(command_space(robot, mode))
    names = list(chain.space.names)
    assert chain.accept(np.zeros(len(names)), 0.0, names=names) == ""
    reason = chain.accept(np.zeros(len(names)), 0.0, names=[*names[:-1], "bogus_joint"])
    assert "unknown element names ['bogus_joint']" in reason
    assert "out of order" in chain.accept(np.zeros(len(names)), 0.0, names=names[::-1])
    assert chain.rejected == 2


@pytest.mark.parametrize("robot,mode", ROBOTS)
def test_watchdog_gives_the_safe_action_within_three_periods(robot, mode) -> None:
    space = command_space(robot, mode)
    chain = make_chain(space)
    dt = space.control_dt
    hold = space.offset.copy() if mode != "ctbr" else np.array([0.265, 0, 0, 0])  # a hover's thrust
    t = 0.0
    for _ in range(10):  # the policy runs; the node checks twice per period
        chain.accept(hold, t)
        for half in (0.0, 0.5):
            assert chain.step(nominal_state(robot, t + half * dt)).mode == "nominal"
        t += dt
    last_command = t - dt
    first_safe = None
    while t < last_command + 5 * dt:  # the policy died: no more commands
        if chain.step(nominal_state(robot, t)).mode == "safe" and first_safe is None:
            first_safe = t
        t += dt / 2
    assert first_safe is not None and first_safe - last_command <= 3 * dt + 1e-9


@pytest.mark.parametrize("robot,mode", ROBOTS)
def test_stale_state_gives_the_safe_action(robot, mode) -> None:
    space = command_space(robot, mode)
    chain = make_chain(space)
    dt = space.control_dt
    frozen = nominal_state(robot, 0.0)
    chain.accept(space.offset, 0.0)
    assert chain.step(frozen).mode == "nominal"
    frozen.now = 3 * dt  # commands keep coming, the state stream froze at t = 0
    chain.accept(space.offset, frozen.now)
    out = chain.step(frozen)
    assert out.mode == "safe" and "state stale" in out.reason


@pytest.mark.parametrize("robot,mode", ROBOTS)
def test_estop_latches_and_drops_commands_until_reset(robot, mode) -> None:
    space = command_space(robot, mode)
    chain = make_chain(space)
    dt = space.control_dt
    push = np.clip(space.offset + 0.3 * space.scale, space.lower, space.upper)  # a distinct, valid command
    chain.accept(push, 0.0)
    chain.step(nominal_state(robot, 0.0))
    chain.trip_estop("test")
    safe = []
    for i in range(1, 20):
        assert chain.accept(push, i * dt).startswith("e-stop active")
        out = chain.step(nominal_state(robot, i * dt))
        assert out.mode == "safe" and "estop: test" in out.reason
        safe.append(out.command)
    assert chain.dropped_during_estop == 19
    assert "estop" in chain.reset()[1]  # (latched watchdogs also saw the dropped stream)
    # After the reset nothing old is replayed: the watchdog holds until a fresh command.
    out = chain.step(nominal_state(robot, 20 * dt))
    assert out.mode == "safe" and "no command" in out.reason
    chain.accept(push, 20 * dt)
    assert chain.step(nominal_state(robot, 20 * dt)).mode == "nominal"


def test_quadruped_fall_switches_to_damping_and_stays_latched() -> None:
    space = command_space("quadruped", "joint_pos")
    chain = make_chain(space)
    state = nominal_state("quadruped", 0.0)
    chain.accept(space.offset, 0.0)
    assert chain.step(state).mode == "nominal"
    fallen = nominal_state("quadruped", 0.01)
    fallen.base_quat = np.array([np.cos(0.7), np.sin(0.7), 0.0, 0.0])  # rolled 80 degrees
    fallen.joint_pos = QUAD.DEFAULT_POSE + 0.2
    chain.accept(space.offset, 0.01)
    out = chain.step(fallen)
    assert out.mode == "safe" and "fall_guard" in out.reason
    # Damping mode: targets follow the measured joints (no stiffness against the ground).
    np.testing.assert_allclose(out.command, fallen.joint_pos, atol=0.41)
    upright = nominal_state("quadruped", 0.03)
    chain.accept(space.offset, 0.03)
    assert chain.step(upright).mode == "safe"  # latched
    # The reset is refused while the cause is present (still lying on its side)...
    done, blockers = chain.reset(fallen)
    assert not done and any("fall_guard: fallen" in b for b in blockers)
    assert chain.step(upright).mode == "safe"
    # ...and accepted once it has gone; a command from before the trip is never used again.
    assert chain.reset(upright) == (True, ["fall_guard"])
    assert chain.step(upright).mode == "safe" and "no command" in chain.step(upright).reason
    chain.accept(space.offset, 0.03)
    assert chain.step(upright).mode == "nominal"


def test_drone_geofence_hovers_then_lands_and_cuts_the_motors() -> None:
    space = command_space("drone", "ctbr")
    chain = make_chain(space)
    s = nominal_state("drone", 0.0)
    s.base_pos = np.array([2.9, 0.0, 1.0])
    s.base_lin_vel = np.array([1.0, 0.0, 0.0])  # heading out of the 3 m fence
    chain.accept([0.3, 0, 0, 0], 0.0)
    out = chain.step(s)
    assert out.mode == "safe" and "geofence" in out.reason
    hb = chain.fallback
    np.testing.assert_allclose(hb.hold, [2.7, 0.0, 1.0])  # pulled inside the fence
    assert hb.target(1.0)[2] == pytest.approx(1.0)  # hovering
    assert hb.target(2.0 + 1.0)[2] == pytest.approx(0.7)  # landing at 0.3 m/s
    ground = nominal_state("drone", 6.0)
    ground.base_pos = np.array([2.7, 0.0, 0.02])
    assert np.allclose(chain.step(ground).command, 0.0)  # landed: motors off


def test_watchdog_ticks_between_commands_do_not_tighten_the_rate_limit() -> None:
    """The node ticks the chain every quarter period and sends only safe actions from
    there. Those unsent passes must not move the rate limit's reference: a step of
    0.6 rad per 20 ms period (30 rad/s, under the 40 rad/s limit and the servo effort
    limit) passes unchanged, however the ticks fall."""
    space = command_space("quadruped", "gait_residual")
    chain = make_chain(space)
    dt = space.control_dt
    target = QUAD.DEFAULT_POSE.copy()
    t = 0.0
    chain.accept(target, t)
    chain.step(nominal_state("quadruped", t))
    for k in range(6):
        for tick in (0.25, 0.5, 0.75):  # watchdog ticks: nothing is sent
            out = chain.step(nominal_state("quadruped", t + tick * dt), only_safe=True)
            assert out.command is None and out.mode == "nominal"
        t += dt
        target = target + (0.6 if k % 2 == 0 else -0.6) * np.array([0, 1.0, 0] * 4)
        chain.accept(target, t)
        out = chain.step(nominal_state("quadruped", t))
        np.testing.assert_allclose(out.command, target, atol=1e-12)
    # A jump past the limits is still cut (to at most 40 rad/s over the period).
    chain.step(nominal_state("quadruped", t + 0.5 * dt), only_safe=True)
    chain.accept(target + 2.0, t + dt)
    out = chain.step(nominal_state("quadruped", t + dt))
    assert 0.0 < np.abs(out.command - target).max() <= 40.0 * dt + 1e-12


def test_an_arm_hold_before_any_command_keeps_the_gripper_closed_on_its_tool() -> None:
    """The hold's gripper element was the command space's middle (4 cm) when no command
    had been sent yet: the filter's first safe action opened a hand holding a peg."""
    space = command_space("arm", "ee_delta")
    chain = make_chain(space)
    s = nominal_state("arm", 0.0)
    s.joint_pos = np.r_[s.joint_pos[:7], 0.012, 0.012]  # the fingers squeeze a 2.4 cm peg
    out = chain.step(s)  # nothing accepted yet: the watchdog's hold
    assert out.mode == "safe" and out.command is not None
    assert out.command[-1] == pytest.approx(0.024)
