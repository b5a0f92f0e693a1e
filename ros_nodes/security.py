"""SROS2 access control for a deployment graph, read off the running graph.

Command authority (:mod:`.command_gate`) keeps cooperating processes from commanding the
robot; it cannot stop a participant that forges a node name or a GID. DDS Security can:
with an SROS2 keystore, each node runs in an *enclave* whose signed permissions list the
topics it may publish and subscribe and the services it may offer and call, and the DDS
implementation refuses everything else. The permissions the graph needs are exactly its
endpoints, so they are read from the graph itself, never from a second list: the graph
runs for a moment and every node's publishers, subscriptions, services and clients are
taken from the ROS graph (:func:`graph_endpoints`); :func:`sros2_policy` writes them as
an SROS2 policy (format 0.2.0) with one enclave per node (``/sim2real/<node>``). In it
only the safety filter's enclave may publish ``command``, and only it offers
``safety_filter/reset``.
"""

from __future__ import annotations

import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from typing import Any

ENCLAVE_ROOT = "/sim2real"
IGNORED_TOPICS = frozenset({"/rosout", "/parameter_events"})
"""Every rclpy node publishes these; the policy allows them separately for every node."""


@dataclass
class Endpoints:
    """What one node uses of the graph (fully qualified names)."""

    publishes: set[str] = field(default_factory=set)
    subscribes: set[str] = field(default_factory=set)
    replies: set[str] = field(default_factory=set)
    requests: set[str] = field(default_factory=set)


def node_endpoints(probe: Any, name: str, namespace: str = "/") -> Endpoints:
    """``name``'s endpoints as ``probe`` (any rclpy node of the same domain) sees them
    (none while discovery has not delivered the node, or once it has forgotten it)."""
    from rclpy.node import NodeNameNonExistentError

    def names(pairs: list[tuple[str, list[str]]]) -> set[str]:
        return {topic for topic, _ in pairs}

    try:  # asked directly, not after a name check: discovery may change the graph in between
        return Endpoints(publishes=names(probe.get_publisher_names_and_types_by_node(name, namespace)),
                         subscribes=names(probe.get_subscriber_names_and_types_by_node(name, namespace)),
                         replies=names(probe.get_service_names_and_types_by_node(name, namespace)),
                         requests=names(probe.get_client_names_and_types_by_node(name, namespace)))
    except NodeNameNonExistentError:
        return Endpoints()


def graph_endpoints(probe: Any, nodes: list[str], settle: float = 2.0, timeout: float = 60.0,
                    stable: int = 3) -> dict[str, Endpoints]:
    """Every node's endpoints once discovery has delivered them all: the same answer
    ``stable`` times, ``settle`` seconds apart (call it once the nodes are active: a node
    creates some endpoints only when it configures); over 4 s because Fast DDS repairs a
    lost discovery announcement on its heartbeat, every 3 s by default. A name shown
    twice is never settled on: its endpoints would be either node's."""
    end = time.monotonic() + timeout
    seen: list[dict[str, Endpoints]] = []
    last: dict[str, Endpoints] | None = None
    twice: list[str] = []
    while time.monotonic() < end:
        # A name discovery shows twice (another graph on the domain; before ManagedNode
        # destroyed its state machine, the parameter check's never-configured
        # `safety_filter`, without a `command` publisher) is never settled on.
        names = [n for n, ns in probe.get_node_names_and_namespaces() if ns == "/"]
        twice = sorted({n for n in nodes if names.count(n) > 1})
        now = {n: node_endpoints(probe, n) for n in nodes}
        seen = [*seen, now] if seen and now == seen[-1] and not twice else [now]
        last = now
        if len(seen) >= stable and all(e.publishes or e.subscribes for e in now.values()):
            return now
        time.sleep(settle)
    if twice:
        raise TimeoutError(f"two nodes named {', '.join(twice)} in the domain for {timeout:.0f} s: their endpoints "
                           "cannot be told apart (another graph on this domain?)")
    missing = [n for n in nodes if last is None or not (last[n].publishes or last[n].subscribes)]
    raise TimeoutError(f"the graph did not settle within {timeout:.0f} s (no endpoints yet: {missing})")


OPERATOR = "operator"
"""The enclave of a person's tools (``ros2 service call``, ``ros2 param set``,
``ros2 lifecycle``): it may call every service of the graph's nodes (enable, e-stop,
reset, parameters within what each node accepts) and read ``diagnostics``, and it
publishes no motion command."""


def sros2_policy(endpoints: dict[str, Endpoints]) -> str:
    """An SROS2 policy (XML, version 0.2.0) allowing each node exactly its endpoints,
    plus the :data:`OPERATOR` enclave."""
    operator = Endpoints(subscribes={"/diagnostics"}, requests=set().union(*(e.replies for e in endpoints.values())))
    policy = ET.Element("policy", version="0.2.0")
    enclaves = ET.SubElement(policy, "enclaves")
    for node, e in sorted({**endpoints, OPERATOR: operator}.items()):
        enclave = ET.SubElement(enclaves, "enclave", path=f"{ENCLAVE_ROOT}/{node}")
        profile = ET.SubElement(ET.SubElement(enclave, "profiles"), "profile", ns="/", node=node)
        _rules(profile, "topics", "topic", "publish", sorted(e.publishes - IGNORED_TOPICS))
        _rules(profile, "topics", "topic", "subscribe", sorted(e.subscribes - IGNORED_TOPICS))
        _rules(profile, "topics", "topic", "publish", sorted(IGNORED_TOPICS))
        _rules(profile, "services", "service", "reply", sorted(e.replies))
        _rules(profile, "services", "service", "request", sorted(e.requests))
    ET.indent(policy)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(policy, encoding="unicode") + "\n"


def _rules(profile: ET.Element, group: str, item: str, verb: str, names: list[str]) -> None:
    if not names:
        return
    rules = ET.SubElement(profile, group, {verb: "ALLOW"})
    for name in names:
        ET.SubElement(rules, item).text = name


def allowed(policy_xml: str, verb: str, name: str) -> list[str]:
    """The nodes whose profile in ``policy_xml`` allows ``verb`` (``publish``, ``reply``...)
    on ``name``: how a reader (or a test) checks the policy says what it should."""
    root = ET.fromstring(policy_xml)
    return sorted(p.get("node", "") for p in root.iter("profile")
                  if any(r.get(verb) == "ALLOW" and any(t.text == name for t in r) for r in p))
