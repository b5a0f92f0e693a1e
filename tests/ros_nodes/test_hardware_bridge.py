"""``backend: real`` over the wire: the hardware bridge (ROS 2 driver) talking UDP to the
emulated arm, on loopback, with real DDS in a private domain per test.

* end to end: ``sim2real hardware emulate`` in its own process + ``run_deployment``
  with ``backend="real"`` and the classical controller reaches the arm's targets;
* the bridge publishes the sim bridge's topics and refuses bad commands before the wire;
* configuration: the graph, the launch file and the parameter file start the bridge
  for ``backend: real``.
"""

from __future__ import annotations

import contextlib
import json
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import yaml
from ros_harness import Harness, export_tiny_policy, unique_domain_id, wait_for

from sim2real.hardware.emulator.arm import ArmEmulator, ArmEmulatorConfig
from sim2real.ros_nodes.deployment import DeployOptions, graph_parameters, run_deployment

ROOT = Path(__file__).resolve().parents[2]


def start_emulator(*extra: str) -> tuple[subprocess.Popen, int]:
    proc = subprocess.Popen([sys.executable, "-m", "sim2real.cli", "hardware", "emulate", "--port", "0", "--json",
                             *extra], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = proc.stderr.readline()
    assert line.startswith("listening on 127.0.0.1:"), line + proc.stderr.read()
    return proc, int(line.rsplit(":", 1)[1])


def stop_emulator(proc: subprocess.Popen) -> dict:
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=20)
    assert proc.returncode == 0, err
    return json.loads(out)


@contextlib.contextmanager
def serving_emulator() -> Iterator[ArmEmulator]:
    """The emulated arm serving in a thread of this process, on a free port."""
    emulator = ArmEmulator(ArmEmulatorConfig(port=0))
    stop = threading.Event()
    serving = threading.Thread(target=emulator.serve, kwargs={"should_stop": stop.is_set}, daemon=True)
    serving.start()
    try:
        yield emulator
    finally:
        stop.set()
        serving.join(timeout=5)
        emulator.close()


def test_arm_reaches_its_targets_over_the_wire() -> None:
    proc, port = start_emulator()
    try:
        summary = run_deployment(DeployOptions(robot="arm", backend="real", policy="classical", duration=10.0,
                                               domain_id=unique_domain_id(),
                                               overrides={"hardware_bridge": {"robot_port": port}}))
    finally:
        robot = stop_emulator(proc)
    hw = summary["hardware"]
    assert summary["backend"] == "real" and summary["task_success"]["successes"] >= 2, summary
    assert hw["packets_rejected"] == 0 and hw["commands_rejected"] == 0 and hw["packets_accepted_state"] > 100
    assert summary["interventions"]["rejected_commands"] == 0
    # The robot side saw the same: well-formed commands from our session only (a host stall
    # longer than 3 periods may make one stale, which is the robot's job to refuse), and it
    # applied nearly all of them.
    reasons = {k for k, v in robot["packets"].items() if k.startswith("rejected_") and v}
    assert reasons <= {"rejected_stale"}, robot["packets"]
    assert robot["packets"]["accepted_command"] >= hw["commands_sent"] * 0.9
    assert robot["successes"] >= summary["task_success"]["successes"] and robot["state_to_command_ms"]["n"] > 50


