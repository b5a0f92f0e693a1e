"""Issue 42, defects 1 and 2: a stateful property test of command authority.

Hypothesis drives random histories of a ROS graph around one driver's
:class:`~sim2real.ros_nodes.command_gate.CommandGate`: safety filters starting in any
order, exiting cleanly or killed (a killed writer stays in the graph, silent, until its
DDS lease ends), foreign writers (a rogue node, an impostor named like the filter in
another namespace, a second filter of the same name), writers whose node name discovery
has not delivered yet, an operator's enable, the driver's graph watch, and messages
from any live writer.

The rule the model holds independently of the gate's code: a message is obeyed exactly
when its writer is the filter that, at the last successful enable, was the only
identifiable filter writer (or, beside killed ones still in the graph, the only one
sending) and has stayed in the graph since. So no foreign writer is ever
obeyed, a filter that left and came back is not obeyed before an operator's new
enable, and no discovery order locks the filter out once its name is known.
"""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from sim2real.ros_nodes.command_gate import LIVE_WINDOW, UNKNOWN_NODE, CommandGate, Writer

FILTER = "safety_filter"
KINDS = {"filter": (FILTER, "/"), "rogue": ("rogue", "/"), "impostor": (FILTER, "/elsewhere")}


@dataclass
class ModelWriter:
    ident: int
    node: str
    namespace: str
    discovered: bool
    """rmw knows its node name (else the graph reports ``_NODE_NAME_UNKNOWN_``)."""
    dead: bool = False
    """Killed: it sends nothing, but stays in the graph until its DDS lease ends."""
    last_sent: float = -1e18

    @property
    def gid(self) -> bytes:
        return self.ident.to_bytes(16, "big")

    def as_graph(self) -> Writer:
        return Writer(self.node if self.discovered else UNKNOWN_NODE, self.namespace, self.gid)


class Authority(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.present: dict[int, ModelWriter] = {}
        self.next_ident = 1
        self.now = 0.0
        self.authorized: int | None = None
        """The model's answer: the writer obeyed now."""
        self.gate = CommandGate(lambda: [w.as_graph() for w in self.present.values()], FILTER, "/",
                                graph_period=0.1)

    # -- the graph ---------------------------------------------------------------------
    @rule(kind=st.sampled_from(sorted(KINDS)), discovered=st.booleans())
    def writer_starts(self, kind: str, discovered: bool) -> None:
        node, namespace = KINDS[kind]
        self.present[self.next_ident] = ModelWriter(self.next_ident, node, namespace, discovered)
        self.next_ident += 1

    @precondition(lambda self: any(not w.discovered for w in self.present.values()))
    @rule(data=st.data())
    def name_discovered(self, data: st.DataObject) -> None:
        ident = data.draw(st.sampled_from(sorted(i for i, w in self.present.items() if not w.discovered)))
        self.present[ident].discovered = True

    @precondition(lambda self: bool(self.present))
    @rule(data=st.data())
    def writer_exits(self, data: st.DataObject) -> None:
        """A clean exit (or SIGTERM): the writer's entry leaves the graph at once."""
        ident = data.draw(st.sampled_from(sorted(self.present)))
        del self.present[ident]
        if ident == self.authorized:
            self.authorized = None

    @precondition(lambda self: any(not w.dead for w in self.present.values()))
    @rule(data=st.data())
    def writer_killed(self, data: st.DataObject) -> None:
        """SIGKILL: the writer sends nothing more but stays in the graph until its lease ends."""
        ident = data.draw(st.sampled_from(sorted(i for i, w in self.present.items() if not w.dead)))
        self.present[ident].dead = True

    @precondition(lambda self: any(w.dead for w in self.present.values()))
    @rule(data=st.data())
    def lease_expires(self, data: st.DataObject) -> None:
        ident = data.draw(st.sampled_from(sorted(i for i, w in self.present.items() if w.dead)))
        del self.present[ident]
        if ident == self.authorized:
            self.authorized = None

    # -- the driver ----------------------------------------------------------------------
    @rule()
    def operator_enables(self) -> None:
        identifiable = [w for w in self.present.values() if w.discovered and (w.node, w.namespace) == (FILTER, "/")]
        if len(identifiable) > 1:  # a killed filter's writer beside a running one: the one sending
            identifiable = [w for w in identifiable if self.now - w.last_sent <= LIVE_WINDOW]
        reason = self.gate.bind(self.now)
        self.authorized = identifiable[0].ident if len(identifiable) == 1 else None
        assert (reason == "") == (self.authorized is not None), reason

    @rule(dt=st.floats(min_value=0.0, max_value=0.5))
    def driver_ticks(self, dt: float) -> None:
        self.now += dt
        self.gate.watch(self.now)

    @precondition(lambda self: any(not w.dead for w in self.present.values()))
    @rule(data=st.data())
    def message_arrives(self, data: st.DataObject) -> None:
        writer = self.present[data.draw(st.sampled_from(sorted(i for i, w in self.present.items() if not w.dead)))]
        writer.last_sent = self.now
        refused = self.gate.admit({"publisher_gid": {"implementation_identifier": "rmw", "data": writer.gid}},
                                  self.now)
        assert (refused == "") == (writer.ident == self.authorized), (writer, self.authorized, refused)

    @rule()
    def message_without_identity(self) -> None:
        assert self.gate.admit({"publisher_gid": None}, self.now) != ""

    @invariant()
    def bound_writer_is_present_or_about_to_be_noticed(self) -> None:
        bound = self.gate.bound
        if bound is not None and self.authorized is not None:
            assert bound.gid == self.present[self.authorized].gid


TestAuthority = Authority.TestCase
TestAuthority.settings = settings(max_examples=300, stateful_step_count=40, deadline=None)


def test_a_message_without_a_bound_filter_or_a_gid_is_refused_with_the_reason() -> None:
    gate = CommandGate(lambda: [], FILTER, "/")
    assert "no safety filter is bound" in gate.admit({"publisher_gid": {"data": b"x" * 16}}, 0.0)
    assert "without its publisher's identity" in gate.admit({}, 0.0)
    assert "no /safety_filter publishes" in gate.bind(0.0)
