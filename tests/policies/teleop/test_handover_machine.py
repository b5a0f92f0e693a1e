"""The console's handover rules over random sequences of takeover, command, release, give
back, hidden page, disconnect, dead man, hold, e-stop and reset, with a moving policy
command (Hypothesis stateful testing on :class:`OperatorControl`, the one state machine
every console target applies).

At every output: never above the operator's limit, never opposite to the held key, the
hold exactly while held; a takeover blends from what the robot last received (the
policy's command, clipped to the limit) or from zero after a hold; the dead man holds;
only the operator can act, and giving back releases ownership."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from sim2real.policies.teleop.operator import HOLD, HUMAN, POLICY, OperatorControl, OperatorSettings
from sim2real.sim import robot_deployment

SESSIONS = st.sampled_from(["a", "b"])
FRACTIONS = st.one_of(st.sampled_from([-1.5, -1.0, -0.3, 0.0, 0.3, 1.0, 1.5]), st.floats(-1.5, 1.5))
"""An axis as the page sends it: keys (0, +-1), sticks, beyond the limit."""
POLICY_MULTIPLES = st.one_of(st.sampled_from([-3.0, -1.0, -0.5, 0.0, 0.5, 1.0, 3.0]), st.floats(-3.0, 3.0))
"""The policy's command per axis, in multiples of the operator's limit."""
SOON = st.sampled_from([0.0, 0.005, 0.02])
"""s from an event to the target's next output (it publishes at once, or at 50 Hz)."""
HOSTILE = st.sampled_from([math.nan, math.inf, -math.inf, 10**400, True, "1", None, [1.0], {"x": 1}])