def test_bridge_publishes_robot_topics_and_refuses_bad_commands_before_the_wire() -> None:
    from rclpy.node import Node
    from rclpy.parameter import Parameter
    from sensor_msgs.msg import JointState
    from std_msgs.msg import Float64MultiArray

    from sim2real.ros_nodes import messages as M
    from sim2real.ros_nodes.hardware_bridge import HardwareBridge
    from sim2real.ros_nodes.monitor import Monitor
    from sim2real.ros_nodes.qos import command_qos, sensor_qos

    with serving_emulator() as emulator, Harness() as h:
        bridge = h.add(HardwareBridge(context=h.context, parameter_overrides=[
            Parameter("robot_port", value=emulator.address[1]), Parameter("command_publisher", value="command_probe")]))
        monitor = h.add(Monitor(context=h.context))
        probe = h.add(Node("command_probe", context=h.context))
        joints: list[JointState] = []
        probe.create_subscription(JointState, "joint_states", joints.append, sensor_qos())
        pub = probe.create_publisher(Float64MultiArray, "command", command_qos(0.2))  # the deadline of arm.yaml
        bridge.trigger_configure()
        bridge.trigger_activate()
        h.spin()
        assert wait_for(lambda: len(joints) >= 3, 10.0), "no joint_states from the robot"
        assert list(joints[-1].name) == [*(f"joint{i}" for i in range(1, 8)), "finger_left", "finger_right"]
        assert wait_for(lambda: pub.get_subscription_count() > 0, 5.0)
        bad = [M.command_array(np.zeros(6)), M.command_array(np.r_[np.nan, np.zeros(6)]),
               M.command_array(np.zeros(7), ("a", "b", "c", "d", "e", "f", "g"))]
        for k, msg in enumerate(bad, start=1):  # one at a time: the command QoS keeps the last one only
            pub.publish(msg)
            assert wait_for(lambda k=k: bridge.commands_rejected == k, 5.0), bridge.summary()
        assert emulator.stats.accepted.get("command", 0) == 0  # nothing reached the robot
        good = M.command_array(np.r_[0.05, 0, 0, 0, 0, 0, 0.04], ("vx", "vy", "vz", "wx", "wy", "wz", "gripper"))
        pub.publish(good)
        assert wait_for(lambda: emulator.stats.accepted.get("command", 0) == 1, 5.0), emulator.summary()
        assert wait_for(lambda: "hardware_bridge" in monitor.statuses, 5.0)
        diag = monitor.statuses["hardware_bridge"]
        assert int(diag["commands_rejected"]) == 3 and int(diag["packets_accepted_state"]) > 0
        # The robot's e-stop reaches ROS in the diagnostics, with the bit counted. (The level
        # is not checked: ManagedNode.publish_status sends an int where the message wants a
        # byte, which does not survive serialization; reported to the maintainers.)
        emulator.estop = True
        assert wait_for(lambda: "estop" in monitor.messages.get("hardware_bridge", ""), 5.0), monitor.messages
        assert int(monitor.statuses["hardware_bridge"]["status_estop"]) > 0


def test_bridge_refuses_robots_without_the_protocol(capfd) -> None:
    from rclpy.lifecycle import TransitionCallbackReturn
    from rclpy.parameter import Parameter

    from sim2real.ros_nodes.hardware_bridge import HardwareBridge

    h = Harness()
    try:
        node = h.add(HardwareBridge(context=h.context, parameter_overrides=[Parameter("robot", value="quadruped")]))
        assert node.trigger_configure() == TransitionCallbackReturn.FAILURE
        assert "arm protocol only" in capfd.readouterr().err
    finally:
        h.close()


@pytest.mark.parametrize("name,value", [("robot_port", 0), ("local_port", 70000), ("robot_port", "17001")])
def test_bridge_refuses_bad_ports_before_it_exists(name: str, value) -> None:
    """A port out of range or of the wrong type stops the node at construction, naming it
    (the descriptor's range and type, checked by rclpy)."""
    from rclpy.parameter import Parameter

    from sim2real.errors import ConfigError
    from sim2real.ros_nodes.hardware_bridge import HardwareBridge

    h = Harness()
    try:
        with pytest.raises(ConfigError, match=f"hardware_bridge.{name}"):
            HardwareBridge(context=h.context, parameter_overrides=[Parameter(name, value=value)])
    finally:
        h.close()


