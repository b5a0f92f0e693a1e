"""Command authority: a robot driver obeys one safety filter's publisher, decided for
every message.

Every motion command source enters *before* the filter (its command mux); the driver
subscribes ``command`` alone. DDS lets any participant publish on any topic, so the
driver also checks who sent each message: rclpy hands the callback the message's
``MessageInfo``, whose ``publisher_gid`` names the one DDS writer that sent it.

* **Binding.** The driver *binds* to the writer of the configured filter node (by node
  name and namespace in the ROS graph) when it is enabled: at start for a simulated
  robot, at ``~/enable`` (or ``auto_enable``) for a real one. Exactly one such writer
  must exist; a writer whose node name is not discovered yet (``_NODE_NAME_UNKNOWN_``)
  is never bound and nothing is cached, so discovery order cannot lock the robot out:
  the next attempt reads the graph again.
* **Every message.** A message is obeyed only when its writer GID is the bound one.
  Any other writer's message is refused and counted, whoever it claims to be, whenever
  it was discovered; the bound filter's own commands keep flowing.
* **Loss.** When the bound writer leaves the graph (the filter exited, crashed or was
  restarted: a new process has a new GID), authority is *lost*: the robot holds, and
  only an operator's new enable, with a filter present again, binds anew. A filter that
  merely pauses keeps its GID and its authority.

This is authority among cooperating processes: a participant can forge a node name
and, without DDS Security, any GID. On a real robot, SROS2 access control makes the
filter's certificate the only one allowed to publish ``command`` (docs/deployment.md,
"Command authority").
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

UNKNOWN_NODE = "_NODE_NAME_UNKNOWN_"
"""The node name rmw reports for a writer whose participant's node list has not arrived."""


@dataclass(frozen=True)
class Writer:
    """One DDS writer on the topic, as the ROS graph reports it."""

    node: str
    namespace: str
    gid: bytes
    durable: bool = False
    """Transient-local: its latest message reaches a reader that joins later."""

    @property
    def qualified(self) -> str:
        return f"{self.namespace.rstrip('/')}/{self.node}"


LIVE_WINDOW = 0.5
"""s: a writer heard from within this is sending (the filter sends at its control rate)."""

GraphQuery = Callable[[], Sequence[Writer]]
"""The writers on the command topic now."""


def graph_query(node: Any, topic: str) -> GraphQuery:
    """The writers on ``topic`` from ``node``'s view of the ROS graph."""
    from rclpy.qos import DurabilityPolicy

    def query() -> list[Writer]:
        return [Writer(i.node_name, i.node_namespace, bytes(i.endpoint_gid),
                       i.qos_profile.durability == DurabilityPolicy.TRANSIENT_LOCAL)
                for i in node.get_publishers_info_by_topic(topic)]
    return query


def message_gid(info: Any) -> bytes | None:
    """The sending writer's GID from an rclpy ``MessageInfo`` (``None``: not given)."""
    try:
        gid = info["publisher_gid"]
        return bytes(gid["data"]) if gid is not None else None
    except (KeyError, TypeError, ValueError):
        return None


