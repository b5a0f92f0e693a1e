"""The ur_robot_driver emulator against the driver's own interface, spoken by a plain rclpy
client as a user's tools speak it: the six joints' stream, the latched program state, the
speed scaling in percent, the forward controller, and the dashboard's play / stop /
unlock_protective_stop around a protective stop."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from ros2_control_rig import wait_for
from sensor_msgs.msg import JointState
from std_msgs.msg import Bool, Float64MultiArray
from ur_rig import PERIOD, UrRig, ur_rig

from sim2real.hardware.emulator.ros2_control_ur import UrDriverEmulatorConfig
from sim2real.hardware.ros2_control import topics as T
from sim2real.hardware.ros2_control import ur_topics as UT
from sim2real.sim.arm import ur5e as U


@pytest.fixture
def driver() -> Iterator[UrRig]:
    """The emulated driver and a user's client (no backend connected)."""
    yield from ur_rig(connect=False)


def stream_to(rig: UrRig, q: np.ndarray, seconds: float) -> None:
    """Forward commands from the emulated arm's joints to ``q`` over ``seconds``, at 100 Hz."""
    start = rig.emulator.data.qpos[:6].copy()
    steps = max(int(seconds / 0.01), 1)
    for k in range(1, steps + 1):
        rig.client.commands.publish(Float64MultiArray(data=[float(x) for x in start + (q - start) * k / steps]))
        time.sleep(0.01)


def test_the_driver_streams_six_joints_the_scaling_in_percent_and_a_latched_program_state(driver: UrRig) -> None:
    arrivals: list[float] = []
    names: list[list[str]] = []

    def on_state(msg: JointState) -> None:
        arrivals.append(time.monotonic())
        names.append(list(msg.name))

    driver.client.ros.node.create_subscription(JointState, UT.JOINT_STATES, on_state, T.state_qos())
    assert wait_for(lambda: len(arrivals) > 10, 5.0)
    time.sleep(1.0)
    # The driver's rate is its real-time loop's; a normal-priority client on a loaded
    # machine may miss some (best effort, keep last 1), but hears most.
    timing = driver.emulator.timing.summary(since=time.monotonic() - 1.0)
    assert timing["rate_hz"] > 0.9 * driver.emulator.config.state_rate_hz, timing
    recent = [t for t in arrivals if t > arrivals[-1] - 0.8]
    assert len(recent) / 0.8 > 0.5 * driver.emulator.config.state_rate_hz
    assert names[-1] == list(U.JOINTS)
    assert wait_for(lambda: driver.client.last_scaling() == 100.0, 2.0)  # percent, as the broadcaster sends
    # A subscriber that comes late still hears that the program runs (transient local).
    late: list[bool] = []
    driver.client.ros.node.create_subscription(Bool, UT.PROGRAM_RUNNING, lambda m: late.append(bool(m.data)),
                                               UT.latched_qos())
    assert wait_for(lambda: late == [True], 2.0), late


def test_forward_commands_move_the_arm_and_malformed_ones_are_refused(driver: UrRig) -> None:
    assert wait_for(lambda: driver.client.commands.get_subscription_count() > 0, 2.0)
    goal = U.HOME_QPOS + np.array([0.2, -0.1, 0.1, 0.0, 0.1, 0.3])
    stream_to(driver, goal, 0.6)
    assert wait_for(lambda: np.abs(driver.emulator.data.qpos[:6] - goal).max() < 0.01, 1.5)
    driver.client.commands.publish(Float64MultiArray(data=[0.0] * 5))
    driver.client.commands.publish(Float64MultiArray(data=[float("nan")] * 6))
    assert wait_for(lambda: driver.emulator.rejected == {"forward_size": 1, "forward_non_finite": 1}, 1.0), \
        driver.emulator.rejected
    time.sleep(0.2)
    assert np.abs(driver.emulator.data.qpos[:6] - goal).max() < 0.01  # the last valid command still holds


def test_a_protective_stop_stops_the_arm_until_unlocked_and_played() -> None:
    with contextlib.contextmanager(ur_rig)(UrDriverEmulatorConfig(unlock_delay_s=2.0), connect=False) as driver:
        protective_stop_to_play(driver)


