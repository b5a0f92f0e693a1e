"""The e-stop input's sources: each writer of ``estop`` and the state it last said.

A source publishes ``estop`` (std_msgs/Bool) transient-local (:func:`~.qos.estop_qos`),
so its latest state is durable on the wire: a safety filter that restarts while a
button is pressed learns it at once. The sources are told apart by their DDS writer
GID (the message's ``MessageInfo``), so one source's ``false`` never hides another's
``true``; a writer that left the graph asserts nothing any more (the latch it caused
stays until the operator's reset).

A durable writer whose state has not been heard yet counts as pressed for the reset:
its sample may still be on its way to a filter that just restarted (discovery on a
loaded computer took over 5 s in a CI run), and a reset granted in that window would
clear an e-stop whose button is still down. So a durable source publishes its state
when it starts (``false``: released) and at every change; one that never does keeps
the reset refused, by name. A volatile writer's state cannot outlive its message, so
only what it said counts.
"""

from __future__ import annotations

from typing import Any

from sim2real.ros_nodes.command_gate import GraphQuery, message_gid

UNIDENTIFIED = b"unidentified"
"""The key of a message without its writer's GID (kept until a reset sees it released)."""


class EStopSources:
    """Args:
        writers: The ``estop`` topic's writers now (:func:`~.command_gate.graph_query`)."""

    def __init__(self, writers: GraphQuery) -> None:
        self.writers = writers
        self.states: dict[bytes, bool] = {}
        """Each writer's latest state (``True``: its button is still pressed)."""

    def said(self, info: Any, pressed: bool) -> str:
        """Record one message; returns the source's name when it has just been pressed."""
        source = message_gid(info) or UNIDENTIFIED
        newly = pressed and not self.states.get(source, False)
        self.states[source] = pressed
        return self.name(source) if newly else ""

    def name(self, gid: bytes) -> str:
        return next((w.qualified for w in self.writers() if w.gid == gid), "an unidentified estop writer")

    def asserted(self) -> list[str]:
        """The sources that still press the e-stop (writers gone from the graph dropped)."""
        present = {w.gid for w in self.writers()}
        self.states = {g: v for g, v in self.states.items() if g in present or g == UNIDENTIFIED}
        return [self.name(g) for g, pressed in self.states.items() if pressed]

    def unheard(self) -> list[str]:
        """The durable writers present whose state has not reached this filter yet."""
        return [w.qualified for w in self.writers() if w.durable and w.gid not in self.states]

    def refusals(self) -> list[str]:
        """Why the e-stop may not be reset now, one entry per source (empty: it may)."""
        asserted, unheard = self.asserted(), self.unheard()
        return ([f"still pressed on {', '.join(asserted)}"] if asserted else []) + \
            ([f"no state heard yet from {', '.join(unheard)}"] if unheard else [])
