"""ROS 2 parameter files read as rcl reads them, for a graph whose nodes are known.

The values come from rcl itself (``rcl_yaml_param_parser``, what ``--params-file`` and
``ros2 launch`` use): each node of the graph is created for an instant in a private
context and asked what it would receive. What rcl does not offer (which *section* of
the file a node's value came from, whether a section reaches any node at all) follows
rcl's own rules here, pinned against rclpy by ``tests/ros_nodes/test_params_file.py``:

* A section's node name is its keys down to ``ros__parameters`` joined with ``/``
  (``robot1: {safety_filter: {ros__parameters: ..}}`` is ``robot1/safety_filter``),
  absolute whether or not it starts with ``/``.
* It applies to a node when it matches the node's fully qualified name with ``/*``
  standing for one name and ``/**`` for any number (rclpy's and rclcpp's regular
  expression): ``/**`` reaches every node, ``/**/safety_filter`` a ``safety_filter`` in
  any namespace, ``/robot1/safety_filter`` only the one in ``/robot1``.
* Nested mappings under ``ros__parameters`` are dotted parameter names; later sections
  win over earlier ones.

A section that reaches no node of the graph is refused: rcl would ignore it, and a
misspelt node name or a namespace the graph does not run in would leave every limit in
it at its default while the operator believes it set.
"""

from __future__ import annotations

import contextlib
import os
import re
import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sim2real.errors import ConfigError

PARAMS_KEY = "ros__parameters"
DISCOVERY_RANGE = "ROS_AUTOMATIC_DISCOVERY_RANGE"


@dataclass(frozen=True)
class Section:
    """One node section of a parameter file."""

    name: str
    """The node name rcl gives it, absolute (``/**``, ``/robot1/safety_filter``)."""
    keys: frozenset[str]
    """Its parameter names (nested mappings dotted)."""

    def applies_to(self, fqn: str) -> bool:
        """Whether rcl gives this section's values to the node named ``fqn``."""
        return re.fullmatch(self.name.replace("/*", r"(/\w+)"), fqn) is not None

    def own(self, node: str) -> bool:
        """The section names this node itself, not only a wildcard that reaches it."""
        return self.name.rsplit("/", 1)[-1] == node


def fully_qualified(node: str, namespace: str = "/") -> str:
    return f"{namespace.rstrip('/')}/{node}"


def read_sections(path: str | Path) -> list[Section]:
    """The file's node sections in file order.

    Raises:
        ConfigError: the file is missing, not YAML, or not node names mapped to
            ``ros__parameters`` (naming the file).
    """
    from sim2real.sim.core.schema import read_yaml

    data = read_yaml(path, "a ROS parameter file: node names mapped to ros__parameters")
    out: list[Section] = []

    def walk(mapping: dict[Any, Any], names: list[str]) -> None:
        for key, value in mapping.items():
            key = str(key)
            if key.startswith(PARAMS_KEY) and names:  # rcl compares the prefix
                name = "/".join(names)
                out.append(Section(name if name.startswith("/") else "/" + name,
                                   frozenset(_parameter_names(value))))
            elif isinstance(value, dict):
                walk(value, [*names, key])
            else:
                raise ConfigError("config", f"{'/'.join([*names, key])}: expected a node name mapped to "
                                            f"{PARAMS_KEY}, got a value", source=str(path))

    walk(data, [])
    return out


def _parameter_names(values: Any, prefix: str = "") -> list[str]:
    if not isinstance(values, dict):
        return []
    names: list[str] = []
    for key, value in values.items():
        names += _parameter_names(value, f"{prefix}{key}.") if isinstance(value, dict) else [f"{prefix}{key}"]
    return names


def load_params_file(path: str | Path, nodes: Iterable[str], namespace: str = "/",
                     domain_id: int | None = None) -> dict[str, dict[str, Any]]:
    """``{node: {parameter: value}}`` for each of ``nodes`` (in ``namespace``) as rcl
    resolves the file for it. ``domain_id``: the private context's DDS domain (default:
    ``ROS_DOMAIN_ID``); keep discovery on loopback.

    Raises:
        ConfigError: naming the file: a malformed file (rcl's own reason), or a section
            that reaches none of ``nodes``.
    """
    import rclpy
    from rclpy.context import Context

    p, names = Path(path), list(nodes)
    fqns = [fully_qualified(n, namespace) for n in names]
    for section in read_sections(p):
        if not any(section.applies_to(f) for f in fqns):
            raise ConfigError("config", f"section {section.name} reaches no node of the graph (rcl would ignore "
                                        f"it); the graph's nodes: {', '.join(fqns)}", source=str(p))
    context = Context()
    domain = domain_id if domain_id is not None else int(os.environ.get("ROS_DOMAIN_ID", "0") or 0)
    # The nodes asked here must never be seen: with discovery on, a running graph (or the
    # one about to start) saw a second `safety_filter` with no endpoints appear in its
    # domain (`sim2real security policy` then read no publisher of `command`). rcl reads
    # the discovery range from the environment when the context starts.
    with discovery_off():
        try:
            rclpy.init(context=context, domain_id=domain, args=["sim2real", "--ros-args", "--params-file", str(p)])
        except Exception as exc:  # rcl's parse error (RCLError), one line
            raise ConfigError("config", " ".join(str(exc).split()), source=str(p)) from None
    out: dict[str, dict[str, Any]] = {}
    try:
        for name in names:
            node = rclpy.create_node(name, namespace=namespace, context=context, start_parameter_services=False,
                                     enable_rosout=False)
            # The overrides rcl resolved for this node; rclpy has no public accessor
            # (tests/ros_nodes/test_parameters.py pins it).
            values = {k: v.value for k, v in node._parameter_overrides.items()}
            node.destroy_node()
            if values:
                out[name] = values
    finally:
        rclpy.shutdown(context=context)
    return out


_env_lock = threading.Lock()


@contextlib.contextmanager
def discovery_off() -> Iterator[None]:
    """``ROS_AUTOMATIC_DISCOVERY_RANGE=OFF`` while a context starts: its participant finds
    no one and no one finds it."""
    with _env_lock:
        before = os.environ.get(DISCOVERY_RANGE)
        os.environ[DISCOVERY_RANGE] = "OFF"
        try:
            yield
        finally:
            if before is None:
                os.environ.pop(DISCOVERY_RANGE, None)
            else:
                os.environ[DISCOVERY_RANGE] = before


def origin(path: str | Path, node: str, parameter: str, namespace: str = "/") -> str:
    """Where ``node``'s value of ``parameter`` comes from: ``FILE, section NAME`` (the
    last section that reaches the node and sets it), or empty when the file does not."""
    fqn = fully_qualified(node, namespace)
    found = [s for s in read_sections(path) if s.applies_to(fqn) and parameter in s.keys]
    return f"{path}, section {found[-1].name}" if found else ""
