"""The ``ur`` backend against the emulated ur_robot_driver: enable refused while the robot's
program does not run, a protective stop (or the program stopped, or the speed scaling at
0) during motion latched with the arm stopped, and the reach run through it."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator

import numpy as np
import pytest
from ros2_control_rig import wait_for
from std_msgs.msg import Float64
from ur_rig import PERIOD, UrRig, ur_rig

from sim2real.errors import ConfigError
from sim2real.hardware.backend import HardwareError, Phase, backend_class
from sim2real.hardware.emulator.base import emulator_class
from sim2real.hardware.emulator.ros2_control_ur import UrDriverEmulator, UrDriverEmulatorConfig
from sim2real.hardware.ros2_control import topics as T
from sim2real.hardware.ros2_control import ur_topics as UT
from sim2real.hardware.ros2_control.ur import UrArm
from sim2real.sim.arm import ur5e as U


@pytest.fixture
def rig() -> Iterator[UrRig]:
    yield from ur_rig()


def test_ur_is_registered_and_refuses_franka_options() -> None:
    assert backend_class("ur") is UrArm and emulator_class("ur") is UrDriverEmulator
    with pytest.raises(ConfigError, match=r"backend_options\.arm_id"):
        UrArm("ee_delta", {"domain_id": 5, "arm_id": "fr3"})
    with pytest.raises(ConfigError, match="domain_id naming the robot's own DDS domain"):
        UrArm("ee_delta", {})
    assert UrArm("ee_delta", {"namespace": "ur"}).names == U.JOINTS


def test_enable_is_refused_while_the_program_does_not_run() -> None:
    with contextlib.contextmanager(ur_rig)(UrDriverEmulatorConfig(program_running=False)) as rig:
        assert wait_for(lambda: rig.backend.driver_state()["program_running"] is False, 2.0)
        with pytest.raises(HardwareError, match="robot program is not running"):
            rig.backend.enable()
        assert rig.backend.phase == Phase.CONNECTED
        assert [i.status for i in rig.backend.driver_items()][:2] == ["FAIL", "FAIL"]
        assert rig.client.call(UT.PLAY).success  # the operator presses play
        assert wait_for(lambda: (rig.backend.driver_state()["speed_scaling_percent"] or 0.0) > 0.0, 2.0)
        rig.backend.enable()
        assert rig.backend.phase == Phase.ENABLED
        assert [i.status for i in rig.backend.driver_items()] == ["PASS"] * 3


def test_a_protective_stop_during_motion_latches_and_the_arm_stops(rig: UrRig) -> None:
    rig.backend.enable()
    host = threading.Thread(target=rig.reach, args=(1.2,))  # the host commands throughout
    host.start()
    time.sleep(0.5)
    assert rig.flange_speed(0.1) > 0.03  # under way toward the first target
    rig.emulator.protective_stop()
    stopped, sent = time.monotonic(), rig.backend.counters()["targets_sent"]
    accepted = rig.emulator.counters["commands_accepted"]  # none is accepted after the stop
    host.join()  # the rest of its commands: nothing is sent
    assert rig.backend.phase == Phase.ESTOPPED
    assert "ur_robot_driver" in rig.backend.health().reason
    assert rig.backend.last_hold["time"] - stopped < 3 * PERIOD
    assert rig.flange_speed(0.3) < 0.005
    # The stream stopped with the hold (one target a period at most, within the 3 periods
    # above); the robot refused exactly what it had not taken before its stop: those in
    # flight then (more on a loaded host) and those sent since.
    total = rig.backend.counters()["targets_sent"]
    assert total - sent <= 4, total - sent
    assert wait_for(lambda: rig.emulator.rejected.get("program_not_running", 0) == total - accepted, 1.0), \
        (rig.emulator.rejected, total, accepted)
    # The robot runs again (unlocked, played): the latch holds until connect().
    assert wait_for(lambda: rig.client.call(UT.UNLOCK_PROTECTIVE_STOP).success, 2.0)
    assert rig.client.call(UT.PLAY).success
    assert wait_for(lambda: rig.backend.driver_state()["speed_scaling_percent"] == 100.0, 2.0)
    with pytest.raises(HardwareError, match="estopped"):
        rig.backend.enable()
    rig.backend.connect(5.0)
    rig.backend.enable()
    assert rig.backend.phase == Phase.ENABLED


def test_the_program_stopped_from_the_dashboard_latches(rig: UrRig) -> None:
    rig.backend.enable()
    assert rig.client.call(UT.STOP).success
    assert wait_for(lambda: rig.backend.phase == Phase.ESTOPPED, 1.0)
    assert "ur_robot_driver" in rig.backend.health().reason  # the first of the two the driver shows
    assert wait_for(lambda: any("program stopped" in r for r in rig.backend.driver_stops), 1.0)


@pytest.mark.parametrize("scaling", [0.0, float("nan")])
def test_speed_scaling_at_zero_or_garbled_latches(rig: UrRig, scaling: float) -> None:
    """The scaling falls to 0 while the program still runs (a pause, a safeguard stop); a
    non-finite value is read as a stop."""
    rig.backend.enable()
    spoof = rig.client.ros.node.create_publisher(Float64, UT.SPEED_SCALING, T.controller_qos())
    assert wait_for(lambda: spoof.get_subscription_count() > 0, 2.0)
    spoof.publish(Float64(data=scaling))
    assert wait_for(lambda: rig.backend.phase == Phase.ESTOPPED, 1.0)
    assert "speed scaling" in rig.backend.health().reason


def test_the_reach_through_the_emulated_driver_succeeds(rig: UrRig) -> None:
    rig.backend.enable()
    rig.reach(2 * U.REACH_SECONDS, stop_when=lambda: sum(rig.emulator.episodes) >= 2)
    mission = rig.emulator.mission()
    assert mission is not None and mission.successes >= 2, rig.report()
    assert mission.successes == mission.episodes  # none timed out
    m = rig.backend.state()
    assert m is not None and m.ee_pos is not None
    assert np.linalg.norm(m.ee_pos - rig.emulator.ee_pos()) < 0.005  # the backend's FK: the robot's flange
    assert rig.backend.phase == Phase.ENABLED


def test_the_reach_through_the_scaled_trajectory_controller_succeeds() -> None:
    """ur_control.launch.py's default controller: one trajectory point per target, which
    the driver's scaled joint trajectory controller interpolates (nothing goes to the
    forward controller, which is not running)."""
    jtc = "scaled_joint_trajectory_controller"
    with contextlib.contextmanager(ur_rig)(UrDriverEmulatorConfig(controller=jtc, unlock_delay_s=0.3),
                                           options={"controller": jtc}) as rig:
        assert rig.backend.driver_state()["controller"] == jtc
        rig.backend.enable()
        items = {i.name: i for i in rig.backend.driver_items()}
        assert items["motion controller"].status == "PASS"
        assert items["motion controller"].expected == f"{jtc} loaded"
        rig.reach(2 * U.REACH_SECONDS, stop_when=lambda: sum(rig.emulator.episodes) >= 2)
        mission = rig.emulator.mission()
        assert mission is not None and mission.successes >= 2, rig.report()
        counts = rig.emulator.counters
        assert counts["trajectories_accepted"] == counts["commands_accepted"] > 20
        assert rig.backend.counters()["targets_sent"] >= counts["trajectories_accepted"]


def test_the_reach_through_the_forward_velocity_controller_succeeds_and_every_hold_sends_zero() -> None:
    """Velocities streamed (the interpolated targets' own plus a pull onto them); a hold,
    the deadman's or a close, sends zero, as the controller would otherwise keep the last
    velocity forever."""
    fvc = "forward_velocity_controller"
    with contextlib.contextmanager(ur_rig)(UrDriverEmulatorConfig(controller=fvc, unlock_delay_s=0.3),
                                           options={"controller": fvc}) as rig:
        rig.backend.enable()
        items = {i.name: i for i in rig.backend.driver_items()}
        assert (items["motion controller"].status, items["motion controller"].expected) == ("PASS", f"{fvc} loaded")
        rig.reach(2 * U.REACH_SECONDS, stop_when=lambda: sum(rig.emulator.episodes) >= 2)
        mission = rig.emulator.mission()
        assert mission is not None and mission.successes >= 2, rig.report()
        assert rig.emulator.counters["commands_accepted"] > 20 and not rig.emulator.rejected
        # The reach stopped commanding: the deadman's hold sends zero and the arm stands.
        assert wait_for(lambda: rig.backend.phase == Phase.CONNECTED, 1.0)
        assert "no command" in rig.backend.last_hold["reason"]
        assert wait_for(lambda: rig.emulator.last_command is not None and not np.any(rig.emulator.last_command[1]),
                        1.0)
        assert rig.flange_speed(0.3) < 0.002
        # Moving again, then closed mid-motion: the zero is acknowledged before the node goes.
        rig.backend.enable()
        host = threading.Thread(target=rig.reach, args=(0.6,))
        host.start()
        time.sleep(0.4)
        assert np.any(rig.emulator.last_command[1])  # under way
        rig.backend.close()
        host.join()
        assert not np.any(rig.emulator.last_command[1])
        assert rig.flange_speed(0.3) < 0.002


def test_a_controller_the_driver_does_not_have_is_refused() -> None:
    with pytest.raises(ConfigError, match=r"controller.*forward_position_controller, forward_velocity_controller, "
                                          r"scaled_joint_trajectory"):
        UrArm("ee_delta", {"domain_id": 5, "controller": "joint_trajectory_controler"})
    with pytest.raises(ConfigError, match="controller"):
        UrDriverEmulatorConfig(controller="nope").validate()
