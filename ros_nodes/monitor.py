"""A plain listener for ``diagnostics``: keeps the latest key-values each node reported
(the deployment summary in one-process-per-node runs, and the tests' probe)."""

from __future__ import annotations

from collections import deque
from typing import Any

from diagnostic_msgs.msg import DiagnosticArray
from rclpy.node import Node

from sim2real.ros_nodes.qos import status_qos


class Monitor(Node):
    def __init__(self, name: str = "deploy_monitor", **kwargs: Any) -> None:
        super().__init__(name, **kwargs)
        self.statuses: dict[str, dict[str, str]] = {}
        self.levels: dict[str, int] = {}
        self.messages: dict[str, str] = {}
        self.history: deque[tuple[str, int, str, dict[str, str]]] = deque(maxlen=10_000)
        self.create_subscription(DiagnosticArray, "diagnostics", self._on_diag, status_qos())

    def _on_diag(self, msg: DiagnosticArray) -> None:
        for s in msg.status:
            name = s.name.split(":")[0]
            values = {kv.key: kv.value for kv in s.values}
            level = int.from_bytes(s.level, "little") if isinstance(s.level, bytes) else int(s.level)
            self.statuses[name], self.levels[name], self.messages[name] = values, level, s.message
            self.history.append((name, level, s.message, values))

    def all_reporting(self, nodes: list[str]) -> bool:
        return all(n in self.statuses for n in nodes if n != "recorder")

    def reset_window(self) -> None:
        self.history.clear()

    def latest(self) -> dict[str, dict[str, str]]:
        return {k: dict(v) for k, v in self.statuses.items()}