def protective_stop_to_play(driver: UrRig) -> None:
    assert wait_for(lambda: driver.client.program == [True], 2.0)
    goal = U.HOME_QPOS + np.array([0.6, 0.0, 0.0, 0.0, 0.0, 0.0])
    streaming = threading.Thread(target=stream_to, args=(driver, goal, 1.0))
    streaming.start()
    time.sleep(0.3)  # under way: the pan joint turns at 0.6 rad/s
    driver.emulator.protective_stop()
    stopped = time.monotonic()
    time.sleep(0.1)  # the stop's own settling
    stopped_at = driver.emulator.data.qpos[:6].copy()
    streaming.join()  # the rest of the stream: refused
    assert driver.emulator.rejected.get("program_not_running", 0) > 10
    assert np.abs(driver.emulator.data.qpos[:6] - stopped_at).max() < 0.02
    assert np.abs(driver.emulator.data.qpos[0] - goal[0]) > 0.2
    assert wait_for(lambda: driver.client.program == [True, False], 1.0), driver.client.program
    assert wait_for(lambda: driver.client.last_scaling() == 0.0, 2.0)

    assert not driver.client.call(UT.PLAY).success  # still protective-stopped
    early = driver.client.call(UT.UNLOCK_PROTECTIVE_STOP)
    assert not early.success and "Cannot unlock" in early.message
    time.sleep(max(stopped + driver.emulator.config.unlock_delay_s - time.monotonic(), 0.0) + 0.05)
    assert driver.client.call(UT.UNLOCK_PROTECTIVE_STOP).success
    assert wait_for(lambda: driver.client.last_scaling() == 0.0, 1.0)  # unlocked, the program not yet playing
    assert driver.client.call(UT.PLAY).success
    assert wait_for(lambda: driver.client.program == [True, False, True], 1.0)
    assert wait_for(lambda: driver.client.last_scaling() == 100.0, 2.0)
    accepted = driver.emulator.counters["commands_accepted"]
    stream_to(driver, goal, 0.5)
    assert driver.emulator.counters["commands_accepted"] > accepted + 10
    assert wait_for(lambda: abs(driver.emulator.data.qpos[0] - goal[0]) < 0.02, 1.5)


def test_dashboard_stop_stops_the_program(driver: UrRig) -> None:
    assert wait_for(lambda: driver.client.program == [True], 2.0)
    assert driver.client.call(UT.STOP).success
    assert wait_for(lambda: driver.client.program == [True, False], 1.0)
    assert wait_for(lambda: driver.client.last_scaling() == 0.0, 2.0)
    driver.client.commands.publish(Float64MultiArray(data=[float(x) for x in U.HOME_QPOS + 0.1]))
    assert wait_for(lambda: driver.emulator.rejected.get("program_not_running", 0) == 1, 1.0)
    time.sleep(5 * PERIOD)
    assert np.abs(driver.emulator.data.qpos[:6] - U.HOME_QPOS).max() < 0.01


def _trajectory(q: np.ndarray, seconds: float) -> Any:
    from builtin_interfaces.msg import Duration
    from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

    point = JointTrajectoryPoint(positions=[float(x) for x in q],
                                 time_from_start=Duration(sec=int(seconds), nanosec=int(seconds % 1 * 1e9)))
    return JointTrajectory(joint_names=list(reversed(U.JOINTS)), points=[point])  # any order, by name


def test_the_scaled_trajectory_controller_runs_at_the_speed_scaling() -> None:
    """Driven on an injected clock (the emulator's physics update, called directly): at a
    speed slider of 50 % a 0.4 s trajectory is half done after 0.4 s and done after 0.8 s;
    after a protective stop (scaling 0) its time stands still."""
    from dds_domains import unique_domain_id

    from sim2real.hardware.emulator.ros2_control_ur import UrDriverEmulator

    cfg = UrDriverEmulatorConfig(controller="scaled_joint_trajectory_controller", speed_slider=0.5,
                                 domain_id=unique_domain_id())
    emulator = UrDriverEmulator(cfg)  # not served: this test is its clock
    try:
        start = U.HOME_QPOS.copy()
        goal = start + np.r_[0.2, -0.1, 0.1, 0.0, 0.1, -0.2]
        emulator._physics(100.0, 1)
        emulator._on_trajectory(_trajectory(np.array(goal[::-1]), 0.4))
        assert emulator.counters["trajectories_accepted"] == 1
        begun = emulator._q_measured.copy()  # the controller starts from where the arm is
        emulator._physics(100.4, 1)
        assert emulator.scaled_time == pytest.approx(0.2)
        halfway = emulator.target.sample(emulator.scaled_time)[0]
        np.testing.assert_allclose(halfway, (begun + goal) / 2, atol=1e-9)
        emulator._physics(100.8, 1)
        np.testing.assert_allclose(emulator.target.sample(emulator.scaled_time)[0], goal, atol=1e-9)
        emulator.protective_stop()
        before = emulator.scaled_time
        emulator._physics(101.8, 1)
        assert emulator.scaled_time == before
        emulator._on_trajectory(_trajectory(np.array(goal[::-1]), 0.4))  # the program stopped with it
        assert emulator.rejected == {"program_not_running": 1}
    finally:
        emulator.close()