class CommandGate:
    """Who may command a driver (see the module docstring).

    Args:
        writers: The command topic's writers now (:func:`graph_query`).
        allowed: The filter node's name, in ``namespace``.
        namespace: The driver's namespace (the filter shares it).
        topic: The resolved topic name, for messages.
        graph_period: Seconds between two graph reads by :meth:`watch`.
    """

    def __init__(self, writers: GraphQuery, allowed: str, namespace: str, topic: str = "command",
                 graph_period: float = 0.1) -> None:
        self.writers, self.allowed, self.namespace, self.topic = writers, allowed, namespace, topic
        self.graph_period = graph_period
        self.bound: Writer | None = None
        """The filter writer the driver obeys (``None``: none: every command is refused)."""
        self.lost = ""
        """Why authority was lost (empty: it was not, or a new bind replaced it)."""
        self.foreign: list[str] = []
        """Qualified names of the other writers on the topic at the last graph read."""
        self.filter_missing = False
        """The last :meth:`bind` found no writer of the filter (it may not be discovered yet)."""
        self._next_watch = -1e18
        self._heard: dict[bytes, float] = {}
        """When each writer's latest message arrived (pruned to the graph's writers)."""

    @classmethod
    def for_node(cls, node: Any, topic: str = "command", allowed: str = "safety_filter") -> CommandGate:
        resolved = node.resolve_topic_name(topic)
        return cls(graph_query(node, resolved), allowed, node.get_namespace(), resolved)

    def _is_filter(self, w: Writer) -> bool:
        return w.node == self.allowed and w.namespace == self.namespace

    def bind(self, now: float) -> str:
        """Bind to the filter's writer now; ``""``, or why not (then nothing is bound).

        Several writers of the filter's name: a killed filter's writer stays in the graph
        until its DDS lease ends (20 s by default), beside the restarted filter's. The one
        heard from within :data:`LIVE_WINDOW` is bound; more than one heard is refused."""
        writers = list(self.writers())
        self.foreign = sorted({w.qualified for w in writers if not self._is_filter(w)})
        mine = [w for w in writers if self._is_filter(w)]
        self.bound = None
        self.filter_missing = not mine
        if len(mine) > 1:
            live = [w for w in mine if now - self._heard.get(w.gid, -1e18) <= LIVE_WINDOW]
            if len(live) != 1:
                return (f"{len(mine)} writers of {self.namespace.rstrip('/')}/{self.allowed} on {self.topic} and "
                        f"{len(live)} of them sending: either more than one safety filter of that name runs (stop "
                        "the others), or a killed filter's writer is still in the graph until its DDS lease ends "
                        "(enable again once the running filter sends)")
            mine = live
        if not mine:
            waiting = sum(w.node == UNKNOWN_NODE for w in writers)
            return (f"no {self.namespace.rstrip('/')}/{self.allowed} publishes {self.topic} yet"
                    + (f" ({waiting} writer(s) not yet identified by discovery)" if waiting else ""))
        self.bound, self.lost = mine[0], ""
        return ""

    def admit(self, info: Any, now: float) -> str:
        """``""`` when the message described by ``info`` (an rclpy ``MessageInfo``) comes
        from the bound filter, else why it is refused. ``now``: the driver's monotonic
        clock (which writers are sending, for :meth:`bind`)."""
        gid = message_gid(info)
        if gid is not None:
            self._heard[gid] = now
        return self._reason(gid)

    def _reason(self, gid: bytes | None) -> str:
        if gid is None:
            return f"refused a command on {self.topic} without its publisher's identity"
        bound = self.bound
        if bound is not None and gid == bound.gid:
            return ""
        if bound is None:
            return (f"refused a command on {self.topic}: no safety filter is bound"
                    + (f" ({self.lost})" if self.lost else "") + "; enable the robot once the filter runs")
        sender = next((w.qualified for w in self.writers() if w.gid == gid), "an unidentified writer")
        return (f"refused a command on {self.topic} from {sender}: only the bound safety filter "
                f"({bound.qualified}) commands the robot; command sources publish to the filter's inputs")

    def watch(self, now: float) -> str:
        """At most every ``graph_period`` seconds: read the graph, and unbind when the bound
        writer has left it. Returns why authority was lost *now* (``""``: it was not)."""
        if now < self._next_watch:
            return ""
        self._next_watch = now + self.graph_period
        writers = list(self.writers())
        present = {w.gid for w in writers}
        self._heard = {gid: t for gid, t in self._heard.items() if gid in present}
        bound = self.bound
        self.foreign = sorted({w.qualified for w in writers
                               if (w.gid != bound.gid if bound is not None else not self._is_filter(w))})
        if bound is None or any(w.gid == bound.gid for w in writers):
            return ""
        self.bound = None
        self.lost = f"the bound safety filter {bound.qualified} left the graph"
        return self.lost
