"""The watchdog's one rule, as the filter node and the demo both count it
(:func:`guards.stream_stopped`): a trip is a stream that started and went stale (or is
dated after now: the clock stepped back); waiting for a stream's first message is not.
Checked on random sequences of arrivals and clock moves against a model of the streams;
a latched watchdog keeps a trip, and never a wait, until its reset."""

from __future__ import annotations

import numpy as np
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from sim2real.policies.safety import guards
from sim2real.policies.safety.types import SafetyState

COMMAND_TIMEOUT, STATE_TIMEOUT = 0.1, 0.2


class WatchdogMachine(RuleBasedStateMachine):
    @initialize(latch=st.booleans())
    def start(self, latch: bool) -> None:
        self.watchdog = guards.Watchdog(guards.WatchdogParams(COMMAND_TIMEOUT, STATE_TIMEOUT, latch))
        self.latch = latch
        self.now = 100.0
        self.command: float | None = None
        self.state: float | None = None
        self.latched = False

    @rule()
    def a_command_arrives(self) -> None:
        self.command = self.now

    @rule()
    def a_state_arrives(self) -> None:
        self.state = self.now

    @rule(dt=st.floats(-0.05, 0.3))
    def time_moves(self, dt: float) -> None:  # mostly on, sometimes back (a clock step)
        self.now += dt

    @rule()
    def reset(self) -> None:
        self.watchdog.reset()
        self.latched = False

    def _expected_trip(self) -> bool | None:
        """True: a trip; False: fine; None: waiting for a first message (no trip)."""
        if self.command is None or self.state is None:
            return None
        ages = (self.now - self.command, self.now - self.state)
        return not (0 <= ages[0] <= COMMAND_TIMEOUT and 0 <= ages[1] <= STATE_TIMEOUT)

    @invariant()
    def trips_exactly_when_a_started_stream_stopped(self) -> None:
        if not hasattr(self, "watchdog"):
            return
        state = SafetyState(now=self.now, command_stamp=self.command, state_stamp=self.state)
        _, report = self.watchdog.filter(np.zeros(2), state)
        expected = self._expected_trip()
        if self.latched:
            assert report.tripped and guards.stream_stopped(report.reason), report
            return
        if expected is None:
            assert report.tripped and not guards.stream_stopped(report.reason), report  # a wait: no trip
        else:
            assert guards.stream_stopped(report.reason) == expected == report.tripped, (report, expected)
            self.latched = self.latch and expected


TestWatchdogMachine = WatchdogMachine.TestCase
TestWatchdogMachine.settings = settings(max_examples=200, stateful_step_count=30, deadline=None)
