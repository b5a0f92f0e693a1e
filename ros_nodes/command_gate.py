"""A robot driver obeys the safety filter's ``command`` and nothing else.

Every motion command source enters *before* the filter (its command mux); the driver
subscribes ``command`` alone. DDS lets any participant publish on any topic, so the
driver also checks who publishes there: while a publisher other than the configured
safety filter node is matched on ``command``, it refuses every command (the robot
holds) and says which node it is. The graph check runs when the publisher count
changes, so it costs one count per message. This stops mistakes (a teleop node
remapped onto ``command``, a second filter, a test tool) and naive intruders; names
can be forged, so real robots add SROS2 access control (docs/deployment.md).
"""

from __future__ import annotations

from typing import Any


class CommandGate:
    """Who may publish a node's motion commands.

    Args:
        node: The driver node (subscribes ``topic``).
        topic: The command topic as the node resolves it.
        allowed: The one node name (in the driver's namespace) that may publish there.
    """

    def __init__(self, node: Any, topic: str = "command", allowed: str = "safety_filter") -> None:
        self.node = node
        self.topic = node.resolve_topic_name(topic)
        self.allowed = allowed
        self.namespace = node.get_namespace()
        self._count = -1
        self.foreign: list[str] = []
        """Fully qualified names of the other publishers on the topic."""

    def check(self) -> str:
        """``""`` when every publisher on the topic is the allowed node, else why not."""
        count = self.node.count_publishers(self.topic)
        if count != self._count:
            self._count = count
            infos = self.node.get_publishers_info_by_topic(self.topic)
            self.foreign = sorted({f"{i.node_namespace.rstrip('/')}/{i.node_name}" for i in infos
                                   if not (i.node_name == self.allowed and i.node_namespace == self.namespace)})
        if self.foreign:
            return (f"refusing every command: {self.topic} has publishers other than the safety filter "
                    f"({', '.join(self.foreign)}); command sources must publish to the filter's inputs")
        return ""
