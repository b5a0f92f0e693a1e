"""Shared node machinery: lifecycle nodes that can start themselves, parameters
declared from plain dicts or dataclasses, throttled logging and a main() helper.

Lifecycle (managed) nodes: ``configure`` loads (models, policies, parameters),
``activate`` starts commanding, ``deactivate`` stops publishing, ``cleanup`` unloads.
With ``autostart: true`` (the default in config/*.yaml) a node configures and
activates itself, so ``ros2 launch`` needs no lifecycle manager; a manager (or
``ros2 lifecycle set``) can still drive it with ``autostart: false``.
"""

from __future__ import annotations

import dataclasses
import sys
import time
from collections.abc import Callable
from typing import Any

import rclpy
from rclpy.lifecycle import LifecycleNode, LifecycleState, TransitionCallbackReturn

Params = dict[str, Any]


class ManagedNode(LifecycleNode):
    """A lifecycle node with declared-parameter helpers and an ``active`` flag."""

    def __init__(self, name: str, defaults: Params, **kwargs: Any) -> None:
        super().__init__(name, **kwargs)
        self.active = False
        self.declare_parameter("autostart", True)
        for key, value in defaults.items():
            self.declare_parameter(key, value)
        self._throttle: dict[str, float] = {}

    def param(self, name: str) -> Any:
        return self.get_parameter(name).value

    def params(self, names: list[str]) -> Params:
        return {n: self.param(n) for n in names}

    def now_s(self) -> float:
        """The node clock in seconds (sim time when ``use_sim_time`` is set)."""
        return self.get_clock().now().nanoseconds * 1e-9

    def log_throttled(self, key: str, message: str, period: float = 1.0, level: str = "warning") -> None:
        """Log ``message`` at most once per ``period`` seconds per ``key`` (first one always)."""
        t = time.monotonic()
        if t - self._throttle.get(key, -1e9) >= period:
            self._throttle[key] = t
            getattr(self.get_logger(), level)(message)

    def publish_status(self, level: int, message: str, values: dict[str, Any]) -> None:
        """One DiagnosticStatus named after this node on ``diagnostics``."""
        from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue

        if not hasattr(self, "_pub_diag"):
            from sim2real.ros_nodes.qos import status_qos

            self._pub_diag = self.create_publisher(DiagnosticArray, "diagnostics", status_qos())
        # `level` is a byte field: rclpy accepts an int here but it does not survive
        # serialization (2 arrived as 237 over DDS), so send the byte itself.
        status = DiagnosticStatus(level=bytes([level]), name=self.get_name(), message=message, hardware_id="sim2real")
        status.values = [KeyValue(key=k, value=str(v)) for k, v in values.items()]
        msg = DiagnosticArray(status=[status])
        msg.header.stamp = self.get_clock().now().to_msg()
        self._pub_diag.publish(msg)

    def autostart(self) -> None:
        """Configure and activate now when the ``autostart`` parameter is true."""
        if self.param("autostart"):
            self.trigger_configure()
            self.trigger_activate()

    # Subclasses implement load()/unload() and start()/stop(); failures abort the transition.
    def load(self) -> None: ...
    def unload(self) -> None: ...
    def start(self) -> None: ...
    def stop(self) -> None: ...

    def on_configure(self, state: LifecycleState) -> TransitionCallbackReturn:
        try:
            self.load()
        except Exception as exc:  # a bad policy file or parameter must not kill the process
            self.get_logger().error(f"configure failed: {exc}")
            return TransitionCallbackReturn.FAILURE
        return TransitionCallbackReturn.SUCCESS

    def on_activate(self, state: LifecycleState) -> TransitionCallbackReturn:
        self.start()
        self.active = True
        return TransitionCallbackReturn.SUCCESS

    def on_deactivate(self, state: LifecycleState) -> TransitionCallbackReturn:
        self.active = False
        self.stop()
        return TransitionCallbackReturn.SUCCESS

    def on_cleanup(self, state: LifecycleState) -> TransitionCallbackReturn:
        self.unload()
        return TransitionCallbackReturn.SUCCESS

    def on_shutdown(self, state: LifecycleState) -> TransitionCallbackReturn:
        self.active = False
        return TransitionCallbackReturn.SUCCESS


def percentiles_ms(seconds: Any, deadline: float = 0.0) -> dict[str, float]:
    """p50/p99/max in milliseconds (NaN when empty); with ``deadline`` (s) also the
    number of samples above it."""
    import numpy as np

    a = np.asarray(list(seconds), dtype=np.float64) * 1e3
    out: dict[str, float] = {"p50_ms": float("nan"), "p99_ms": float("nan"), "max_ms": float("nan"), "n": len(a)}
    if len(a):
        out.update(p50_ms=round(float(np.percentile(a, 50)), 4), p99_ms=round(float(np.percentile(a, 99)), 4),
                   max_ms=round(float(a.max()), 4))
    if deadline > 0:
        out["over_deadline"] = int(np.sum(a > deadline * 1e3))
    return out


def dataclass_defaults(obj: Any) -> Params:
    """Field values of a dataclass instance as ROS parameter defaults (tuples -> lists)."""
    out = {}
    for f in dataclasses.fields(obj):
        value = getattr(obj, f.name)
        out[f.name] = list(value) if isinstance(value, tuple) else value
    return out


def run_node(factory: Callable[[], ManagedNode], args: list[str] | None = None) -> int:
    """Spin one node until shutdown (the body of each node module's ``main``)."""
    rclpy.init(args=args if args is not None else sys.argv)
    node = factory()
    node.autostart()
    try:
        rclpy.spin(node)
    except (KeyboardInterrupt, rclpy.executors.ExternalShutdownException):
        pass
    finally:
        node.destroy_node()
        if rclpy.ok():
            rclpy.shutdown()
    return 0
