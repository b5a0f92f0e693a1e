"""franka_ros2 as it ships (issue 44, item 1): the arm's 7 joints on ``franka/joint_states``
from the joint_state_broadcaster at the controller manager's rate, the gripper's fingers on
``franka_gripper/joint_states`` at the gripper node's own rate, ``arm_id`` prefixes (panda,
fr3), with or without a gripper, commands through ros2_controllers' joint_trajectory_controller.
Each test has its own DDS domain."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from dds_domains import unique_domain_id
from ros2_control_rig import wait_for
from sensor_msgs.msg import JointState
from trajectory_msgs.msg import JointTrajectory

from sim2real.hardware.backend import Phase
from sim2real.hardware.emulator.ros2_control_arm import Ros2ControlArmEmulator, Ros2ControlArmEmulatorConfig
from sim2real.hardware.preflight import Item, Preflight, format_table
from sim2real.hardware.realtime import EXECUTOR_PRIORITY, realtime_thread
from sim2real.hardware.ros2_control import topics as T
from sim2real.hardware.ros2_control.backend import Ros2ControlArm
from sim2real.sim import robot_deployment


def _serve(emulator: Ros2ControlArmEmulator) -> threading.Thread:
    thread = threading.Thread(target=emulator.serve, daemon=True)
    thread.start()
    return thread


@pytest.mark.parametrize(("namespace", "gripper_node"), [("franka", "franka_gripper"), ("", "panda_gripper")])
def test_the_arm_stream_and_a_separate_gripper_stream_are_accepted(namespace: str, gripper_node: str) -> None:
    """franka.launch.py's topology, published by a bare node: 7 joints on franka/joint_states,
    the two fingers (each half the width, as franka_gripper publishes them) on
    franka_gripper/joint_states at 15 Hz; or as franka_ros2's 0.1 releases launch it, at
    the root, the gripper node named panda_gripper. Before: the backend read one 9-joint
    joint_states and refused every 7-joint message (refused_missing_joint)."""
    domain = unique_domain_id()
    probe = T.RosThread("probe", domain, namespace)
    fingers = f"{gripper_node}/joint_states"
    arm = probe.node.create_publisher(JointState, T.ARM_STATES, T.controller_qos())
    gripper = probe.node.create_publisher(JointState, fingers, T.controller_qos())
    stop = threading.Event()
    q = [0.1 * i - 0.3 for i in range(7)]

    def publish() -> None:
        n = 0
        while not stop.is_set():
            arm.publish(JointState(name=list(T.arm_joint_names()), position=q, velocity=[0.0] * 7))
            if n % 13 == 0:  # ~15 Hz beside ~200 Hz
                gripper.publish(JointState(name=list(T.finger_joint_names()), position=[0.02, 0.02],
                                           velocity=[0.0, 0.0], effort=[0.0, 0.0]))
            n += 1
            time.sleep(0.005)

    thread = threading.Thread(target=publish, daemon=True)
    thread.start()
    backend = Ros2ControlArm("ee_delta", {"domain_id": domain, "namespace": namespace, "gripper_node": gripper_node})
    try:
        backend.connect(3.0)
        m = backend.state()
        assert m is not None and m.joint_pos is not None
        np.testing.assert_allclose(m.joint_pos, [*q, 0.02, 0.02])
        # Arm states before the first finger state wait for it; none is refused after.
        assert set(k for k in backend.counters() if k.startswith("refused_")) <= {"refused_gripper_stale"}
        before = backend.counters()
        assert wait_for(lambda: backend.counters()["states"] > before["states"] + 20, 2.0)
        assert {k: v for k, v in backend.counters().items() if k.startswith("refused_")} == \
            {k: v for k, v in before.items() if k.startswith("refused_")}
        rates = backend.stream_rates()
        assert set(rates) == {T.ARM_STATES, fingers}, rates
    finally:
        stop.set()
        thread.join()
        backend.close()
        probe.close()


def test_a_gripperless_arm_enables_and_moves() -> None:
    """load_gripper:=false: no franka_gripper node, no finger stream. Before: no option for
    it, and a state without the fingers was refused."""
    domain = unique_domain_id()
    emulator = Ros2ControlArmEmulator(Ros2ControlArmEmulatorConfig(domain_id=domain, gripper=False))
    _serve(emulator)
    backend = Ros2ControlArm("ee_delta", {**emulator.connect_options(), "gripper": False})
    try:
        assert emulator.connect_options()["gripper"] is False
        backend.connect(5.0)
        asked = time.monotonic()
        backend.enable()
        assert backend.phase == Phase.ENABLED
        before, _ = emulator.ee_pose()
        end = time.monotonic() + 0.5
        while time.monotonic() < end:
            backend.command(np.array([0.0, -0.1, 0.0, 0.0, 0.0, 0.0, 0.04]))
            time.sleep(0.05)
        time.sleep(0.1)
        moved = emulator.ee_pose()[0] - before
        assert moved[1] < -0.03 and abs(moved[0]) < 0.01, moved
        assert emulator.onset.at is not None and emulator.onset.at > asked  # a joint 1 mrad from its rest
        print(f"\nenable -> first motion: {(emulator.onset.at - asked) * 1e3:.0f} ms")
        assert emulator.counters["gripper_goals"] == 0  # no gripper: no width is ever sent
        assert backend.counters()["gripper_sent"] == 0
    finally:
        backend.close()
        emulator.close()


def test_an_fr3_is_read_and_commanded_with_its_prefix() -> None:
    """arm_id fr3 (franka_ros2's robot_type): fr3_joint1..7 and fr3_finger_joint1/2 read;
    the joint trajectory goes out naming the fr3's joints; the hand moves."""
    domain = unique_domain_id()
    emulator = Ros2ControlArmEmulator(Ros2ControlArmEmulatorConfig(domain_id=domain, arm_id="fr3"))
    _serve(emulator)
    seen: list[JointTrajectory] = []
    probe = T.RosThread("probe", domain)
    probe.node.create_subscription(JointTrajectory, T.TRAJECTORY, seen.append, T.controller_qos())
    backend = Ros2ControlArm("ee_delta", {"domain_id": domain, "arm_id": "fr3"})
    try:
        backend.connect(5.0)
        backend.enable()
        before, _ = emulator.ee_pose()
        for _ in range(8):
            backend.command(np.array([0.1, 0.0, 0.0, 0.0, 0.0, 0.0, 0.04]))
            time.sleep(0.05)
        time.sleep(0.1)
        assert wait_for(lambda: len(seen) >= 5, 2.0)
        assert list(seen[-1].joint_names) == [f"fr3_joint{i}" for i in range(1, 8)]
        assert emulator.ee_pose()[0][0] - before[0] > 0.02
        # The probe's reader saw them; the emulator's own executor may still be taking them.
        assert wait_for(lambda: emulator.counters["trajectories_accepted"] >= 5, 2.0), emulator.counters
    finally:
        backend.close()
        probe.close()
        emulator.close()


def _preflight(backend: Ros2ControlArm, seconds: float = 1.5) -> dict[str, Item]:
    check = Preflight(robot_deployment("arm"), backend, seconds)
    backend.on_state(check.add)
    assert wait_for(check.finished, seconds + 3.0)
    return {i.name: i for i in check.items()}


def test_the_preflight_check_judges_each_stream_at_its_own_rate() -> None:
    """The arm's stream against the broadcaster's rate, the fingers against franka_gripper's
    15 Hz: both pass. joint_state_publisher's 30 Hz merge read as the robot's state (what
    the backend read before) fails its rate, as it did (29 Hz of 250)."""
    domain = unique_domain_id()
    emulator = Ros2ControlArmEmulator(Ros2ControlArmEmulatorConfig(domain_id=domain))
    _serve(emulator)
    stock = Ros2ControlArm("ee_delta", emulator.connect_options())
    merged = Ros2ControlArm("ee_delta", {**emulator.connect_options(), "topology": "merged"})
    try:
        stock.connect(5.0)
        items = _preflight(stock)
        arm, fingers = items[f"state rate ({T.ARM_STATES})"], items[f"state rate ({T.GRIPPER_STATES})"]
        assert arm.status == "PASS" and fingers.status == "PASS", format_table(list(items.values()))
        assert fingers.expected == "15 Hz" and arm.expected == "250 Hz"
        merged.connect(5.0)
        rate = _preflight(merged)[f"state rate ({T.JOINT_STATES})"]
        assert rate.status == "FAIL" and rate.measured.startswith(("29 Hz", "30 Hz", "31 Hz")), rate
    finally:
        stock.close()
        merged.close()
        emulator.close()


_EMULATOR_1KHZ = """
import sys
from sim2real.hardware.emulator.ros2_control_arm import Ros2ControlArmEmulator, Ros2ControlArmEmulatorConfig
emulator = Ros2ControlArmEmulator(Ros2ControlArmEmulatorConfig(domain_id=int(sys.argv[1]), state_rate_hz=1000.0))
print("serving", flush=True)
emulator.serve(duration=20.0)
emulator.close()
"""


@pytest.mark.slow
def test_franka_bringups_own_1khz_stream_is_read_without_starving_commands() -> None:
    """franka_bringup's controllers.yaml runs the broadcaster at 1 kHz. Read in full, it
    took the GIL from the command path: the deadman held the arm after the first command.
    Read at read_rate_hz (every 4th message) the arm follows. The emulator runs in a
    process of its own, as the robot does, and the commands come from a real-time thread,
    as the bridge's control-path executor sends them."""
    domain = unique_domain_id()
    robot = subprocess.Popen([sys.executable, "-c", _EMULATOR_1KHZ, str(domain)], stdout=subprocess.PIPE, text=True)
    backend = Ros2ControlArm("ee_delta", {"domain_id": domain})
    try:
        assert robot.stdout is not None and robot.stdout.readline().strip() == "serving"
        backend.connect(10.0)
        backend.enable()
        first = backend.state()
        assert first is not None and first.ee_pos is not None
        def policy() -> None:
            with realtime_thread("test commands", EXECUTOR_PRIORITY):
                for _ in range(10):
                    backend.command(np.array([0.0, 0.1, 0.0, 0.0, 0.0, 0.0, 0.04]))
                    time.sleep(0.05)

        commands = threading.Thread(target=policy)
        commands.start()
        commands.join()
        assert backend.phase == Phase.ENABLED, backend.health().reason
        time.sleep(0.1)
        last = backend.state()
        assert last is not None and last.ee_pos is not None and last.ee_pos[1] - first.ee_pos[1] > 0.03
        counters = backend.counters()
        assert counters["states_skipped"] > 2 * counters["states"], counters
    finally:
        backend.close()
        robot.kill()
        robot.wait(timeout=5)


@pytest.mark.parametrize(("arm_id", "path"), [("fr3", "config/franka_ros2_controllers.yaml"),
                                              ("panda", "config/franka_ros2_controllers_panda.yaml")])
def test_the_shipped_controller_file_matches_the_backend(arm_id: str, path: str) -> None:
    """The controller file the user loads names the joints the backend commands, the
    trajectory controller it publishes to, the simulated servo gains and the
    broadcaster's rate the backend expects."""
    import yaml

    from sim2real.sim.arm import constants as C

    nodes = yaml.safe_load((Path(__file__).parents[2] / path).read_text())["/**"]
    controller = T.TRAJECTORY.split("/")[0]
    managed = nodes["controller_manager"]["ros__parameters"]
    assert managed[controller]["type"] == "joint_trajectory_controller/JointTrajectoryController"
    assert managed["joint_state_broadcaster"]["type"] == "joint_state_broadcaster/JointStateBroadcaster"
    assert nodes["joint_state_broadcaster"]["ros__parameters"]["update_rate"] == T.BROADCASTER_RATE
    params = nodes[controller]["ros__parameters"]
    assert params["joints"] == list(T.arm_joint_names(arm_id))
    assert params["command_interfaces"] == ["effort"]
    assert [params["gains"][j]["p"] for j in params["joints"]] == list(C.JOINT_KP)
    assert [params["gains"][j]["d"] for j in params["joints"]] == list(C.JOINT_KD)


def test_the_gripper_relay_sends_one_goal_at_a_time_and_only_on_a_change() -> None:
    """The relay's decisions (its franka_msgs half runs only on the robot's PC): open with
    Move, close with Grasp, nothing while an action runs, nothing for the same width
    again (a grasp stopped by an object stays), nothing under the deadband."""
    from sim2real.hardware.ros2_control.gripper_relay import GoalChooser, GripperGoal, main

    chooser = GoalChooser(deadband=0.005)
    assert chooser.next_goal(None, 0.04, busy=False) is None  # the host has asked nothing yet
    assert chooser.next_goal(0.08, 0.04, busy=True) is None
    assert chooser.next_goal(0.08, 0.04, busy=False) == GripperGoal("move", 0.08)
    assert chooser.next_goal(0.0, 0.08, busy=True) is None
    assert chooser.next_goal(0.0, 0.08, busy=False) == GripperGoal("grasp", 0.0)
    assert chooser.next_goal(0.0, 0.03, busy=False) is None  # held on an object 3 cm wide
    assert chooser.next_goal(0.002, 0.03, busy=False) is None  # within the deadband of the ask
    assert chooser.next_goal(0.05, 0.03, busy=False) == GripperGoal("move", 0.05)
    with pytest.raises(SystemExit, match="franka_msgs"):
        main(["--namespace", "franka"])  # no franka_msgs here: said, not a traceback


@pytest.mark.slow
@pytest.mark.parametrize("gripper", [True, False])
def test_the_shipped_reach_policy_through_the_stock_graph(gripper: bool) -> None:
    """`deploy --robot arm --backend real --emulate`: the shipped ArmReach policy through the
    bridge into franka_ros2's stock topology, with and without a gripper; every episode
    reaches, the width goes only through the gripper's own topic (never without one)."""
    import json

    from sim2real.ros_nodes.deployment import DeployOptions, run_deployment

    overrides = {} if gripper else {"hardware_bridge": {"backend_options": json.dumps({"gripper": False})}}
    summary = run_deployment(DeployOptions(robot="arm", backend="real", emulate=True, duration=12.0,
                                           domain_id=unique_domain_id(), overrides=overrides))
    success, emulator, holds = summary["task_success"], summary["emulator"], summary["hardware"]["link_holds"]
    # Every episode reaches, but one a host stall interrupted: the state went stale and the
    # arm was held (seen at load 6 on 2 cores: the in-process graph's emulator loop late by 350 ms).
    assert success["episodes"] >= 3 and success["successes"] >= success["episodes"] - min(holds, 1), summary
    assert summary["hardware"]["preflight"] == "PASS", summary["hardware"]
    assert emulator["topology"] == "franka_ros2" and emulator["rejected"] == {}, emulator
    assert emulator["trajectories_accepted"] > 100 and emulator["gripper_accepted"] == 0, emulator
    assert (emulator["gripper_goals"] > 0) == gripper, emulator
