"""Issue 16's node-level defects over real DDS (loopback, private domain), one regression
test each: no command path around the filter, latches that no lifecycle transition,
restart or file corruption clears, a reset refused while its cause is present, a node
that cannot load its policy exits non-zero with one line, callbacks that cannot kill
the executor."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from ros_harness import Harness, make_probe, safety_node, unique_domain_id, wait_for

from sim2real.ros_nodes.graph import InProcessGraph


def _ee(graph: InProcessGraph) -> np.ndarray:
    return graph.nodes["sim_bridge"].robot.measure().ee_pos.copy()


def _stream(node, publisher, msg, seconds: float, rate: float = 50.0) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        publisher.publish(msg)
        time.sleep(1.0 / rate)


def test_a_twist_during_an_estop_does_not_move_the_arm(arm_graph) -> None:
    """Today the bridge applies command_twist itself: 0.3 m/s moved the arm 0.45 m while the
    filter held it. Now the twist enters the filter, which drops it during the e-stop."""
    from geometry_msgs.msg import Twist
    from rclpy.node import Node

    from sim2real.ros_nodes.qos import command_qos

    safety = arm_graph.nodes["safety_filter"]
    assert wait_for(lambda: safety.last_output is not None, 10.0)
    safety.trip("test")
    teleop = Node("joystick", context=arm_graph.context)
    arm_graph.add_node(teleop)
    pub = teleop.create_publisher(Twist, "command_twist", command_qos())
    start = _ee(arm_graph)
    msg = Twist()
    msg.linear.x = 0.3
    _stream(teleop, pub, msg, 1.5)
    assert np.linalg.norm(_ee(arm_graph) - start) < 0.01
    assert safety.chain.mux.counts["twist_rejected"] > 0 and safety.chain.dropped_during_estop > 0


def test_a_twist_is_filtered_like_the_policys_commands(arm_graph) -> None:
    from geometry_msgs.msg import Twist
    from rclpy.node import Node

    from sim2real.ros_nodes.qos import command_qos

    safety = arm_graph.nodes["safety_filter"]
    assert wait_for(lambda: safety.last_output is not None, 10.0)
    teleop = Node("joystick", context=arm_graph.context)
    arm_graph.add_node(teleop)
    pub = teleop.create_publisher(Twist, "command_twist", command_qos())
    msg = Twist()
    msg.linear.y = 5.0  # far above the 0.8 m/s limit
    _stream(teleop, pub, msg, 1.0)
    out = safety.last_output
    assert out.mode == "nominal" and out.command[1] == pytest.approx(0.8) and "velocity_limit" in out.acted_names()
    assert safety.chain.mux.active_name == "twist" and safety.chain.mux.counts["twist_accepted"] > 10


def test_the_bridge_refuses_commands_while_another_node_publishes_on_command(arm_graph) -> None:
    from rclpy.node import Node
    from std_msgs.msg import Float64MultiArray

    from sim2real.ros_nodes import messages as M
    from sim2real.ros_nodes.qos import command_qos

    bridge = arm_graph.nodes["sim_bridge"]
    assert wait_for(lambda: bridge.commands_received > 5, 10.0)
    rogue = Node("rogue", context=arm_graph.context)
    arm_graph.add_node(rogue)
    pub = rogue.create_publisher(Float64MultiArray, "command", command_qos(0.2))
    start = _ee(arm_graph)
    _stream(rogue, pub, M.command_array(np.r_[0.3, np.zeros(5), 0.04]), 1.5)
    assert bridge.commands_refused > 10 and bridge.gate.foreign == ["/rogue"]
    assert np.linalg.norm(_ee(arm_graph) - start) < 0.01
    rogue.destroy_publisher(pub)  # gone: the safety filter's commands count again
    received = bridge.commands_received
    assert wait_for(lambda: bridge.commands_received > received + 5, 5.0)


def _lifecycle(node, *transitions: str) -> None:
    for t in transitions:
        getattr(node, f"trigger_{t}")()


def test_a_lifecycle_reconfigure_keeps_the_estop(tmp_path: Path) -> None:
    h = Harness()
    try:
        node = h.add(safety_node(h.context, "drone", latch_file=str(tmp_path / "latch.json")))
        node.trip("operator")
        _lifecycle(node, "deactivate", "cleanup", "configure", "activate")
        assert node.chain.estop.tripped and "operator" in node.chain.estop.latched_reason
        node.chain.accept([0.3, 0, 0, 0], node.now_s())
        assert node.chain.offer("policy", [0.3, 0, 0, 0], node.now_s()).startswith("e-stop")
    finally:
        h.close()


def test_a_latch_survives_a_restart_and_only_a_permitted_reset_clears_it(tmp_path: Path) -> None:
    from std_msgs.msg import Bool
    from std_srvs.srv import Trigger

    latch = tmp_path / "latch.json"
    h = Harness()
    try:
        first = h.add(safety_node(h.context, "arm", latch_file=str(latch)))
        probe = h.add(make_probe(h.context, "arm"))
        h.spin()
        probe.pub_estop.publish(Bool(data=True))  # the button, held down
        assert wait_for(lambda: first.chain.estop.tripped and latch.exists(), 5.0)
        assert json.loads(latch.read_text())["latched"] == ["estop: estop pressed on /probe"]
        h.executor.remove_node(first)
        h.nodes.remove(first)
        first.destroy_node()  # the process "crashes"; a new node starts on the same robot
        second = h.add(safety_node(h.context, "arm", latch_file=str(latch)))
        assert second.chain.estop.tripped
        reset = probe.create_client(Trigger, "/safety_filter/reset")
        assert reset.wait_for_service(timeout_sec=5.0)

        def call() -> Trigger.Response:
            future = reset.call_async(Trigger.Request())
            assert wait_for(future.done, 5.0)
            return future.result()

        probe.pub_estop.publish(Bool(data=True))  # a volatile source says it again
        assert wait_for(lambda: bool(second.estop_sources.asserted()), 5.0)
        answer = call()
        assert not answer.success and "still pressed on /probe" in answer.message and second.chain.estop.tripped
        probe.pub_estop.publish(Bool(data=False))  # released
        assert wait_for(lambda: not second.estop_sources.asserted(), 5.0)
        answer = call()
        assert answer.success and not second.chain.estop.tripped and not latch.exists()
    finally:
        h.close()


def test_a_restarted_filter_knows_the_button_is_still_pressed(tmp_path: Path) -> None:
    """Issue 42, defect 5: the button's state is durable on the wire. Pressed once before
    the filter restarts and never said again, it still refuses the reset; of two
    sources, one still pressing refuses it too."""
    from rclpy.node import Node
    from std_msgs.msg import Bool
    from std_srvs.srv import Trigger

    from sim2real.ros_nodes.qos import estop_qos

    latch = tmp_path / "latch.json"
    h = Harness()
    try:
        first = h.add(safety_node(h.context, "arm", latch_file=str(latch)))
        button = h.add(Node("estop_button", context=h.context)).create_publisher(Bool, "estop", estop_qos())
        pendant = h.add(Node("teach_pendant", context=h.context)).create_publisher(Bool, "estop", estop_qos())
        h.spin()
        assert wait_for(lambda: button.get_subscription_count() > 0, 5.0)
        button.publish(Bool(data=True))  # pressed, once
        pendant.publish(Bool(data=False))
        assert wait_for(lambda: first.chain.estop.tripped, 5.0)
        h.executor.remove_node(first)
        h.nodes.remove(first)
        first.destroy_node()
        second = h.add(safety_node(h.context, "arm", latch_file=str(latch)))
        caller = h.add(Node("operator", context=h.context))
        reset = caller.create_client(Trigger, "/safety_filter/reset")
        assert reset.wait_for_service(timeout_sec=5.0)

        def call() -> Trigger.Response:
            future = reset.call_async(Trigger.Request())
            assert wait_for(future.done, 5.0)
            return future.result()

        # Before the sources' durable states arrive (on a loaded computer that took over
        # 5 s once), the reset is refused already: the buttons are present, unheard.
        early = call()
        assert not early.success and ("no state heard yet" in early.message or "still pressed" in early.message)
        assert wait_for(lambda: len(second.estop_sources.states) == 2, 30.0), second.estop_sources.states
        answer = call()
        assert not answer.success and "still pressed on /estop_button" in answer.message, answer.message
        assert second.chain.estop.tripped
        button.publish(Bool(data=False))
        pendant.publish(Bool(data=True))  # the other source presses: still refused
        assert wait_for(lambda: second.estop_sources.asserted() == ["/teach_pendant"], 5.0)
        assert not call().success
        pendant.publish(Bool(data=False))
        assert wait_for(lambda: not second.estop_sources.asserted(), 5.0)
        assert call().success and not second.chain.estop.tripped
    finally:
        h.close()


def test_a_durable_source_not_heard_yet_refuses_the_reset(tmp_path: Path) -> None:
    """A durable e-stop writer whose state has not reached the filter (in flight, or a
    source that never said it) counts as pressed for the reset, by name; once it says
    ``false`` the reset goes through."""
    from rclpy.node import Node
    from std_msgs.msg import Bool
    from std_srvs.srv import Trigger

    from sim2real.ros_nodes.qos import estop_qos

    h = Harness()
    try:
        node = h.add(safety_node(h.context, "arm", latch_file=str(tmp_path / "latch.json")))
        caller = h.add(Node("operator", context=h.context))
        button = caller.create_publisher(Bool, "estop", estop_qos())  # present, silent
        reset = caller.create_client(Trigger, "/safety_filter/reset")
        trip = caller.create_client(Trigger, "/safety_filter/trip_estop")
        h.spin()
        assert reset.wait_for_service(timeout_sec=10.0) and trip.wait_for_service(timeout_sec=10.0)
        assert wait_for(lambda: node.estop_sources.unheard() == ["/operator"], 30.0), node.estop_sources.unheard()

        def call(client: Any = reset) -> Trigger.Response:
            future = client.call_async(Trigger.Request())
            assert wait_for(future.done, 5.0)
            return future.result()

        assert call(trip).success
        answer = call()
        assert not answer.success and "no state heard yet from /operator" in answer.message, answer.message
        assert node.chain.estop.tripped
        button.publish(Bool(data=False))  # the source says it is released
        assert wait_for(lambda: not node.estop_sources.refusals(), 30.0)
        assert call().success and not node.chain.estop.tripped
    finally:
        h.close()


@pytest.mark.parametrize("content", ["{not json", '{"latched": "estop"}', ""])
def test_an_unreadable_latch_file_starts_latched(tmp_path: Path, content: str) -> None:
    latch = tmp_path / "latch.json"
    latch.write_text(content)
    h = Harness()
    try:
        node = h.add(safety_node(h.context, "quadruped", latch_file=str(latch)))
        assert node.chain.estop.tripped and "unreadable" in node.chain.estop.latched_reason
    finally:
        h.close()


def _node_env() -> dict[str, str]:
    return {**os.environ, "ROS_DOMAIN_ID": str(unique_domain_id()), "ROS_AUTOMATIC_DISCOVERY_RANGE": "LOCALHOST"}


def test_a_policy_node_that_cannot_load_its_policy_exits_non_zero_with_one_line() -> None:
    proc = subprocess.run([sys.executable, "-m", "sim2real.ros_nodes.policy", "--ros-args", "-p", "robot:=arm",
                           "-p", "policy:=/nonexistent.onnx"], env=_node_env(), capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode != 0
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("policy: cannot start: /nonexistent.onnx does not exist"), proc.stderr


def test_deploy_with_a_missing_policy_is_one_error_line() -> None:
    proc = subprocess.run([sys.executable, "-m", "sim2real.cli", "deploy", "--robot", "arm", "--policy",
                           "/missing/policy.onnx", "--duration", "1"], env=_node_env(), capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines() == [
        "sim2real deploy: error: /missing/policy.onnx does not exist (export a run with `sim2real export RUN`)"]


def test_a_callback_that_raises_does_not_stop_the_executor() -> None:
    from std_msgs.msg import Bool

    from sim2real.ros_nodes.base import ManagedNode
    from sim2real.ros_nodes.qos import status_qos
    from sim2real.ros_nodes.settings import NodeSettings

    class Fragile(ManagedNode):
        def __init__(self, **kw) -> None:
            super().__init__("fragile", NodeSettings, **kw)
            self.seen = 0
            self.failures: list[str] = []
            self.create_subscription(Bool, "poke", self._on_poke, status_qos())

        def _on_poke(self, msg: Bool) -> None:
            self.seen += 1
            if msg.data:
                raise RuntimeError("boom")

        def callback_failed(self, what: str, exc: Exception) -> None:
            self.failures.append(what)

    h = Harness()
    try:
        node = h.add(Fragile(context=h.context))
        pub = node.create_publisher(Bool, "poke", status_qos())
        h.spin()
        assert wait_for(lambda: pub.get_subscription_count() > 0, 5.0)
        pub.publish(Bool(data=True))
        assert wait_for(lambda: node.callback_errors == 1, 5.0)
        pub.publish(Bool(data=False))
        assert wait_for(lambda: node.seen == 2, 5.0)  # still spinning
        assert node.failures == ["subscription poke"]
    finally:
        h.close()


def test_a_latch_survives_kill_9_of_the_filter_process(tmp_path: Path) -> None:
    """The e-stop is on disk before the trip is acknowledged: a SIGKILL right after it and a
    fresh process of the same filter start latched (diagnostics say so) until a reset."""
    from std_msgs.msg import Bool

    latch = tmp_path / "latch.json"
    h = Harness()
    env = {**os.environ, "ROS_DOMAIN_ID": str(h.domain_id), "ROS_AUTOMATIC_DISCOVERY_RANGE": "LOCALHOST"}
    cmd = [sys.executable, "-m", "sim2real.ros_nodes.safety_filter", "--ros-args", "-p", "robot:=drone",
           "-p", f"latch_file:={latch}", "-p", "diagnostics_rate:=5.0"]
    procs = [subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)]
    try:
        probe = h.add(make_probe(h.context, "drone"))
        h.spin()
        assert wait_for(lambda: probe.last_diag_values().get("estop") == "False", 60.0)
        probe.pub_estop.publish(Bool(data=True))
        assert wait_for(latch.exists, 10.0)
        procs[0].kill()
        procs[0].wait(timeout=10)
        probe.diagnostics.clear()
        procs.append(subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True))
        assert wait_for(lambda: probe.last_diag_values().get("estop") == "True", 60.0)
        assert "estop pressed on" in probe.last_diag_values()["latched"]
    finally:
        h.close()
        for p in procs:
            if p.poll() is None:
                p.terminate()
                p.wait(timeout=10)
