"""A stateful property test of the e-stop reset's rule (:mod:`sim2real.ros_nodes.estop_sources`).

Hypothesis drives random histories of the ``estop`` topic around one safety filter:
sources joining (durable or volatile, some never publishing), pressing and releasing
while their messages are delayed in flight, sources leaving the graph, and the filter
restarting (a new process: it knows nothing; DDS then re-delivers each durable writer's
latest state, late or not yet).

The rule the model holds independently of the filter's code:

* **Fail closed:** while a present durable source whose state has not reached this
  filter yet has its button down, the reset is refused (its state from before the
  restart is still in flight). A press sent after the filter heard the source is a
  message in flight like any other: it trips the e-stop when it arrives.
* Any present source whose latest message to arrive said ``true`` refuses it.
* **Not locked out:** once every present source's latest state has arrived and says
  ``false`` (a durable source that never spoke refuses the reset by name), the reset
  is granted.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from sim2real.ros_nodes.command_gate import Writer
from sim2real.ros_nodes.estop_sources import EStopSources


@dataclass
class Source:
    ident: int
    durable: bool
    pressed: bool | None = None
    """The button now (None: the source has said nothing yet)."""
    in_flight: list[bool] = field(default_factory=list)
    """Its messages sent but not yet received by the filter, oldest first."""
    heard: bool | None = None
    """The latest of its messages the filter received (None: none since it started)."""

    @property
    def gid(self) -> bytes:
        return self.ident.to_bytes(16, "big")

    @property
    def name(self) -> str:
        return f"/button{self.ident}_src"  # no name is a prefix of another


def _info(gid: bytes) -> dict:
    return {"publisher_gid": {"data": gid}}


class EStopReset(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.present: dict[int, Source] = {}
        self.next_ident = 1
        self.sources = self._filter()

    def _filter(self) -> EStopSources:
        return EStopSources(lambda: [Writer(s.name.lstrip("/"), "/", s.gid, s.durable)
                                     for s in self.present.values()])

    # -- the graph -----------------------------------------------------------------------
    @rule(durable=st.booleans())
    def source_joins(self, durable: bool) -> None:
        self.present[self.next_ident] = Source(self.next_ident, durable)
        self.next_ident += 1

    @precondition(lambda self: bool(self.present))
    @rule(data=st.data())
    def source_leaves(self, data: st.DataObject) -> None:
        del self.present[data.draw(st.sampled_from(sorted(self.present)))]

    @precondition(lambda self: bool(self.present))
    @rule(data=st.data(), pressed=st.booleans())
    def source_says(self, data: st.DataObject, pressed: bool) -> None:
        """A press or a release, sent; it reaches the filter later (:meth:`delivered`)."""
        source = self.present[data.draw(st.sampled_from(sorted(self.present)))]
        source.pressed = pressed
        source.in_flight.append(pressed)

    @precondition(lambda self: any(s.in_flight for s in self.present.values()))
    @rule(data=st.data())
    def delivered(self, data: st.DataObject) -> None:
        """One source's oldest message in flight arrives (per writer, DDS keeps the order)."""
        source = self.present[data.draw(st.sampled_from(sorted(i for i, s in self.present.items() if s.in_flight)))]
        said = source.in_flight.pop(0)
        self.sources.said(_info(source.gid), said)
        source.heard = said

    @rule()
    def filter_restarts(self) -> None:
        """A new filter process: nothing heard; a durable source's latest state is on its
        way again (transient-local), a volatile one's is gone."""
        self.sources = self._filter()
        for source in self.present.values():
            source.heard = None
            source.in_flight = [source.pressed] if source.durable and source.pressed is not None else []

    # -- the rule ------------------------------------------------------------------------
    @invariant()
    def a_pressed_durable_button_refuses_the_reset(self) -> None:
        down = [s.name for s in self.present.values() if s.durable and s.pressed and s.heard is None]
        if down:
            refusals = self.sources.refusals()
            assert refusals and all(any(n in r for r in refusals) for n in down), (down, refusals)

    @invariant()
    def the_latest_message_heard_decides(self) -> None:
        heard_down = [s.name for s in self.present.values() if s.heard]
        if heard_down:
            assert self.sources.refusals(), heard_down

    @invariant()
    def all_released_and_heard_is_granted(self) -> None:
        settled = all(not s.in_flight and s.heard is not None and not s.heard
                      for s in self.present.values() if s.durable or s.heard is not None)
        if settled and not any(s.heard for s in self.present.values()):
            assert self.sources.refusals() == [], self.sources.refusals()


EStopReset.TestCase.settings = settings(max_examples=200, stateful_step_count=30, deadline=None)
test_estop_reset_rule = EStopReset.TestCase