@pytest.mark.parametrize("robot,bridge", [("arm", "hardware_bridge"), ("quadruped", None), ("drone", None)])
def test_backend_real_starts_the_hardware_bridge_where_the_robot_speaks_the_protocol(robot: str, bridge) -> None:
    _, sim_nodes = graph_parameters(DeployOptions(robot=robot, backend="sim", policy="classical"))
    params, real_nodes = graph_parameters(DeployOptions(robot=robot, backend="real", policy="classical"))
    assert "sim_bridge" in sim_nodes and "hardware_bridge" not in sim_nodes and "sim_bridge" not in real_nodes
    assert ("hardware_bridge" in real_nodes) == (bridge is not None)
    if bridge:
        assert params["hardware_bridge"]["robot_address"] == "127.0.0.1"


def test_backend_real_takes_the_command_mode_from_the_policy(tmp_path: Path) -> None:
    # The graph loads the export (files, hash, robot) before any node starts.
    policy = export_tiny_policy("ArmReach", "ee_impedance", tmp_path)
    params, nodes = graph_parameters(DeployOptions(robot="arm", backend="real", policy=str(policy)))
    assert "hardware_bridge" in nodes and params["hardware_bridge"]["action_mode"] == "ee_impedance"
    assert params["safety_filter"]["action_mode"] == "ee_impedance"


def test_arm_launch_file_starts_the_hardware_bridge_for_backend_real() -> None:
    from sim2real.ros_nodes.launch_description import nodes

    started = {n.name: n for n in nodes("arm")}
    assert started["hardware_bridge"].when == ("backend", "real")
    assert "hardware_bridge" not in {n.name for n in nodes("drone")}  # the drone brings its own driver


def test_rclpy_accepts_the_hardware_bridge_parameters() -> None:
    import rclpy
    from rclpy.context import Context

    from sim2real.ros_nodes.hardware_bridge import HardwareBridge

    path = ROOT / "config" / "arm.yaml"
    context = Context()
    rclpy.init(context=context, domain_id=unique_domain_id(), args=["x", "--ros-args", "--params-file", str(path)])
    try:
        node = HardwareBridge(context=context)
        for key, value in yaml.safe_load(path.read_text())["hardware_bridge"]["ros__parameters"].items():
            assert node.get_parameter(key).value == value
        node.destroy_node()
    finally:
        rclpy.shutdown(context=context)


def test_robot_holds_when_the_driver_dies() -> None:
    """Fault injection: the ROS side (here the bridge itself) goes away mid-stream; the
    robot's own command timeout makes it hold, with nothing sent to stop it."""
    from rclpy.node import Node
    from rclpy.parameter import Parameter
    from std_msgs.msg import Float64MultiArray

    from sim2real.ros_nodes import messages as M
    from sim2real.ros_nodes.hardware_bridge import HardwareBridge
    from sim2real.ros_nodes.qos import command_qos

    with serving_emulator() as emulator, Harness() as h:
        bridge = h.add(HardwareBridge(context=h.context, parameter_overrides=[
            Parameter("robot_port", value=emulator.address[1]), Parameter("command_publisher", value="commander")]))
        pub = h.add(Node("commander", context=h.context)).create_publisher(Float64MultiArray, "command",
                                                                            command_qos(0.2))
        bridge.trigger_configure()
        bridge.trigger_activate()
        h.spin()
        forward = M.command_array(np.r_[0.05, 0, 0, 0, 0, 0, 0.04])

        def commanded() -> bool:
            pub.publish(forward)
            return emulator.stats.accepted.get("command", 0) >= 10 and emulator.command is not None

        assert wait_for(commanded, 10.0, step=0.05), emulator.summary()
        bridge.destroy_node()  # the driver dies; the policy side may still be publishing
        h.nodes.remove(bridge)
        accepted, rejected = emulator.stats.accepted["command"], emulator.stats.rejected_total
        assert wait_for(lambda: emulator.fresh_command(time.monotonic()) is None, 2.0)
        holds = emulator.hold_ticks
        assert wait_for(lambda: emulator.hold_ticks >= holds + 5, 3.0)
        # Nothing reached the robot after the driver died (a loaded machine may have made
        # a command stale before: only what happens after counts).
        assert emulator.stats.accepted["command"] == accepted and emulator.stats.rejected_total == rejected
