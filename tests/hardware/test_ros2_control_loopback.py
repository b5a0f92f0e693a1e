"""The ros2_control backend against its emulator over real DDS on loopback: state in the
simulator's joint order, bad states refused, ee_delta commands moving the simulated
hand, bad commands refused, and the emulator's controllers (trajectory, validation,
episodes). ``rig``: franka_ros2's stock topology; ``merged_rig``: the single 9-joint
stream with forward controllers. Each test has its own DDS domain."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import numpy as np
import pytest
from dds_domains import unique_domain_id
from ros2_control_rig import Rig, connected_rig, control_path, start_emulator, wait_for
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from sim2real.hardware.backend import HardwareError, Phase, backend_class
from sim2real.hardware.emulator.base import emulator_class
from sim2real.hardware.emulator.faults import StreamFaults
from sim2real.hardware.emulator.ros2_control_arm import Ros2ControlArmEmulator
from sim2real.hardware.ros2_control import topics as T
from sim2real.hardware.ros2_control.backend import Ros2ControlArm


@pytest.fixture
def merged_rig() -> Iterator[Rig]:
    yield from connected_rig("merged")


class Probe:
    """A bare node on the test's domain: publishes what a broken robot or a user would."""

    def __init__(self, domain: int) -> None:
        self.ros = T.RosThread("probe", domain)
        self.states = self.ros.node.create_publisher(JointState, T.JOINT_STATES, T.controller_qos())
        self.forward = self.ros.node.create_publisher(Float64MultiArray, T.POSITION_COMMANDS, T.controller_qos())
        self.trajectory = self.ros.node.create_publisher(JointTrajectory, T.TRAJECTORY, T.controller_qos())

    def joint_state(self, names: list[str], position: list[float]) -> None:
        self.states.publish(JointState(name=names, position=position, velocity=[0.0] * len(position)))


def test_registries_name_the_backend_and_its_emulator() -> None:
    assert backend_class("ros2_control") is Ros2ControlArm
    assert emulator_class("ros2_control") is Ros2ControlArmEmulator


def test_connect_reads_joint_states_in_the_simulators_order(rig: Rig) -> None:
    m = rig.backend.state()
    assert m is not None and m.joint_pos is not None and m.ee_pos is not None and m.ee_quat is not None
    truth = rig.emulator.data.qpos[:9]
    np.testing.assert_allclose(m.joint_pos, truth, atol=2e-3)  # the arm at rest; one frame of age
    pos, quat = rig.emulator.ee_pose()
    np.testing.assert_allclose(m.ee_pos, pos, atol=2e-3)
    assert abs(abs(float(quat @ m.ee_quat)) - 1.0) < 1e-4
    assert set(m.stamps) == {"joint_states", "ee_pose", "ee_pose_desired", T.ARM_STATES, T.GRIPPER_STATES}
    assert rig.backend.phase == Phase.CONNECTED
    health = rig.backend.health()
    assert health.state_age < 0.05
    assert wait_for(lambda: rig.backend.detail()["state_rate_hz"] > 150, 2.0), rig.backend.detail()


def test_shuffled_names_are_reordered_and_bad_states_refused() -> None:
    domain = unique_domain_id()
    probe = Probe(domain)
    backend = Ros2ControlArm("ee_delta", {"domain_id": domain, "topology": "merged"})
    names = list(backend.names)
    stop = threading.Event()
    message: list[tuple[list[str], list[float]]] = [([f"fr3{n[5:]}" for n in names], [0.1] * 9)]

    def publish() -> None:
        while not stop.is_set():
            probe.joint_state(*message[0])
            time.sleep(0.01)

    thread = threading.Thread(target=publish, daemon=True)
    thread.start()
    try:
        with pytest.raises(HardwareError, match=r"refused: .*unknown_joint"):
            backend.connect(1.0)  # an FR3's names on a Panda's backend
        message[0] = (names, [*([0.1] * 8), float("nan")])
        with pytest.raises(HardwareError, match=r"refused: \{.*'refused_non_finite': \d+"):
            backend.connect(1.0)
        order = [4, 2, 0, 8, 6, 1, 3, 5, 7]
        message[0] = ([names[i] for i in order], [0.1 * i - 0.5 for i in order])
        backend.connect(2.0)
        m = backend.state()
        assert m is not None and m.joint_pos is not None
        np.testing.assert_allclose(m.joint_pos, 0.1 * np.arange(9) - 0.5)
        message[0] = (names[:8], [0.0] * 8)  # the fingers missing: refused, the state ages
        assert wait_for(lambda: backend.counters().get("refused_missing_joint", 0) > 3, 2.0)
        assert backend.health().state_age > 0.03
        kept = backend.state()
        assert kept is not None and kept.joint_pos is not None
        np.testing.assert_allclose(kept.joint_pos, 0.1 * np.arange(9) - 0.5)
    finally:
        stop.set()
        thread.join()
        backend.close()
        probe.ros.close()


