"""Issue 44: a node process spins in rclpy's EventsExecutor (``make_executor``), and every
kind of callback a node creates runs there as it does in the wait-set executor. Over
real DDS (loopback, private domain).

Kilted's EventsExecutor hands a message-info subscription its ``(msg, info)`` pair as
one argument and a timer its ``TimerInfo``: the guarded callbacks of ``ManagedNode``
raised ``TypeError`` on both, and the hardware bridge died at its first command."""

from __future__ import annotations

import time

import pytest
from ros_harness import Harness, wait_for

from sim2real.errors import ConfigError


@pytest.mark.parametrize("kind", ["events", "single"])
def test_subscriptions_with_message_info_timers_and_services_run_in_each_executor(kind: str) -> None:
    from std_msgs.msg import Float64MultiArray
    from std_srvs.srv import Trigger

    from sim2real.ros_nodes.base import ManagedNode, make_executor
    from sim2real.ros_nodes.qos import command_qos
    from sim2real.ros_nodes.settings import NodeSettings

    h = Harness()
    executor = make_executor(kind, h.context)
    node = None
    try:
        node = ManagedNode("spun", NodeSettings, context=h.context)
        seen: list[tuple[float, object]] = []
        ticks: list[float] = []
        node.create_subscription(Float64MultiArray, "command", lambda m, i: seen.append((m.data[0], i)),
                                 command_qos(), message_info=True)
        node.create_control_timer(0.01, lambda: ticks.append(time.monotonic()))

        def answer(_req: object, resp: object) -> object:
            resp.success, resp.message = True, "answered"  # type: ignore[attr-defined]
            return resp
        node.create_service(Trigger, "~/ask", answer)
        executor.add_node(node)
        peer = h.add(_plain_node(h.context))
        pub = peer.create_publisher(Float64MultiArray, "command", command_qos())
        client = peer.create_client(Trigger, "/spun/ask")
        assert wait_for(lambda: pub.get_subscription_count() > 0 and client.service_is_ready(), 10.0)
        pub.publish(Float64MultiArray(data=[7.0]))
        future = client.call_async(Trigger.Request())
        end = time.monotonic() + 5.0
        while time.monotonic() < end and not (seen and future.done() and len(ticks) >= 5):
            executor.spin_once(timeout_sec=0.05)
            h.executor.spin_once(timeout_sec=0.0)
        assert len(ticks) >= 5, "the control timer never ran"
        assert seen and seen[0][0] == 7.0 and seen[0][1]["publisher_gid"] is not None
        assert future.done() and future.result().success and future.result().message == "answered"
        assert node.callback_errors == 0
    finally:
        executor.shutdown()
        if node is not None:
            node.destroy_node()
        h.close()


def _plain_node(context: object) -> object:
    from rclpy.node import Node

    return Node("peer", context=context)


def test_an_unknown_executor_is_refused_in_one_line() -> None:
    from sim2real.ros_nodes.base import make_executor

    with pytest.raises(ConfigError, match="'eventz' is not one of events, single, multi"):
        make_executor("eventz")
