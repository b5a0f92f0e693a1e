"""Faults on the ros2_control arm, each ending in the documented safe state (the arm
holding still) within 3 control periods (0.15 s), measured at the robot (the emulator):

=================  ===========================================  =====================================
fault              here (backend + emulator)                     a real Franka under ros2_control
=================  ===========================================  =====================================
policy killed      commands stop: the backend's deadman sends    same (the backend is the deadman; the
                   the measured joints as the target once        forward controller never times out)
bridge killed      nothing more is sent: the forward controller  same; the arm stops at the last
                   holds the last (interpolated) target          streamed target, <= 50 ms ahead
link dropped       joint states stop: the backend holds          the controller holds its last target;
                   (its hold may not arrive; the controller      libfranka's own link to the arm
                   still holds the last target)                  brakes on lost packets
emulator restart   state stale -> hold; after the restart the    the arm comes back holding; the host
                   backend sees state again but stays CONNECTED  must enable again
=================  ===========================================  =====================================
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

from sim2real.hardware.backend import HardwareError, Phase

sys.path.insert(0, os.path.dirname(__file__))
from ros2_control_rig import Rig, start_emulator, wait_for

PERIOD = 0.05


def ee_speed_after(rig: Rig, start: float, seconds: float = 0.2) -> float:
    """Mean fingertip speed (m/s) over ``seconds`` from ``start`` (monotonic)."""
    time.sleep(max(start - time.monotonic(), 0.0))
    p0 = rig.emulator.ee_pose()[0]
    time.sleep(seconds)
    return float(np.linalg.norm(rig.emulator.ee_pose()[0] - p0) / seconds)


def test_policy_killed_the_backend_holds_within_three_periods(rig: Rig) -> None:
    rig.backend.enable()
    rig.drive(np.array([0.15, 0.0, 0.0, 0.0, 0.0, 0.0, 0.04]), 0.4)
    last = time.monotonic()  # the policy dies here: no more command() calls
    assert wait_for(lambda: rig.backend.phase == Phase.CONNECTED, 0.5)
    assert wait_for(lambda: rig.backend.last_hold.get("time", 0.0) > last, 0.1)
    received = rig.emulator.last_command
    assert received is not None
    arrived, hold = received
    assert arrived - last < 3 * PERIOD, f"hold reached the robot {arrived - last:.3f} s after the last command"
    m = rig.backend.state()
    assert m is not None and m.joint_pos is not None
    np.testing.assert_allclose(hold, m.joint_pos[:7], atol=0.02)  # where the arm was: no jump
    assert ee_speed_after(rig, last + 3 * PERIOD) < 0.02  # and it stays there
    assert "no command" in rig.backend.health().reason


def test_bridge_killed_the_controller_holds_the_last_target(rig: Rig) -> None:
    """A backend process killed with SIGKILL mid-motion says nothing more; ros2_control's
    forward controller (the emulator) holds its last target forever."""
    child = subprocess.Popen(
        [sys.executable, "-c", _CHILD, str(rig.domain)], stdout=subprocess.PIPE, text=True, env=dict(os.environ))
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "commanding"
        # Moving: the first commands' arrival and the arm's acceleration take ~0.3 s idle,
        # longer while the rest of a loaded suite shares the cores.
        moving, deadline = 0.0, time.monotonic() + 3.0
        while moving <= 0.05 and time.monotonic() < deadline:
            moving = ee_speed_after(rig, time.monotonic(), 0.1)
        child.send_signal(signal.SIGKILL)
        killed = time.monotonic()
        child.wait(timeout=5)
    finally:
        if child.poll() is None:
            child.kill()
    assert moving > 0.05  # it was moving at ~0.1 m/s
    received = rig.emulator.last_command
    assert received is not None and received[0] < killed + 0.01  # nothing after the kill
    assert ee_speed_after(rig, killed + 3 * PERIOD, 0.3) < 0.01
    time.sleep(0.2)
    last = rig.emulator.last_command
    assert last is not None and last[0] == received[0]


_CHILD = """
import sys, time
import numpy as np
from sim2real.hardware.ros2_control.backend import Ros2ControlArm
b = Ros2ControlArm("ee_delta", {"domain_id": int(sys.argv[1])})
b.connect(10.0)
b.enable()
print("commanding", flush=True)
while True:
    b.command(np.array([0.0, 0.1, 0.0, 0.0, 0.0, 0.0, 0.04]))
    time.sleep(0.05)
