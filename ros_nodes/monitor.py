"""A plain listener for ``diagnostics``: keeps the latest key-values each node reported
and when (the deployment summary and its liveness watch in one-process-per-node runs,
and the tests' probe)."""

from __future__ import annotations

import time
from collections import deque
from typing import Any

from diagnostic_msgs.msg import DiagnosticArray
from rclpy.node import Node

from sim2real.ros_nodes import messages as M
from sim2real.ros_nodes.qos import status_qos


class Monitor(Node):
    def __init__(self, name: str = "deploy_monitor", **kwargs: Any) -> None:
        super().__init__(name, **kwargs)
        self.statuses: dict[str, dict[str, str]] = {}
        self.levels: dict[str, int] = {}
        self.messages: dict[str, str] = {}
        self.history: deque[tuple[str, int, str, dict[str, str]]] = deque(maxlen=10_000)
        self.last_seen: dict[str, float] = {}
        """``time.monotonic()`` of each node's latest report."""
        self.create_subscription(DiagnosticArray, "diagnostics", self._on_diag, status_qos())

    def _on_diag(self, msg: DiagnosticArray) -> None:
        for s in msg.status:
            name = M.status_node(s)
            values = {kv.key: kv.value for kv in s.values}
            level = int.from_bytes(s.level, "little") if isinstance(s.level, bytes) else int(s.level)
            self.statuses[name], self.levels[name], self.messages[name] = values, level, s.message
            self.history.append((name, level, s.message, values))
            self.last_seen[name] = time.monotonic()

    def all_reporting(self, nodes: list[str]) -> bool:
        """Every node of ``nodes`` has reported (each managed node reports at 1 Hz)."""
        return all(n in self.statuses for n in nodes)

    def silent(self, nodes: list[str], seconds: float) -> list[str]:
        """The nodes of ``nodes`` whose latest report is older than ``seconds`` (or missing)."""
        now = time.monotonic()
        return [n for n in nodes if now - self.last_seen.get(n, -1e18) > seconds]

    def reset_window(self) -> None:
        self.history.clear()

    def latest(self) -> dict[str, dict[str, str]]:
        return {k: dict(v) for k, v in self.statuses.items()}