def test_ee_delta_command_moves_the_simulated_hand_that_way(rig: Rig) -> None:
    for direction in (np.array([0.0, -1.0, 0.0]), np.array([0.6, 0.0, 0.8])):
        rig.backend.enable()
        assert rig.backend.phase == Phase.ENABLED
        before, _ = rig.emulator.ee_pose()
        rig.drive(np.r_[0.1 * direction, 0.0, 0.0, 0.0, 0.04], 0.5)
        time.sleep(0.15)  # the commands stop: the deadman holds (enable again for the next)
        assert rig.backend.phase == Phase.CONNECTED
        moved = rig.emulator.ee_pose()[0] - before
        assert moved @ direction / np.linalg.norm(moved) > 0.98, moved
        assert 0.035 < np.linalg.norm(moved) < 0.06, (moved, rig.backend.last_hold)  # 0.1 m/s for 0.5 s
    m = rig.backend.state()
    assert m is not None and m.ee_pos_desired is not None and m.ee_pos is not None
    assert np.linalg.norm(m.ee_pos_desired - m.ee_pos) < 0.01
    assert rig.emulator.gripper_goal == pytest.approx(0.04)
    assert rig.emulator.tracking_error()["p99"] < 0.02, rig.emulator.summary()


def test_rotation_command_turns_the_hand(rig: Rig) -> None:
    from sim2real.sim.arm.rotations import quat_conj, quat_mul, quat_to_rotvec

    rig.backend.enable()
    _, q0 = rig.emulator.ee_pose()
    rig.drive(np.array([0.0, 0.0, 0.0, 0.0, 0.0, 0.5, 0.02]), 0.4)
    time.sleep(0.1)
    turned = quat_to_rotvec(quat_mul(rig.emulator.ee_pose()[1], quat_conj(q0)))
    assert 0.15 < turned[2] < 0.25 and np.linalg.norm(turned[:2]) < 0.03, turned


@pytest.mark.parametrize("bad", [np.zeros(6), np.zeros(8), np.r_[np.zeros(6), np.nan], np.r_[np.inf, np.zeros(6)]])
def test_wrong_size_or_non_finite_command_raises_and_sends_nothing(rig: Rig, bad: np.ndarray) -> None:
    rig.backend.enable()
    assert wait_for(lambda: rig.commands_accepted() >= 1, 1.0)  # enable's hold
    before = rig.backend.counters()
    accepted = rig.commands_accepted(), rig.emulator.counters["gripper_goals"]
    with pytest.raises(ValueError):
        rig.backend.command(bad)
    time.sleep(0.05)
    after = rig.backend.counters()
    holds = after["holds"] - before["holds"]  # the deadman may hold meanwhile (no valid command came)
    assert after["targets_sent"] - before["targets_sent"] == holds
    assert after["gripper_sent"] == before["gripper_sent"]
    assert after["commands_invalid"] == before["commands_invalid"] + 1
    assert rig.commands_accepted() - accepted[0] <= holds
    assert rig.emulator.counters["gripper_goals"] == accepted[1]


def test_commands_before_enable_are_ignored(rig: Rig) -> None:
    rig.backend.command(np.array([0.1, 0, 0, 0, 0, 0, 0.04]))
    time.sleep(0.05)
    assert rig.backend.counters()["commands_ignored"] == 1
    assert rig.commands_accepted() == 0


