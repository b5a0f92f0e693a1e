"""Issue 42, defects 1 and 2, at graph level: every node in its own process, started the
way ``ros2 launch`` starts it (``sim2real deploy --node NAME -- --ros-args -r
__node:=NAME --params-file config/arm.yaml``), real DDS on loopback.

The safety filter is stopped with SIGTERM, then (after an operator's enable) with
SIGKILL, whose writer stays in the graph until its DDS lease ends; each time another
process publishes on ``command`` and the filter is started again. The arm never moves
until an operator enables the sim bridge again, and then obeys the new filter."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from ros_harness import Harness, unique_domain_id, wait_for

from sim2real.ros_nodes.graph import config_dir

ROGUE = np.r_[0.3, 0.0, -0.3, 0.0, 0.0, 0.0, 0.04]
"""0.42 m/s towards the table: what another process commands."""


def _node(name: str, domain: int, log: Path, *extra: str) -> subprocess.Popen:
    """One node as ``ros2 launch`` starts it, its output appended to ``log`` (shown when
    the test fails: a node that never publishes says why there)."""
    cmd = [sys.executable, "-m", "sim2real", "deploy", "--node", name, "--", "--ros-args", "-r", f"__node:={name}",
           "--params-file", str(config_dir() / "arm.yaml"), *extra]
    env = {**os.environ, "ROS_DOMAIN_ID": str(domain), "ROS_AUTOMATIC_DISCOVERY_RANGE": "LOCALHOST"}
    with open(log, "ab") as out:
        out.write(f"--- {name} started at {time.monotonic():.3f}\n".encode())
        out.flush()
        return subprocess.Popen(cmd, env=env, stdout=out, stderr=subprocess.STDOUT)


def _tail(log: Path, chars: int = 3000) -> str:
    return log.read_text(errors="replace")[-chars:] if log.exists() else "(no log)"


@pytest.mark.heavy
def test_a_stopped_or_killed_filter_hands_no_one_the_arm_until_an_operator_enables(tmp_path: Path) -> None:
    from geometry_msgs.msg import PoseStamped
    from rclpy.node import Node
    from std_msgs.msg import Float64MultiArray
    from std_srvs.srv import Trigger

    from sim2real.ros_nodes import messages as M
    from sim2real.ros_nodes.monitor import Monitor
    from sim2real.ros_nodes.qos import command_qos, sensor_qos

    domain = unique_domain_id()
    latch = ["-p", f"latch_file:={tmp_path / 'latch.json'}"]
    bridge_log, filter_log = tmp_path / "sim_bridge.log", tmp_path / "safety_filter.log"
    procs = [_node("sim_bridge", domain, bridge_log), _node("safety_filter", domain, filter_log, *latch)]
    h = Harness(domain)
    try:
        monitor = h.add(Monitor(context=h.context))
        probe = h.add(Node("operator_and_rogue", context=h.context))
        ee: list[np.ndarray] = []
        lock = threading.Lock()

        def on_pose(msg: PoseStamped) -> None:
            with lock:
                ee.append(M.pose_arrays(msg.pose)[0])

        probe.create_subscription(PoseStamped, "ee_pose", on_pose, sensor_qos())
        enable = probe.create_client(Trigger, "/sim_bridge/enable")
        h.spin()

        def bridge(key: str) -> float:
            return float(monitor.statuses.get("sim_bridge", {}).get(key, 0))

        def travelled() -> float:
            """m the end effector moved, without the jumps of episode resets (the simulated
            task starts a new episode every 5 s: one step between two samples, the arm still
            before and after); a commanded motion moves it over consecutive samples."""
            with lock:
                steps = np.linalg.norm(np.diff(np.array(ee), axis=0), axis=1)
            moving = steps > 1e-5
            continued = moving & (np.r_[False, moving[:-1]] | np.r_[moving[1:], False])
            return float(steps[continued].sum())

        assert wait_for(lambda: bridge("commands_received") > 20, 90.0, step=0.1), "the graph never ran"
        for sig in (signal.SIGTERM, signal.SIGKILL):
            procs[1].send_signal(sig)
            procs[1].wait(timeout=20)
            # Another process commands the arm towards the table: as the filter did, one writer.
            rogue = probe.create_publisher(Float64MultiArray, "command", command_qos(0.2))
            end = time.monotonic() + 2.0
            while time.monotonic() < end:
                rogue.publish(M.command_array(ROGUE))
                time.sleep(0.02)
            probe.destroy_publisher(rogue)
            time.sleep(0.2)  # the last samples
            assert travelled() < 0.01, f"{signal.Signals(sig).name}: another process moved the arm {travelled():.3f} m"
            procs[1] = _node("safety_filter", domain, filter_log, *latch)  # the filter starts again
            received = bridge("commands_received")
            refused = bridge("commands_refused")
            assert wait_for(lambda refused=refused: bridge("commands_refused") > refused + 50, 90.0, step=0.1), (
                f"{signal.Signals(sig).name}: the restarted filter never published (refused "  # refused, not obeyed
                f"{bridge('commands_refused'):.0f}, filter alive: {procs[1].poll() is None}, bridge report "
                f"{monitor.statuses.get('sim_bridge', {})}; {h.state()}; silent over 3 s: "
                f"{monitor.silent(['sim_bridge', 'safety_filter'], 3.0)}):\n{_tail(filter_log)}\n--- bridge:\n"
                f"{_tail(bridge_log)}")
            assert bridge("commands_received") == received, f"{signal.Signals(sig).name}: obeyed before an enable"
            assert travelled() < 0.01, f"{signal.Signals(sig).name}: the arm moved {travelled():.3f} m"

            def enabled() -> bool:
                future = enable.call_async(Trigger.Request())
                return wait_for(future.done, 5.0) and bool(future.result().success)

            assert enable.wait_for_service(timeout_sec=10.0)
            assert wait_for(enabled, 30.0, step=0.5), "the operator's enable was refused"
            assert wait_for(lambda received=received: bridge("commands_received") > received + 20, 10.0, step=0.1)
        assert travelled() < 0.01  # the filter holds the arm: no policy runs
    finally:
        h.close()
        for proc in procs:
            if proc.poll() is None:
                proc.terminate()
        for proc in procs:
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