"""


def test_link_dropped_the_backend_holds_on_stale_state(rig: Rig) -> None:
    rig.backend.enable()
    rig.drive(np.array([0.0, 0.0, -0.1, 0.0, 0.0, 0.0, 0.04]), 0.2)
    rig.emulator.faults.latency = 1000.0  # no joint state leaves the robot any more
    dropped = time.monotonic()
    while rig.backend.phase == Phase.ENABLED and time.monotonic() < dropped + 1.0:
        rig.backend.command(np.array([0.0, 0.0, -0.1, 0.0, 0.0, 0.0, 0.04]))
        time.sleep(0.01)
    assert rig.backend.phase == Phase.CONNECTED
    assert "stale" in rig.backend.health().reason
    held = rig.backend.last_hold["time"] - dropped
    assert held < 3 * PERIOD, f"held {held:.3f} s after the link dropped"
    # The target is fixed from the hold on; the arm finishes the way to it (the last
    # target streamed, computed from a state <= state_timeout old: < 1 cm at 0.1 m/s).
    hold_at = rig.emulator.last_command
    at_hold = rig.emulator.ee_pose()[0]
    assert ee_speed_after(rig, dropped + 0.3) < 0.005
    assert np.linalg.norm(rig.emulator.ee_pose()[0] - at_hold) < 0.01
    assert rig.emulator.last_command is hold_at  # nothing sent after the hold
    with pytest.raises(HardwareError, match="fresh"):
        rig.backend.enable()


def test_an_estop_while_enabling_is_never_overridden(rig: Rig) -> None:
    """enable() waits for a fresh state (the link is down here); an e-stop meanwhile must
    win: before, the states' return let enable() finish and set ENABLED over ESTOPPED."""
    rig.emulator.faults.latency = 1000.0  # no joint state leaves the robot
    assert wait_for(lambda: rig.backend.health().state_age > 0.2, 2.0)
    outcome: list[BaseException | None] = []

    def enable() -> None:
        try:
            rig.backend.enable()
            outcome.append(None)
        except HardwareError as exc:
            outcome.append(exc)

    enabling = threading.Thread(target=enable)
    enabling.start()
    time.sleep(0.2)  # enable() is waiting for a fresh state
    rig.backend.estop("operator")
    rig.emulator.faults.latency = 0.0  # the states come back within enable()'s deadline
    enabling.join(5.0)
    assert rig.backend.phase == Phase.ESTOPPED
    assert len(outcome) == 1 and isinstance(outcome[0], HardwareError), outcome


def test_emulator_killed_then_restarted(rig: Rig) -> None:
    rig.backend.enable()
    killed: list[float] = []

    def kill() -> None:
        killed.append(time.monotonic())
        rig.emulator.close()

    threading.Timer(0.2, kill).start()
    rig.drive(np.array([0.05, 0.0, 0.0, 0.0, 0.0, 0.0, 0.04]), 0.6)  # the policy goes on commanding
    assert killed and rig.backend.phase == Phase.CONNECTED
    assert rig.backend.last_hold["time"] - killed[0] < 3 * PERIOD
    assert wait_for(lambda: rig.backend.health().state_age > 0.3, 1.0)
    health = rig.backend.health()
    assert health.phase == Phase.CONNECTED and "stale" in health.reason
    emulator, _ = start_emulator(rig.domain)  # the robot's ROS side comes back
    try:
        assert wait_for(lambda: rig.backend.health().state_age < 0.05, 5.0), rig.backend.health()
        assert rig.backend.phase == Phase.CONNECTED  # never enables itself
        rig.backend.enable()
        assert rig.backend.phase == Phase.ENABLED
    finally:
        rig.backend.safe("test over")
        emulator.close()


def test_estop_latches_until_connect(rig: Rig) -> None:
    rig.backend.enable()
    rig.drive(np.array([0.1, 0.0, 0.0, 0.0, 0.0, 0.0, 0.04]), 0.2)
    rig.backend.estop("operator")
    assert rig.backend.phase == Phase.ESTOPPED
    time.sleep(0.1)  # what was in flight (the last streamed target, the hold) has arrived
    accepted = rig.commands_accepted()
    rig.backend.command(np.array([0.1, 0.0, 0.0, 0.0, 0.0, 0.0, 0.04]))
    rig.backend.safe("still")  # safe() does not leave the e-stop
    with pytest.raises(HardwareError, match=r"cannot enable: estopped .*connect\(\) again"):
        rig.backend.enable()
    time.sleep(0.3)
    assert rig.backend.phase == Phase.ESTOPPED
    assert rig.commands_accepted() == accepted
    assert rig.backend.counters()["commands_ignored"] >= 1
    rig.backend.connect(2.0)
    assert rig.backend.phase == Phase.CONNECTED
    rig.backend.enable()
    assert rig.backend.phase == Phase.ENABLED


def test_gripper_node_died_the_backend_holds(rig: Rig) -> None:
    """franka_gripper_node stops: arm states arrive without fresh fingers; after
    gripper_state_timeout (0.5 s) they are refused, the state goes stale and the arm is
    held, as on a stale arm stream."""
    rig.backend.enable()
    rig.drive(np.array([0.0, 0.05, 0.0, 0.0, 0.0, 0.0, 0.04]), 0.2)
    if rig.backend.phase != Phase.ENABLED:  # a loaded host stalled the drive: held already
        rig.backend.enable()
    refused = rig.backend.counters().get("refused_gripper_stale", 0)
    rig.emulator.gripper_node_running = False
    died = time.monotonic()
    while rig.backend.phase == Phase.ENABLED and time.monotonic() < died + 2.0:
        rig.backend.command(np.array([0.0, 0.05, 0.0, 0.0, 0.0, 0.0, 0.04]))
        time.sleep(0.05)
    held = rig.backend.last_hold["time"] - died
    assert rig.backend.phase == Phase.CONNECTED and "stale" in rig.backend.health().reason
    # Within the timeout and 3 periods (earlier only if the loaded host stalls the arm's stream too).
    assert 0.0 < held < 0.5 + 0.15, f"held {held:.3f} s after the gripper node died"
    assert rig.backend.counters()["refused_gripper_stale"] > refused  # the arm states went on, refused
