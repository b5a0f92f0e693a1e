"""Issue 42, defect 3: no message can kill a node, and a node that dies ends the graph
loudly. Over real DDS (loopback, private domain).

rclpy's logger raises when one call site logs with two severities; the throttled logger
did exactly that, inside the callback guard's own error handler, so one malformed
message after an e-stop ended the safety filter's executor (no more commands, no
e-stop or reset service) while ``deploy`` ran on until ``--duration``."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import psutil
import pytest
from ros_harness import Harness, make_probe, safety_node, unique_domain_id, wait_for

from sim2real.errors import GraphError


def test_a_throttled_log_site_takes_every_severity_without_raising() -> None:
    from sim2real.ros_nodes.base import ManagedNode
    from sim2real.ros_nodes.settings import NodeSettings

    h = Harness()
    try:
        node = h.add(ManagedNode("loud", NodeSettings, context=h.context))
        for i, level in enumerate(("warning", "error", "info", "fatal", "debug", "error", "bogus")):
            node.log_throttled(f"key{i}", f"message {i}", level=level)  # one call site, every severity
        log = node.get_logger()
        for level in ("info", "error", "warning"):
            log.log("direct", level)
        assert log.failures == 0
    finally:
        h.close()


def test_a_destroyed_node_leaves_the_graph_while_python_still_holds_it(capfd: pytest.CaptureFixture[str]) -> None:
    """rclpy's lifecycle node leaves the rcl node to the garbage collector; our nodes sit in
    reference cycles, so a destroyed node stayed in the graph for minutes (the SROS2 reader
    saw two `safety_filter`s) and the next node of its name logged over its dead /rosout
    publisher. Destroyed means gone, whoever still holds the Python object."""
    import rclpy
    from rclpy.context import Context
    from rclpy.node import Node

    from sim2real.ros_nodes.base import ManagedNode
    from sim2real.ros_nodes.settings import NodeSettings

    domain = unique_domain_id()
    contexts = [Context(), Context(), Context()]
    for context in contexts:
        rclpy.init(context=context, domain_id=domain)
    probe = Node("probe", context=contexts[0])
    try:
        def seen() -> int:
            return [name for name, _ in probe.get_node_names_and_namespaces()].count("twin")

        held = ManagedNode("twin", NodeSettings, context=contexts[1])  # held: the garbage collector cannot help
        assert wait_for(lambda: seen() == 1, 20.0, step=0.1), "discovery never delivered the node"
        held.destroy_node()
        rclpy.shutdown(context=contexts[1])
        assert wait_for(lambda: seen() == 0, 20.0, step=0.1), "the destroyed node stayed in the graph"
        successor = ManagedNode("twin", NodeSettings, context=contexts[2])
        successor.get_logger().info("logged by the successor")
        successor.destroy_node()
        err = capfd.readouterr().err
        assert "already registered" not in err and "context is invalid" not in err, err[-1000:]
        assert held is not None
    finally:
        probe.destroy_node()
        for context in contexts:
            if context.ok():
                rclpy.shutdown(context=context)


def _trigger(h: Harness, service: str) -> tuple[bool, str]:
    """Call a std_srvs/Trigger service from a node spun by the harness."""
    from rclpy.node import Node
    from std_srvs.srv import Trigger

    caller = h.add(Node(f"caller{len(h.nodes)}", context=h.context))
    client = caller.create_client(Trigger, service)
    if not client.wait_for_service(timeout_sec=5.0):
        return False, "no service"
    future = client.call_async(Trigger.Request())
    assert wait_for(future.done, 5.0), f"{service} did not answer"
    result = future.result()
    return (bool(result.success), result.message) if result is not None else (False, "no answer")


def test_a_malformed_joint_state_after_an_estop_leaves_the_filter_alive(tmp_path: Path) -> None:
    """The repro: e-stop, then one ``joint_states`` with an unknown joint name. The filter
    keeps sending the hold, and its reset service still answers."""
    h = Harness()
    try:
        safety = h.add(safety_node(h.context, "arm", latch_file=str(tmp_path / "latch.json")))
        probe = h.add(make_probe(h.context, "arm"))
        h.spin()
        assert wait_for(lambda: (probe.publish_state(), probe.publish_raw(np.zeros(7)), len(probe.received()) > 5)[-1],
                        10.0, step=0.02)
        assert _trigger(h, "/safety_filter/trip_estop")[0]
        probe.publish_raw(np.r_[0.1, np.zeros(6)])  # dropped during the e-stop: a warning from that site
        time.sleep(0.1)
        names = list(probe.info.joints)
        names[2] = "panda_joint_unknown"
        probe.publish_state(names=names)  # refused: an error from the state stream's site
        time.sleep(0.2)
        probe.publish_raw(np.r_[0.1, np.zeros(6)])
        before = len(probe.received())
        assert wait_for(lambda: (probe.publish_state(), len(probe.received()) > before + 10)[-1], 5.0, step=0.02), \
            "the filter stopped sending commands"
        ok, message = _trigger(h, "/safety_filter/reset")
        assert message != "no service" and ok, message
        assert safety.callback_errors == 0
    finally:
        h.close()


def test_an_in_process_graph_whose_executor_stopped_ends_the_run() -> None:
    from sim2real.ros_nodes.deployment import _wait
    from sim2real.ros_nodes.graph import InProcessGraph, config_dir, load_config

    graph = InProcessGraph(load_config(config_dir() / "arm.yaml"), ["safety_filter"], unique_domain_id())
    try:
        graph.start()
        graph.executors["control"].shutdown(timeout_sec=2.0)  # the control path is gone: nothing commands the robot
        t0 = time.monotonic()
        with pytest.raises(GraphError, match="executor stopped"):
            _wait(30.0, None, graph.raise_if_dead)
        assert time.monotonic() - t0 < 2.0
    finally:
        graph.shutdown()


def _children(pid: int) -> dict[str, int]:
    """{node module's last part: pid} of ``pid``'s child processes, from their argument
    lists (psutil, as the other process tests). Not ``ps -o args``: ps cut its lines under
    pytest, and in a checkout at a longer path (``/tmp/fresh.NNNNN/work/main``) the
    interpreter's path pushed the module's name past the cut, so the test saw no node of a
    graph that was running (the run's own stack was in its window loop): 3 fresh-clone CI
    runs of 3 failed so."""
    found = {}
    for child in psutil.Process(pid).children():
        with contextlib.suppress(psutil.NoSuchProcess, psutil.ZombieProcess):
            for part in child.cmdline():
                if part.startswith("sim2real.ros_nodes."):
                    found[part.rsplit(".", 1)[-1]] = child.pid
    return found


def _ended(proc: subprocess.Popen, output: Path) -> str:
    """What a run that never started its nodes said (ended here if it still runs, after
    SIGUSR1 had it print every thread's stack)."""
    running = proc.poll() is None
    if running:
        proc.send_signal(signal.SIGUSR1)
        time.sleep(2.0)
        proc.kill()
        proc.wait(timeout=30)
    text = output.read_text(errors="replace")
    return f"{'still running' if running else f'exited {proc.returncode}'} ({len(text)} chars): {text[-6000:]}"


@pytest.mark.heavy
def test_deploy_ends_non_zero_when_a_node_stops_reporting(tmp_path: Path) -> None:
    """A hung node (SIGSTOP: its executor never runs again) ends a --processes run within
    seconds, with its name, instead of the run going on silently to --duration. The run
    writes to a file, never to a pipe nobody reads while the test waits (a full pipe
    would stop the run's logging, and so the run)."""
    env = {**os.environ, "ROS_AUTOMATIC_DISCOVERY_RANGE": "LOCALHOST"}
    cmd = [sys.executable, "-m", "sim2real", "deploy", "--robot", "arm", "--processes", "--duration", "120",
           "--domain-id", str(unique_domain_id()), "--policy", "classical"]
    output = tmp_path / "deploy.out"
    with output.open("w") as sink:
        proc = subprocess.Popen(cmd, env=env, stdout=sink, stderr=subprocess.STDOUT, text=True)
    stopped = 0
    try:
        assert wait_for(lambda: "safety_filter" in _children(proc.pid), 60.0, step=0.2), _ended(proc, output)
        time.sleep(15.0)  # every node up and reporting (start-up takes ~5-10 s here)
        assert proc.poll() is None, output.read_text()[-2000:]
        stopped = _children(proc.pid)["safety_filter"]
        os.kill(stopped, signal.SIGSTOP)
        t_stop = time.monotonic()
        proc.wait(timeout=120.0)
        err = output.read_text()
        assert proc.returncode == 2, err[-2000:]
        if "never reported" not in err:  # a start-up slower than 15 s ends at its own deadline instead
            assert "safety_filter stopped reporting" in err, err[-2000:]
            assert time.monotonic() - t_stop < 30.0
    finally:
        if stopped:
            with contextlib.suppress(ProcessLookupError):  # the graph's shutdown killed it
                os.kill(stopped, signal.SIGCONT)
        if proc.poll() is None:
            proc.kill()
            proc.wait()


@pytest.mark.heavy
def test_deploy_console_processes_prints_the_url_and_ends_on_sigint() -> None:
    """Issue 42, defect 9: ``deploy --console --processes`` never printed the URL (the
    console's own process wrote it to its log), waited without a deadline for a status
    the console never published, and ignored SIGINT/SIGTERM meanwhile."""
    env = {**os.environ, "ROS_AUTOMATIC_DISCOVERY_RANGE": "LOCALHOST"}
    cmd = [sys.executable, "-m", "sim2real", "deploy", "--robot", "arm", "--processes", "--console",
           "--console-port", "0", "--domain-id", str(unique_domain_id()), "--policy", "classical"]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        url = ""
        end = time.monotonic() + 120.0
        assert proc.stderr is not None
        while time.monotonic() < end and not url:
            line = proc.stderr.readline()
            if not line:
                break
            if line.startswith("console: http"):
                url = line.split(" ", 1)[1].strip()
        assert url.startswith("http://127.0.0.1:") and "token=" in url, "the console's URL was never printed"
        t0 = time.monotonic()
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=60.0)
        assert proc.returncode == 0 and time.monotonic() - t0 < 30.0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_a_watchdog_drains_what_has_arrived_before_it_judges() -> None:
    """Issue 43: rclpy's executor runs a node's ready timers before its subscriptions, and
    the hardware bridge's deadman fired with a fresh command already waiting. ``drain``
    runs the waiting messages' callbacks first (here from outside any spin)."""
    from std_msgs.msg import Float64MultiArray

    from sim2real.ros_nodes.base import ManagedNode
    from sim2real.ros_nodes.qos import command_qos
    from sim2real.ros_nodes.settings import NodeSettings

    h = Harness()
    try:
        node = h.add(ManagedNode("watched", NodeSettings, context=h.context))
        seen: list[tuple[float, object]] = []
        sub = node.create_subscription(Float64MultiArray, "command", lambda m, i: seen.append((m.data[0], i)),
                                       command_qos(), message_info=True)
        pub = node.create_publisher(Float64MultiArray, "command", command_qos())
        assert wait_for(lambda: pub.get_subscription_count() > 0, 5.0)
        pub.publish(Float64MultiArray(data=[7.0]))
        time.sleep(0.3)  # delivered to the reader; nobody spins, so no callback has run
        assert seen == []
        assert node.drain(sub) == 1 and seen[0][0] == 7.0 and seen[0][1]["publisher_gid"] is not None
        assert node.drain(sub) == 0
    finally:
        h.close()
