"""franka_ros2 as it ships (issue 44, item 1): the arm's 7 joints on ``franka/joint_states``
from the joint_state_broadcaster at the controller manager's rate, the gripper's fingers on
``franka_gripper/joint_states`` at the gripper node's own rate, ``arm_id`` prefixes (panda,
fr3), with or without a gripper, commands through ros2_controllers' joint_trajectory_controller.
Each test has its own DDS domain."""

from __future__ import annotations

import threading
import time

import numpy as np
from ros2_control_rig import unique_domain, wait_for
from sensor_msgs.msg import JointState
from trajectory_msgs.msg import JointTrajectory

from sim2real.hardware.backend import Phase
from sim2real.hardware.emulator.ros2_control_arm import Ros2ControlArmEmulator, Ros2ControlArmEmulatorConfig
from sim2real.hardware.ros2_control import topics as T
from sim2real.hardware.ros2_control.backend import Ros2ControlArm


def _serve(emulator: Ros2ControlArmEmulator) -> threading.Thread:
    thread = threading.Thread(target=emulator.serve, daemon=True)
    thread.start()
    return thread


def test_the_arm_stream_and_a_separate_gripper_stream_are_accepted() -> None:
    """franka.launch.py's topology, published by a bare node: 7 joints on franka/joint_states,
    the two fingers (each half the width, as franka_gripper publishes them) on
    franka_gripper/joint_states at 15 Hz. Before: the backend read one 9-joint joint_states
    and refused every 7-joint message (refused_missing_joint)."""
    domain = unique_domain()
    probe = T.RosThread("probe", domain)
    arm = probe.node.create_publisher(JointState, T.ARM_STATES, T.controller_qos())
    gripper = probe.node.create_publisher(JointState, T.GRIPPER_STATES, T.controller_qos())
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
    backend = Ros2ControlArm("ee_delta", {"domain_id": domain})
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
        assert set(rates) == {T.ARM_STATES, T.GRIPPER_STATES}, rates
    finally:
        stop.set()
        thread.join()
        backend.close()
        probe.close()


def test_a_gripperless_arm_enables_and_moves() -> None:
    """load_gripper:=false: no franka_gripper node, no finger stream. Before: no option for
    it, and a state without the fingers was refused."""
    domain = unique_domain()
    emulator = Ros2ControlArmEmulator(Ros2ControlArmEmulatorConfig(domain_id=domain, gripper=False))
    _serve(emulator)
    backend = Ros2ControlArm("ee_delta", {**emulator.connect_options(), "gripper": False})
    try:
        assert emulator.connect_options()["gripper"] is False
        backend.connect(5.0)
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
        assert emulator.counters["gripper_goals"] == 0  # no gripper: no width is ever sent
        assert backend.counters()["gripper_sent"] == 0
    finally:
        backend.close()
        emulator.close()


def test_an_fr3_is_read_and_commanded_with_its_prefix() -> None:
    """arm_id fr3 (franka_ros2's robot_type): fr3_joint1..7 and fr3_finger_joint1/2 read;
    the joint trajectory goes out naming the fr3's joints; the hand moves."""
    domain = unique_domain()
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
        assert emulator.counters["trajectories_accepted"] >= 5
    finally:
        backend.close()
        probe.close()
        emulator.close()