def test_the_emulated_driver_runs_the_controller_the_hosts_options_name() -> None:
    """``deploy --emulate`` and ``deploy check --emulate`` hand the backend's options to the
    emulator (``hardware emulate --backend-options``): the driver runs the controller the
    backend will command; options that are the host's alone change nothing."""
    from dds_domains import unique_domain_id

    from sim2real.hardware.emulator.base import EmulatorSettings
    from sim2real.hardware.emulator.ros2_control_ur import UrDriverEmulator

    for options, controller in (({"controller": "scaled_joint_trajectory_controller", "read_rate_hz": 100},
                                 "scaled_joint_trajectory_controller"),
                                ({"read_rate_hz": 100}, "forward_position_controller")):
        emulator = UrDriverEmulator.launch(EmulatorSettings(domain_id=unique_domain_id(), backend_options=options))
        try:
            assert emulator.config.controller == controller
            topics = {sub.topic_name for sub in emulator.ros.node.subscriptions}
            expected = UT.SCALED_TRAJECTORY if controller != "forward_position_controller" else UT.POSITION_COMMANDS
            assert f"/{expected}" in topics, topics
        finally:
            emulator.close()


def test_the_velocity_controller_keeps_its_last_velocity_until_a_joint_limit_stops_the_robot() -> None:
    """What the ``ur`` backend guards against: one velocity sent and nothing after (a host
    that died) moves the arm on, as the real controller does, until the robot's safety
    system makes a protective stop at the joint's position limit."""
    cfg = UrDriverEmulatorConfig(controller="forward_velocity_controller", unlock_delay_s=0.3)
    with contextlib.contextmanager(ur_rig)(cfg, connect=False) as driver:
        emulator, pub = driver.emulator, driver.client.velocities
        assert wait_for(lambda: pub.get_subscription_count() > 0, 3.0)
        start = emulator.data.qpos[5]
        pub.publish(Float64MultiArray(data=[0.0, 0.0, 0.0, 0.0, 0.0, 3.0]))  # wrist 3 at 3 rad/s, once
        assert wait_for(lambda: emulator.data.qpos[5] - start > 1.0, 3.0)
        assert emulator.program_running and emulator.protective_stopped_at is None  # still moving, 1 s later
        # wrist 3 reaches +2 pi (about 2 s from home): the protective stop, the arm at rest there.
        assert wait_for(lambda: emulator.protective_stopped_at is not None, 5.0), emulator.data.qpos[5]
        assert not emulator.program_running
        assert wait_for(lambda: driver.client.program[-1:] == [False], 1.0), driver.client.program[-3:]  # heard
        q = emulator.data.qpos[5]
        assert q > U.JOINT_UPPER[5] - 0.2
        time.sleep(0.3)
        assert abs(emulator.data.qpos[5] - q) < 0.02
        # Malformed velocities are refused like positions.
        assert wait_for(lambda: driver.client.call(UT.UNLOCK_PROTECTIVE_STOP).success, 2.0)
        assert driver.client.call(UT.PLAY).success
        pub.publish(Float64MultiArray(data=[0.0, float("nan"), 0.0, 0.0, 0.0, 0.0]))
        pub.publish(Float64MultiArray(data=[0.1] * 5))
        assert wait_for(lambda: emulator.rejected.get("forward_non_finite") == 1
                        and emulator.rejected.get("forward_size") == 1, 2.0), emulator.rejected
