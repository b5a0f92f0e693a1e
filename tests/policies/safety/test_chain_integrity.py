"""Issue 16's chain-level defects, one regression test each: malformed input never
raises, stale streams are not trusted, a limit never undoes an earlier one, a clock
step fails closed, every command source goes through one mux, a filter that raises
gives the safe action."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from safety_strategies import ANY_FLOAT
from test_chains import ROBOTS, nominal_state

from sim2real.policies.safety import SafetyState, command_space, make_chain
from sim2real.policies.safety.chain import SafetyChain
from sim2real.policies.safety.limits import BoxLimit
from sim2real.policies.safety.mux import CommandSource
from sim2real.policies.safety.presets import PARAMS
from sim2real.sim.quadruped import constants as QUAD

TELEOP = CommandSource("teleop", priority=100, hold=0.5)


@pytest.mark.parametrize("robot,mode", ROBOTS)
@pytest.mark.parametrize("values", [[[1.0, 2.0], [3.0]], [[1.0], 2.0], "fast", {"a": 1}, None, object(),
                                    np.zeros((2, 4)), [1 + 2j] * 8])
def test_malformed_commands_are_rejected_not_raised(robot, mode, values) -> None:
    chain = make_chain(command_space(robot, mode))
    reason = chain.accept(values, 0.0)
    assert reason and chain.rejected == 1 and chain.command is None


@pytest.mark.parametrize("robot,mode", ROBOTS)
@pytest.mark.parametrize("field,bad", [("base_quat", [1.0, 0.0, 0.0]), ("ee_pos", [0.5, 0.1]),
                                       ("base_pos", "high"), ("ee_quat", np.zeros((2, 2))),
                                       ("joint_pos", np.zeros(5)), ("joint_vel", [[0.0] * 3] * 4),
                                       ("joint_effort", np.zeros(2)), ("base_ang_vel", [1.0] * 7)])
def test_malformed_state_gives_the_safe_action_not_an_exception(robot, mode, field, bad) -> None:
    space = command_space(robot, mode)
    chain = make_chain(space)
    chain.accept(space.hold, 0.0)
    assert chain.step(nominal_state(robot, 0.0)).command is not None
    state = nominal_state(robot, 0.01)
    setattr(state, field, bad)
    chain.accept(space.hold, 0.01)
    out = chain.step(state)  # today: IndexError/ValueError from inside a filter
    if out.command is not None:
        assert np.all(np.isfinite(out.command)) and out.command.shape == (space.size,)


def test_a_filter_that_raises_gives_the_safe_action() -> None:
    space = command_space("arm", "ee_delta")
    chain = make_chain(space)

    class Broken:
        name, final = "broken", False

        def filter(self, command, state):
            raise RuntimeError("bug")

    chain.limits.insert(0, Broken())  # type: ignore[arg-type]
    chain.accept(np.r_[0.3, np.zeros(5), 0.04], 0.0)
    out = chain.step(nominal_state("arm", 0.0))
    assert out.mode == "safe" and "internal error: RuntimeError: bug" in out.reason
    assert out.command is not None and np.all(out.command[:6] == 0.0)  # the arm holds
    assert chain.internal_errors == 1


def test_a_frozen_setpoint_stream_does_not_widen_the_workspace() -> None:
    """ee_pose_desired stopped 1 s ago at the box centre; the measured hand is at the edge:
    the box must bound from the measurement (today the frozen setpoint lets +x through)."""
    space = command_space("arm", "ee_delta")
    chain = make_chain(space)
    high = np.asarray(PARAMS["arm"]().workspace_high)
    now = 10.0
    state = nominal_state("arm", now)
    state.ee_pos = np.array([high[0] - 0.001, 0.0, 0.3])
    state.set(now, ee_pos=state.ee_pos)
    state.set(now - 1.0, ee_pos_desired=np.array([0.5, 0.0, 0.3]))
    chain.accept(np.r_[0.8, np.zeros(5), 0.04], now)
    out = chain.step(state)
    assert out.command[0] <= 0.001 / space.control_dt + 1e-9, out.command


def test_a_fresh_setpoint_and_measurement_both_bound_the_workspace() -> None:
    space = command_space("arm", "ee_delta")
    chain = make_chain(space)
    high = np.asarray(PARAMS["arm"]().workspace_high)
    state = nominal_state("arm", 1.0)
    state.set(1.0, ee_pos=np.array([0.5, 0.0, 0.3]), ee_pos_desired=np.array([high[0] - 0.002, 0.0, 0.3]))
    chain.accept(np.r_[0.8, np.zeros(5), 0.04], 1.0)
    assert chain.step(state).command[0] <= 0.002 / space.control_dt + 1e-9


def test_a_joint_speed_glitch_moves_no_target_beyond_the_rate_limit() -> None:
    """One joint_states sample with 60 rad/s on a hip: the servo-effort interval shifts by
    kd * 60 / kp = 1.7 rad. The output may not move more than the rate limit allows from the
    previous output (today: 1.04 rad against 0.8), and the overspeed guard trips."""
    space = command_space("quadruped", "joint_pos")
    p = PARAMS["quadruped"]()
    chain = make_chain(space)
    dt = space.control_dt
    chain.accept(QUAD.DEFAULT_POSE, 0.0)
    first = chain.step(nominal_state("quadruped", 0.0)).command
    glitch = nominal_state("quadruped", dt)
    glitch.joint_vel = np.zeros(12)
    glitch.joint_vel[0] = 60.0
    chain.accept(QUAD.DEFAULT_POSE + 1.0, dt)
    out = chain.step(glitch)
    assert np.max(np.abs(out.command - first)) <= p.max_target_rate * dt + 1e-9
    assert out.mode == "safe" and "joint_state_guard" in out.reason and "overspeeding" in out.reason


@pytest.mark.parametrize("robot,mode", ROBOTS)
def test_a_later_limit_never_leaves_an_earlier_limits_interval(robot, mode) -> None:
    rng = np.random.default_rng(0)
    space = command_space(robot, mode)
    chain = make_chain(space)
    now = 0.0
    for _ in range(200):
        now += space.control_dt
        state = nominal_state(robot, now)
        if state.joint_vel is not None:
            state.joint_vel = rng.normal(0, 20, state.joint_vel.shape)
        chain.accept(space.hold + rng.normal(0, 3, space.size) * (space.upper - space.lower), now)
        out = chain.step(state)
        if out.mode == "idle" or out.command is None:
            continue
        first = next(((f, f.last_interval) for f in chain.limits if not f.final and f.last_interval is not None),
                     None)
        if first is not None:  # the first limit's interval always holds for the output
            lo, hi = first[1]
            assert np.all(out.command >= lo - 1e-9) and np.all(out.command <= hi + 1e-9), first[0].name


def test_a_clock_step_back_gives_the_safe_action() -> None:
    """The state and the command were dated 1 s after 'now' (the clock stepped back 1 s):
    nothing proves them fresh. Today the watchdog reads a negative age as fresh."""
    space = command_space("drone", "ctbr")
    chain = make_chain(space)
    chain.accept([0.3, 0, 0, 0], 101.0)
    state = nominal_state("drone", 101.0)
    assert chain.step(state).mode == "nominal"
    state.now = 100.0 + 2 * space.control_dt
    out = chain.step(state)
    assert out.mode == "safe" and "clock stepped back" in out.reason


def test_teleop_overrides_the_policy_and_hands_back_after_its_hold() -> None:
    space = command_space("arm", "ee_delta")
    base = make_chain(space)
    chain = SafetyChain(space, base.watchdog, base.guards[2:], base.limits, base.fallback,
                        sources=[CommandSource("policy", 10, 0.5), TELEOP])
    teleop = np.r_[0.0, 0.1, 0.0, 0.0, 0.0, 0.0, 0.04]
    policy = np.r_[0.1, 0.0, 0.0, 0.0, 0.0, 0.0, 0.04]
    assert chain.offer("policy", policy, 0.0) == ""
    assert chain.offer("teleop", teleop, 0.05) == ""
    assert chain.offer("policy", policy, 0.1).startswith("overridden: teleop")
    np.testing.assert_array_equal(chain.command, teleop)
    # The operator let go at 0.05 s: the robot does not keep executing teleop's command...
    state = nominal_state("arm", 0.3)
    assert chain.step(state).mode == "safe"
    assert chain.offer("policy", policy, 0.3).startswith("overridden")
    # ...and the policy is back once teleop's hold has passed.
    assert chain.offer("policy", policy, 0.56) == ""
    assert chain.mux.counts == {"policy_accepted": 2, "teleop_accepted": 1, "policy_overridden": 2}


def test_every_source_is_dropped_during_an_estop() -> None:
    space = command_space("arm", "ee_delta")
    base = make_chain(space)
    chain = SafetyChain(space, base.watchdog, base.guards[2:], base.limits, base.fallback,
                        sources=[CommandSource("policy", 10, 0.5), TELEOP])
    chain.trip_estop("button")
    for source in ("policy", "teleop"):
        assert chain.offer(source, space.hold, 0.0).startswith("e-stop")
    assert chain.command is None


def test_the_estop_survives_a_chain_rebuild_when_handed_over() -> None:
    space = command_space("drone", "ctbr")
    old = make_chain(space)
    old.trip_estop("operator")
    new = make_chain(space, estop=old.estop)
    new.accept([0.3, 0, 0, 0], 0.0)
    assert new.step(nominal_state("drone", 0.0)).mode == "safe"


def test_latch_changes_are_reported_for_persistence() -> None:
    space = command_space("quadruped", "joint_pos")
    chain = make_chain(space)
    seen: list[list[str]] = []
    chain.on_latch_change = seen.append
    chain.accept(space.offset, 0.0)
    fallen = nominal_state("quadruped", 0.0)
    fallen.base_quat = np.array([np.cos(0.7), np.sin(0.7), 0.0, 0.0])
    chain.step(fallen)
    chain.trip_estop("button")
    assert seen[0] == ["fall_guard: fallen: tilt 80 deg > 57 deg"]
    assert seen[1][0] == "estop: button"
    chain.reset(nominal_state("quadruped", 0.1))
    assert seen[-1] == []


def test_state_fields_dated_individually_age_individually() -> None:
    s = SafetyState(now=5.0, state_stamp=4.99)
    s.set(4.0, ee_pos_desired=np.zeros(3))
    assert s.age("ee_pos_desired") == pytest.approx(1.0)
    assert s.age("ee_pos") == pytest.approx(0.01)  # undated: as old as the state
    assert not s.fresh("ee_pos_desired", 0.1)
    s.set(6.0, ee_pos=np.zeros(3))
    assert not s.fresh("ee_pos", 10.0)  # from the future


MALFORMED = st.one_of(
    st.none(),
    hnp.arrays(np.float64, st.integers(0, 14), elements=ANY_FLOAT),
    hnp.arrays(np.float64, st.tuples(st.integers(1, 3), st.integers(1, 4)), elements=ANY_FLOAT),
    st.lists(st.lists(st.floats(-2, 2), max_size=3), max_size=4),
    st.sampled_from(["text", b"\x00\x01", {"x": 1.0}, 3.0, [1.0, "a"]]),
)
"""Anything a broken driver or a hostile message could put in a state field or a command."""


@pytest.mark.parametrize("robot,mode", ROBOTS)
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_no_input_sequence_makes_a_chain_raise_or_leave_its_hard_limits(robot, mode, data) -> None:
    """Property: malformed commands, malformed state fields and clock steps (back and
    forward) in any order never raise; every output is finite and inside the hard box."""
    space = command_space(robot, mode)
    chain = make_chain(space)
    box = next(f for f in chain.limits if isinstance(f, BoxLimit))
    now = 100.0
    for _ in range(data.draw(st.integers(1, 8))):
        now += data.draw(st.one_of(st.floats(0.0, 0.05), st.sampled_from([-1.0, -0.01, 5.0])))  # clock steps
        command = data.draw(st.one_of(hnp.arrays(np.float64, (space.size,), elements=ANY_FLOAT), MALFORMED))
        chain.accept(command, now, data.draw(st.one_of(st.none(), st.just(list(space.names)),
                                                        st.lists(st.text(max_size=4), max_size=3))))
        state = nominal_state(robot, now)
        for name in data.draw(st.lists(st.sampled_from(sorted(FIELDS)), max_size=3)):
            setattr(state, name, data.draw(MALFORMED))
        out = chain.step(state)
        if out.command is not None:
            assert out.command.shape == (space.size,) and np.all(np.isfinite(out.command))
            assert np.all(out.command >= box.lower) and np.all(out.command <= box.upper)


FIELDS = {"joint_pos", "joint_vel", "joint_effort", "ee_pos", "ee_quat", "ee_pos_desired", "ee_quat_desired",
          "base_pos", "base_quat", "base_lin_vel", "base_ang_vel", "base_lin_acc", "state_stamp"}


def test_a_bad_joint_reading_cannot_push_the_output_out_of_the_hard_box() -> None:
    """Found by the property above: joint_states reading 0 rad on every joint (beyond the
    calves' range) built the effort limit's interval around 0, and earlier limits won over
    the joint box, so the stand-down's first command put the calves at -0.628 rad, past
    their -0.838 rad stop."""
    space = command_space("quadruped", "joint_pos")
    chain = make_chain(space)
    box = next(f for f in chain.limits if isinstance(f, BoxLimit))
    state = nominal_state("quadruped", 100.0)
    state.joint_pos = np.zeros(12)
    out = chain.step(state)
    assert out.mode == "safe" and "joint_state_guard" in out.reason
    assert np.all(out.command >= box.lower) and np.all(out.command <= box.upper), out.command


def test_after_a_filter_raises_the_fallback_is_rate_limited_from_the_last_output() -> None:
    """Issue 42, defect 11: the emergency output was clipped to the hard boxes only; the
    quadruped's stand-down target arrived in one step (0.545 rad where the rate limit
    allows 0.2 per period at its 10 rad/s in this test)."""
    from sim2real.policies.safety import SafetyState, command_space, make_chain
    from sim2real.policies.safety.limits import RateLimit, TargetVelocityLimit
    from sim2real.policies.safety.presets import QuadrupedSafetyParams
    from sim2real.sim.quadruped import constants as QUAD

    space = command_space("quadruped", "joint_pos")
    chain = make_chain(space, QuadrupedSafetyParams(max_target_rate=10.0))
    dt = space.control_dt
    stand = QUAD.DEFAULT_POSE.copy()

    def state(t: float) -> SafetyState:
        return SafetyState(now=t, state_stamp=t, command_stamp=t, joint_pos=stand.copy(), joint_vel=np.zeros(12),
                           joint_effort=np.zeros(12), base_quat=np.array([1.0, 0, 0, 0]), base_ang_vel=np.zeros(3),
                           base_pos=np.array([0, 0, 0.3]), base_lin_vel=np.zeros(3))

    t = 0.0
    for _ in range(100):  # settle on the standing pose
        t += dt
        chain.offer("policy", stand, t)
        out = chain.step(state(t))
    assert out.mode == "nominal" and np.allclose(out.command, stand, atol=1e-6)
    last = out.command.copy()
    broken = next(f for f in chain.limits if isinstance(f, TargetVelocityLimit))
    broken.filter = lambda *_: (_ for _ in ()).throw(RuntimeError("a filter bug"))  # type: ignore[method-assign]
    rate = next(f for f in chain.limits if isinstance(f, RateLimit))
    for _ in range(5):
        t += dt
        chain.offer("policy", stand, t)
        out = chain.step(state(t))
        assert out.mode == "safe" and "internal error" in out.reason
        step = np.abs(out.command - last)
        assert np.all(step <= rate.max_rate * dt + 1e-9), float(step.max())
        last = out.command.copy()
    assert np.abs(last - stand).max() > 0  # it is moving towards the crouch, at the allowed rate