def test_emulator_refuses_malformed_controller_commands(merged_rig: Rig) -> None:
    rig = merged_rig
    probe = Probe(rig.domain)
    try:
        assert wait_for(lambda: probe.forward.get_subscription_count() > 0, 10.0)  # discovery: slower on a busy host
        q_before = rig.emulator.data.qpos[:7].copy()
        probe.forward.publish(Float64MultiArray(data=[0.0] * 6))
        probe.forward.publish(Float64MultiArray(data=[*q_before[:6], float("nan")]))
        bad = JointTrajectory(joint_names=["fr3_joint1"], points=[JointTrajectoryPoint(positions=[0.0])])
        probe.trajectory.publish(bad)
        assert wait_for(lambda: sum(rig.emulator.rejected.values()) == 3, 2.0), rig.emulator.rejected
        assert rig.emulator.rejected == {"forward_size": 1, "forward_non_finite": 1, "trajectory_joints": 1}
        assert rig.emulator.counters["commands_accepted"] == 0
        np.testing.assert_allclose(rig.emulator.data.qpos[:7], q_before, atol=2e-3)  # still holding
    finally:
        probe.ros.close()


def test_emulator_follows_a_joint_trajectory(rig: Rig) -> None:
    probe = Probe(rig.domain)
    try:
        assert wait_for(lambda: probe.trajectory.get_subscription_count() > 0, 10.0)  # discovery: slower on a busy host
        q0 = rig.emulator.data.qpos[:7].copy()
        goal = q0 + np.array([0.1, -0.1, 0.0, 0.1, 0.0, -0.1, 0.2])
        names = list(T.arm_joint_names())
        order = [6, 0, 5, 1, 4, 2, 3]  # any joint order, by name
        point = JointTrajectoryPoint(positions=[float(goal[i]) for i in order])
        point.time_from_start.nanosec = 300_000_000
        probe.trajectory.publish(JointTrajectory(joint_names=[names[i] for i in order], points=[point]))
        assert wait_for(lambda: rig.emulator.counters["trajectories_accepted"] == 1, 1.0)
        time.sleep(0.5)
        np.testing.assert_allclose(rig.emulator.data.qpos[:7], goal, atol=0.01)
    finally:
        probe.ros.close()


def test_emulator_publishes_through_stream_faults() -> None:
    domain = unique_domain_id()
    emulator, _ = start_emulator(domain, StreamFaults(joint_units="deg"))
    backend = Ros2ControlArm("ee_delta", {"domain_id": domain})
    try:
        backend.connect(5.0)
        m = backend.state()
        assert m is not None and m.joint_pos is not None
        np.testing.assert_allclose(m.joint_pos, np.degrees(emulator.data.qpos[:9]), atol=0.2)
    finally:
        backend.close()
        emulator.close()


def test_reaching_the_goal_ends_the_episode_with_a_new_target(rig: Rig) -> None:
    """The operator side: drive the hand to the mission's goal through the backend; the
    simulated task counts a success and draws the next goal (the arm is not moved)."""
    rig.backend.enable()
    first = rig.emulator.mission()
    assert first is not None and first.goal is not None and first.episodes == 0
    end = time.monotonic() + 4.0

    def successes() -> int:
        mission = rig.emulator.mission()
        return 0 if mission is None else mission.successes

    with control_path():  # a CI run beside other work fell short at normal priority
        while successes() == 0 and time.monotonic() < end:
            m = rig.backend.state()
            assert m is not None and m.ee_pos is not None
            v = 3.0 * (first.goal - m.ee_pos)
            v *= min(1.0, 0.4 / max(np.linalg.norm(v), 1e-9))
            rig.backend.command(np.r_[v, 0.0, 0.0, 0.0, 0.04])
            time.sleep(0.05)
    after = rig.emulator.mission()
    assert after is not None and after.goal is not None
    assert after.successes == 1 and after.episodes == 1, rig.emulator.summary()
    assert np.linalg.norm(after.goal - first.goal) > 1e-6
    assert np.linalg.norm(rig.emulator.ee_pose()[0] - first.goal) < 0.03  # not teleported
