"""``backend: real``: the hardware bridge driving a robot through its backend, here the arm
through ros2_control's topics against the simulator-backed emulator, on loopback, with
real DDS in a private domain per test.

* end to end: ``run_deployment(..., backend="real", emulate=True)`` reaches the arm's
  targets through the shipped policy, the safety filter, the bridge and ros2_control;
* the robot stays in its safe state until the pre-flight check passes and it is enabled,
  and a failed check keeps it there;
* the deadman: no fresh filtered command for 3 control periods -> the robot's safe state;
* configuration: every robot's graph, launch file and parameter file start the bridge
  for ``backend: real`` with its own backend.
(The other robots' end-to-end runs are in test_hardware_bridge_robots.py.)
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import fair_server
import numpy as np
import pytest
import yaml
from ros_harness import Harness, export_tiny_policy, unique_domain_id, wait_for

from sim2real.hardware.emulator.base import EmulatorSettings
from sim2real.hardware.emulator.faults import StreamFaults
from sim2real.ros_nodes.deployment import DeployOptions, graph_parameters, run_deployment

ROOT = Path(__file__).resolve().parents[2]
ROBOTS = ("arm", "quadruped", "drone")
FORWARD = np.r_[0.05, 0, 0, 0, 0, 0, 0.04]


@contextlib.contextmanager
def arm_emulator(domain: int, faults: StreamFaults | None = None) -> Iterator[Any]:
    """The emulated Franka under ros2_control, serving on a thread of this process."""
    from sim2real.hardware.emulator.ros2_control_arm import Ros2ControlArmEmulator

    emulator = Ros2ControlArmEmulator.launch(EmulatorSettings(domain_id=domain, faults=faults or StreamFaults()))
    stop = threading.Event()
    serving = threading.Thread(target=emulator.serve, kwargs={"should_stop": stop.is_set}, daemon=True)
    serving.start()
    try:
        yield emulator
    finally:
        stop.set()
        serving.join(timeout=5)
        emulator.close()


def bridge_in(h: Harness, emulator: Any, **params: Any) -> Any:
    from rclpy.parameter import Parameter

    from sim2real.ros_nodes.hardware_bridge import HardwareBridge

    options = {"backend_options": json.dumps(emulator.connect_options()),
               "command_publisher": "commander", "preflight_seconds": 0.5, **params}
    return h.add(HardwareBridge(context=h.context, parameter_overrides=[Parameter(k, value=v)
                                                                       for k, v in options.items()]))


def commands_reaching(emulator: Any) -> int:
    return int(emulator.summary()["commands_accepted"])


# Once slow-marked as flaky (issue 43, item 4): on franka_ros2's stock topology (the arm's
# 250 Hz stream and the 15 Hz finger stream read apart, trajectory points out) it failed 2
# of 6 runs on an idle 2-core machine, and in 1 of 3 12-second deploy runs the graph's
# filtered commands paused for over 0.125 s (the backend's deadman held the arm). Removed
# since: normal-priority Python in this process that holds the interpreter lock the
# real-time executor needs (the real-time demand sampler reading /proc once a second, now
# a process of its own; benchmarks/gil_neighbours.py). Beside a CPU-bound competitor per
# core it passed 12 of 12 runs since.
#
# The backend's hold limits are tests/fair_server.py's (joint states 100 ms old, not 50; no
# command for 200 ms, not 125). With the defaults, beside 4 competitors 1 of 18 runs held
# the arm on stale joint states 1 s after enabling and lost its episodes; CI's loaded heavy
# tier once lost its last one. A hold's reason is the hardware summary's ``reason``, in
# this test's message.
@pytest.mark.heavy
def test_arm_reaches_its_targets_through_ros2_control() -> None:
    loaded_machine = {"backend_options": json.dumps(fair_server.ARM_OPTIONS)}
    summary = run_deployment(DeployOptions(robot="arm", backend="real", emulate=True, duration=12.0,
                                           domain_id=unique_domain_id(),
                                           overrides={"hardware_bridge": loaded_machine}))
    hw, success = summary["hardware"], summary["task_success"]
    assert success["episodes"] >= 3 and success["successes"] == success["episodes"], (hw.get("reason"), summary)
    assert hw["phase"] == "enabled" and hw["preflight"] == "PASS", hw
    assert hw["commands_rejected"] == 0 and hw["commands_sent"] > 100 and hw["deadman_trips"] == 0, hw
    assert summary["emulator"]["rejected"] == {} and summary["emulator"]["overruns"] < 10, summary["emulator"]
    assert summary["interventions"]["rejected_commands"] == 0
    if any("SCHED_FIFO" in line for line in summary["scheduling"].values()):  # what they used, machine-wide
        demand = summary["realtime_demand"]
        assert demand["cores"] > 0 and demand["busiest"], demand


def test_the_robot_is_safe_until_checked_and_enabled_and_the_deadman_holds_it(realtime_caller) -> None:
    from rclpy.node import Node
    from std_msgs.msg import Float64MultiArray

    from sim2real.hardware.backend import Phase
    from sim2real.ros_nodes import messages as M
    from sim2real.ros_nodes.qos import command_qos

    domain = unique_domain_id()
    with arm_emulator(domain) as emulator, Harness(domain) as h:
        bridge = bridge_in(h, emulator)
        pub = h.add(Node("commander", context=h.context)).create_publisher(Float64MultiArray, "command",
                                                                            command_qos(0.2))
        bridge.trigger_configure()
        bridge.trigger_activate()
        h.spin()
        assert bridge.enable().startswith("the pre-flight check is still reading")
        assert wait_for(lambda: pub.get_subscription_count() > 0, 5.0)
        for _ in range(5):  # before enable: received, never sent
            pub.publish(M.command_array(FORWARD))
            wait_for(lambda: False, 0.05)
        assert bridge.commands_while_disabled >= 1 and commands_reaching(emulator) == 0
        # Enabled as soon as the check has read its window: enable() judges a finished check
        # itself rather than waiting for the node's next tick.
        assert wait_for(lambda: bridge.preflight.finished(), 10.0), bridge.summary()
        assert bridge.enable() == "", bridge.summary()
        assert wait_for(lambda: bridge.backend.phase is Phase.ENABLED, 5.0)

        def commanded() -> bool:
            pub.publish(M.command_array(FORWARD))
            return bridge.commands_sent >= 10

        assert wait_for(commanded, 10.0, step=0.05), bridge.summary()
        reached = commands_reaching(emulator)
        assert reached > 0
        # The filter falls silent: within 3 control periods (150 ms) the arm is held, by the
        # backend's own deadman or the bridge's, whichever comes first.
        assert wait_for(lambda: bridge.backend.phase is Phase.CONNECTED, 1.0), bridge.summary()
        assert bridge.deadman_trips >= 1 or "command" in bridge.backend.health().reason, bridge.summary()
        held = commands_reaching(emulator)
        wait_for(lambda: False, 0.3)
        assert commands_reaching(emulator) - held <= 2  # the hold itself, nothing after


def test_a_failed_preflight_keeps_the_robot_disabled() -> None:
    """Two joints exchanged on the wire: the check names them and enable is refused,
    even with auto_enable."""
    from sim2real.hardware.backend import Phase

    domain = unique_domain_id()
    with arm_emulator(domain, StreamFaults(swap_joints=(1, 3))) as emulator, Harness(domain) as h:
        bridge = bridge_in(h, emulator, auto_enable=True)
        bridge.trigger_configure()
        bridge.trigger_activate()
        h.spin()
        assert wait_for(lambda: bridge.preflight_runs >= 2, 5.0)  # it checks again, and fails again
        reason = bridge.enable()
        assert "swapped" in reason and "joint2" in reason and "joint4" in reason, reason
        assert bridge.backend.phase is Phase.CONNECTED and bridge.summary()["preflight"] == "FAIL"


@pytest.mark.heavy
def test_deploy_check_exits_nonzero_naming_the_mismatch() -> None:
    base = [sys.executable, "-m", "sim2real.cli", "deploy", "check", "--robot", "arm", "--emulate", "--seconds", "1"]
    bad = subprocess.run([*base, "--fault", "joint_units=deg", "--fault", "latency=0.04"], capture_output=True,
                         text=True, timeout=120)
    assert bad.returncode == 1, bad.stdout + bad.stderr
    assert "degrees instead of radians" in bad.stdout
    latency = next(line for line in bad.stdout.splitlines() if line.startswith("link latency"))
    assert "FAIL" in latency and 35 < float(latency.split()[3]) < 80, latency  # 40 ms held back on the link
    good = subprocess.run([*base, "--json"], capture_output=True, text=True, timeout=120)
    assert good.returncode == 0, good.stdout + good.stderr
    report = json.loads(good.stdout)
    names = {i["name"]: i["status"] for i in report["items"]}
    assert names["joint order (rest pose)"] == "PASS" and names["observation (policy)"] in ("PASS", "WARN"), names


def test_bridge_refuses_an_unknown_backend_or_another_robots(capfd: pytest.CaptureFixture[str]) -> None:
    from rclpy.lifecycle import TransitionCallbackReturn
    from rclpy.parameter import Parameter

    from sim2real.ros_nodes.hardware_bridge import HardwareBridge

    for params, message in (({"backend": "ur_rtde"}, "the arm speaks ros2_control, not ur_rtde"),
                            ({"robot": "quadruped", "backend": "ros2_control"},
                             "the quadruped speaks unitree_go2, not ros2_control"),
                            ({"robot": "x500", "backend": "crazyflie"}, "the x500 speaks px4, not crazyflie"),
                            ({"backend_options": "[1]"}, "must be a JSON object")):
        h = Harness()
        try:
            node = h.add(HardwareBridge(context=h.context, parameter_overrides=[
                Parameter(k, value=v) for k, v in params.items()]))
            assert node.trigger_configure() == TransitionCallbackReturn.FAILURE
            assert message in capfd.readouterr().err
        finally:
            h.close()


@pytest.mark.parametrize("robot", ROBOTS)
def test_backend_real_starts_the_hardware_bridge(robot: str) -> None:
    from sim2real.ros_nodes.launch_description import launch_graph

    _, sim_nodes = graph_parameters(DeployOptions(robot=robot, backend="sim", policy="classical"))
    params, real_nodes = graph_parameters(DeployOptions(robot=robot, backend="real", policy="classical"))
    assert "sim_bridge" in sim_nodes and "hardware_bridge" not in sim_nodes and "sim_bridge" not in real_nodes
    assert "hardware_bridge" in real_nodes and params["hardware_bridge"]["robot"] == robot
    assert "hardware_bridge" in launch_graph(robot, {"backend": "real"}, 0).nodes  # the launch files' rule too


def test_backend_real_takes_the_command_mode_from_the_policy(tmp_path: Path) -> None:
    policy = export_tiny_policy("ArmReach", "ee_impedance", tmp_path)
    params, nodes = graph_parameters(DeployOptions(robot="arm", backend="real", policy=str(policy)))
    assert "hardware_bridge" in nodes and params["hardware_bridge"]["action_mode"] == "ee_impedance"
    assert params["safety_filter"]["action_mode"] == "ee_impedance"


@pytest.mark.parametrize("robot", ROBOTS)
def test_rclpy_accepts_the_hardware_bridge_parameters(robot: str) -> None:
    import rclpy
    from rclpy.context import Context

    from sim2real.ros_nodes.hardware_bridge import HardwareBridge

    path = ROOT / "config" / f"{robot}.yaml"
    context = Context()
    rclpy.init(context=context, domain_id=unique_domain_id(), args=["x", "--ros-args", "--params-file", str(path)])
    try:
        node = HardwareBridge(context=context)
        for key, value in yaml.safe_load(path.read_text())["hardware_bridge"]["ros__parameters"].items():
            assert node.get_parameter(key).value == value
        node.destroy_node()
    finally:
        rclpy.shutdown(context=context)


def test_the_bridge_tells_the_safety_filter_its_robots_estop_durably() -> None:
    """The bridge is an e-stop source: ``false`` once connected (a reader that joins later
    still gets it), ``true`` from its robot's e-stop on, and after a reconfigure its one
    writer says the state again (no second writer keeping an old ``true``)."""
    from rclpy.node import Node
    from std_msgs.msg import Bool

    from sim2real.hardware.backend import Phase
    from sim2real.ros_nodes.qos import estop_qos

    domain = unique_domain_id()
    with arm_emulator(domain) as emulator, Harness(domain) as h:
        bridge = bridge_in(h, emulator)
        bridge.trigger_configure()
        bridge.trigger_activate()
        h.spin()
        said: list[bool] = []
        late = h.add(Node("late_reader", context=h.context))  # joins after the bridge spoke
        late.create_subscription(Bool, "estop", lambda m: said.append(bool(m.data)), estop_qos())
        assert wait_for(lambda: said == [False], 5.0), said
        bridge.backend.estop("test: the robot's own stop")
        assert wait_for(lambda: said[-1:] == [True], 2.0), said
        bridge.trigger_deactivate()
        bridge.trigger_cleanup()
        bridge.trigger_configure()  # connects again: released at the robot
        assert bridge.backend.phase is Phase.CONNECTED
        assert wait_for(lambda: said[-1:] == [False], 5.0), said
        writers = late.get_publishers_info_by_topic("estop")
        assert len(writers) == 1, writers
        # What configure created went with the cleanup: one command reader and one enable
        # service, where the old ones kept ran every command and every enable twice.
        assert wait_for(lambda: len(late.get_subscriptions_info_by_topic("command")) == 1, 5.0)
        assert [s.service_name for s in bridge.services].count("/hardware_bridge/enable") == 1