class Handover(RuleBasedStateMachine):
    control: OperatorControl

    @initialize(robot=st.sampled_from(["arm", "quadruped", "drone"]), blend=st.sampled_from([0.0, 0.1, 0.4]),
                fraction=st.sampled_from([1.0, 0.5]), data=st.data())
    def start(self, robot: str, blend: float, fraction: float, data: st.DataObject) -> None:
        space = robot_deployment(robot).operator
        self.control = OperatorControl(space, OperatorSettings(blend_seconds=blend, timeout=0.2,
                                                               max_speed_fraction=fraction), since=0.0)
        self.n = len(space.axes)
        self.limit = space.limits * fraction
        self.zero = np.zeros(self.n)
        self.t = 0.0
        self.policy: np.ndarray | None = self._policy(data)
        # The model: what the robot last received, where the blend starts, when it began.
        self.received = self.zero.copy()
        self.base = self.zero.copy()
        self.entered = 0.0
        self.from_hold = False
        self.last_sign = -math.inf
        self.mode = POLICY
        self.accepted = 0
        self._output(0.02)  # the robot runs the policy's command

    def _policy(self, data: st.DataObject) -> np.ndarray:
        multiples = data.draw(st.lists(POLICY_MULTIPLES, min_size=self.n, max_size=self.n))
        return np.array(multiples) * self.control.space.limits

    # -- the model follows each transition -----------------------------------------------
    def _after(self, before: str) -> None:
        c = self.control
        if c.mode == HOLD and before != HOLD:
            self.received = self.zero.copy()  # a hold goes out at once
        if c.mode == HUMAN and before != HUMAN:
            self.from_hold = before == HOLD or not np.any(self.received)
            self.base = np.clip(self.received, -self.limit, self.limit)
            self.entered = self.t
        self.mode = c.mode

    def _axes(self, data: st.DataObject) -> list[float]:
        return data.draw(st.lists(FRACTIONS, min_size=self.n, max_size=self.n))

    # -- rules: each event, then the target's next output soon after ------------------------
    @rule(data=st.data(), stale=st.booleans(), dt=SOON)
    def policy_moves(self, data: st.DataObject, stale: bool, dt: float) -> None:
        self.policy = None if stale else self._policy(data)
        self._output(dt)

    @rule(session=SESSIONS, data=st.data(), with_axes=st.booleans(), dt=SOON)
    def take_over(self, session: str, data: st.DataObject, with_axes: bool, dt: float) -> None:
        c, before, owner = self.control, self.control.mode, self.control.owner
        axes = self._axes(data) if with_axes else None
        self.t += 0.01
        reply = c.take_over(session, self.t, axes)
        if c.estop or owner not in ("", session):
            assert reply and c.owner == owner and c.mode == before
        else:
            assert c.owner == session and c.mode == HUMAN and reply == ""
            self.accepted += axes is not None
            self.last_sign = self.t
            self._after(before)
        self._output(dt)

    @rule(session=SESSIONS, data=st.data(), dt=SOON)
    def command(self, session: str, data: st.DataObject, dt: float) -> None:
        c, before = self.control, self.control.mode
        self.t += 0.01  # past the rate limit
        reply = c.command(session, self._axes(data), self.t)
        if session != c.owner or before == POLICY or c.estop:
            assert reply and c.mode == before
        else:
            assert reply == "" and c.mode == HUMAN
            self.accepted += 1
            self.last_sign = self.t
            self._after(before)
        self._output(dt)

    @rule(session=SESSIONS, data=st.data(), hostile=HOSTILE)
    def hostile_command(self, session: str, data: st.DataObject, hostile: object) -> None:
        axes: list[object] = list(self._axes(data))
        axes[data.draw(st.integers(0, self.n - 1))] = hostile
        c, before = self.control, self.control.mode
        refusals = c.counts["refused"] + c.counts["invalid"]
        self.t += 0.01
        assert c.command(session, axes, self.t)  # refused, whoever sends it
        assert c.mode == before and c.counts["refused"] + c.counts["invalid"] == refusals + 1
        assert c.counts["accepted"] == self.accepted

    @rule(session=SESSIONS, dt=SOON)
    def give_back(self, session: str, dt: float) -> None:
        c = self.control
        was_owner = session == c.owner
        reply = c.give_back(session, self.t)
        if was_owner:
            assert reply == "" and c.mode == POLICY and c.owner == ""  # the next operator may take over
            other = "b" if session == "a" else "a"
            if not c.estop:
                assert c.take_over(other, self.t) == "" and c.give_back(other, self.t) == ""
        else:
            assert reply
        self.mode = c.mode
        self._output(dt)

    @rule(session=SESSIONS, event=st.sampled_from(["release", "disconnected", "hidden", "link lost", "e-stop"]),
          dt=SOON)
    def hold_event(self, session: str, event: str, dt: float) -> None:
        """The operator lets go or vanishes, the robot's link is lost, the e-stop latches."""
        c, before, owner = self.control, self.control.mode, self.control.owner
        if event == "link lost":
            c.hold(self.t, "the robot's link was lost")
        elif event == "e-stop":
            c.estop_latched(self.t, "test")
            self.received = self.zero.copy()  # the filter's safe action
        else:
            getattr(c, event)(session, self.t)
            if event != "hidden" and session == owner:
                assert c.owner == ""
        if before == HUMAN and (event in ("link lost", "e-stop") or session == owner):
            assert c.mode == HOLD
        self._after(before)
        self._output(dt)

    @precondition(lambda self: bool(self.control.estop))
    @rule(dt=SOON)
    def estop_reset(self, dt: float) -> None:
        before = self.control.mode
        self.control.estop_reset(self.t)
        assert self.control.mode == before and self.control.mode != HUMAN  # a hold stays until a person acts
        self._output(dt)

    @rule(dt=st.sampled_from([0.0, 0.01, 0.05, 0.1, 0.19, 0.25, 0.5]))
    def wait(self, dt: float) -> None:
        self._output(dt)

    def _output(self, dt: float) -> None:
        """The target's next output, ``dt`` later: every rule checked."""
        c = self.control
        self.t += dt
        before = c.mode
        out = c.output(self.t, self.policy)
        if before == HUMAN and self.t - self.last_sign > c.settings.timeout:
            assert out.mode == HOLD  # the dead man
        self._after(before)
        if out.mode == POLICY:
            assert out.command is None
            self.received = self.zero.copy() if c.estop or self.policy is None else self.policy.copy()
            return
        assert out.command is not None and np.all(np.isfinite(out.command))
        if out.mode == HOLD:
            assert np.all(out.command == 0.0)
            self.received = self.zero.copy()
            return
        human = out.human
        assert human is not None
        # Never above the operator's limit, never against the held key.
        assert np.all(np.abs(out.command) <= self.limit + 1e-12), (out.command, self.limit)
        assert np.all(out.command * human >= 0.0), (out.command, human)
        # The blend: from what the robot last received (zero after a hold) to the person's.
        self.base = np.where(self.base * human < 0.0, 0.0, self.base)
        blend = c.settings.blend_seconds
        alpha = 1.0 if blend <= 0 else min(max((self.t - self.entered) / blend, 0.0), 1.0)
        if self.from_hold:
            assert np.allclose(out.command, alpha * human, rtol=0, atol=1e-12), (out.command, alpha, human)
        expected = (1 - alpha) * self.base + alpha * human
        assert np.allclose(out.command, expected, rtol=0, atol=1e-12), (out.command, expected)
        self.received = out.command.copy()

    @invariant()
    def the_estop_is_never_a_takeover(self) -> None:
        if hasattr(self, "control") and self.control.estop:
            assert self.control.mode != HUMAN

    @invariant()
    def a_takeover_has_an_operator(self) -> None:
        if hasattr(self, "control") and self.control.mode == HUMAN:
            assert self.control.owner


Handover.TestCase.settings = settings(max_examples=60, stateful_step_count=40, deadline=None,
                                      suppress_health_check=[HealthCheck.too_slow])
test_handover_rules = Handover.TestCase


@pytest.mark.slow
class TestHandoverRulesLong(Handover.TestCase):
    settings = settings(max_examples=1000, stateful_step_count=60, deadline=None,
                        suppress_health_check=[HealthCheck.too_slow])
