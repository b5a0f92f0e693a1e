"""The PX4 backend (pymavlink) against the emulated PX4 over real UDP on loopback:
connect on heartbeats and state, enable as PX4 requires (stream, OFFBOARD, ARM, each
acked), CTBR commands fly the simulated drone, safe is PX4's own AUTO.LAND, the e-stop
is a forced disarm, and a refused arming is reported with PX4's own words."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from dds_domains import unique_domain_id
from px4_rig import ServedVehicle, backend_for, fly, serve_vehicle, wait_for

import sim2real  # noqa: F401  (first: picks MUJOCO_GL before mujoco is imported)
from sim2real.hardware.backend import HardwareError, Phase, backend_class
from sim2real.hardware.emulator.px4_control import PositionTarget
from sim2real.hardware.px4.backend import Px4Backend
from sim2real.sim.drone import constants as C

CLIMB = 1.2 * C.HOVER_THRUST
"""N: about 1 m up in a second, well below the task's 4 m ceiling."""

vehicle_fixture = pytest.fixture(name="vehicle")(serve_vehicle)


def test_enable_flies_and_safe_is_px4s_own_landing(vehicle: ServedVehicle) -> None:
    backend = backend_for(vehicle)
    try:
        backend.connect(timeout=5.0)
        assert backend.phase is Phase.CONNECTED and backend.health().state_age < 0.2
        assert set(backend.detail()["stream_requests"].values()) == {"ACCEPTED"}
        states: list[float] = []
        backend.on_state(lambda m: states.append(time.monotonic()))
        time.sleep(1.0)
        assert 80 <= len(states) <= 110, len(states)  # asked for at state_hz (100), PX4's default is slower
        state = backend.state()
        assert state is not None and state.base_pos is not None
        assert abs(float(state.base_pos[2])) < 0.05  # on the ground at PX4's local origin
        backend.enable()
        assert backend.phase is Phase.ENABLED
        assert vehicle.emu.commander.mode == "OFFBOARD" and vehicle.emu.commander.armed
        fly(backend, 1.0, CLIMB)
        state = backend.state()
        assert state is not None and state.base_pos is not None and state.base_lin_vel is not None
        assert float(state.base_pos[2]) > 0.3 and float(state.base_lin_vel[2]) > 0.2  # up is +z (ENU)
        assert float(state.base_pos[2]) == pytest.approx(vehicle.emu.data.qpos[2] - vehicle.emu.origin[2], abs=0.1)
        backend.safe("test")
        assert backend.phase is Phase.CONNECTED and backend.health().reason == "test"
        assert wait_for(lambda: vehicle.emu.commander.mode == "AUTO.LAND", 1.0)
        assert wait_for(lambda: not vehicle.emu.commander.armed, 8.0)  # landed, then disarmed by PX4
        assert vehicle.emu.landed() and vehicle.emu.crashes == 0
    finally:
        backend.close()
    assert backend.phase is Phase.DISCONNECTED


def test_velocity_commands_go_as_local_ned_velocity_setpoints(vehicle: ServedVehicle) -> None:
    """The ``velocity`` space: each filtered ``[vx, vy, vz]`` (ENU) goes as a
    SET_POSITION_TARGET_LOCAL_NED velocity (NED, the position ignored), zero velocity
    streamed before OFFBOARD; PX4 flies it, and a command of the other space's size is refused."""
    backend = backend_class("px4")("velocity", {**vehicle.emu.connect_options(), "stale_after": 0.5})
    try:
        backend.connect(timeout=5.0)
        backend.enable()
        assert vehicle.emu.commander.mode == "OFFBOARD" and vehicle.emu.commander.armed
        target = vehicle.emu.target
        assert isinstance(target, PositionTarget) and target.position is None
        assert target.velocity == pytest.approx(np.zeros(3)) and vehicle.emu.landed()  # idle on the pad
        for velocity, seconds in (([0.0, 0.0, 0.6], 1.5), ([0.5, -0.3, 0.0], 2.0)):
            end = time.monotonic() + seconds
            while time.monotonic() < end:
                backend.command(np.array(velocity))
                time.sleep(0.02)
        target = vehicle.emu.target
        assert isinstance(target, PositionTarget) and target.velocity == pytest.approx([0.5, -0.3, 0.0])
        state = backend.state()
        assert state is not None and state.base_lin_vel is not None and state.base_pos is not None
        assert state.base_lin_vel == pytest.approx([0.5, -0.3, 0.0], abs=0.1)  # east, south: ENU both ways
        assert float(state.base_pos[2]) > 0.5
        with pytest.raises(ValueError, match=r"3 finite numbers \[vx, vy, vz\]"):
            backend.command(np.array([1.0, 0.0, 0.0, 0.0]))
        backend.safe("test")
        assert wait_for(lambda: not vehicle.emu.commander.armed, 10.0)  # PX4's landing, then its disarm
        assert vehicle.emu.crashes == 0
    finally:
        backend.close()


def test_stale_commands_hand_over_to_px4s_landing(vehicle: ServedVehicle) -> None:
    backend = backend_for(vehicle)
    try:
        backend.connect(timeout=5.0)
        backend.enable()
        fly(backend, 0.8, CLIMB)
        assert wait_for(lambda: backend.phase is Phase.CONNECTED, 1.0)  # none for stale_after
        assert "stale command" in backend.health().reason
        assert wait_for(lambda: vehicle.emu.commander.mode == "AUTO.LAND", 1.0)
        assert vehicle.emu.commander.failsafe == ""  # our landing, before PX4's own offboard loss
    finally:
        backend.close()


def test_estop_is_a_forced_disarm_in_flight_and_latches(vehicle: ServedVehicle) -> None:
    backend = backend_for(vehicle)
    try:
        backend.connect(timeout=5.0)
        backend.enable()
        fly(backend, 0.8, CLIMB)
        assert not vehicle.emu.landed()
        backend.estop("test")
        assert backend.phase is Phase.ESTOPPED
        assert wait_for(lambda: not vehicle.emu.commander.armed, 1.0)
        with pytest.raises(HardwareError, match="estopped"):
            backend.enable()
    finally:
        backend.close()


def test_a_refused_arming_is_an_error_with_px4s_reason(vehicle: ServedVehicle) -> None:
    vehicle.emu.set_estimate(False)
    backend = backend_for(vehicle)
    try:
        backend.connect(timeout=1.5)  # attitude streams; LOCAL_POSITION_NED does not
        pytest.fail("connected without a position")
    except HardwareError as exc:
        assert "no state" in str(exc)
    vehicle.emu.charge = 0.05
    vehicle.emu.set_estimate(True)
    backend = backend_for(vehicle, battery_land=0.0)  # PX4's own check, not the backend's
    try:
        backend.connect(timeout=5.0)
        with pytest.raises(HardwareError, match=r"ARM refused \(DENIED\).*battery low"):
            backend.enable()
        assert backend.phase is Phase.CONNECTED and not vehicle.emu.commander.armed
    finally:
        backend.close()


def test_the_preflight_rows_show_what_px4_shows(vehicle: ServedVehicle) -> None:
    """``deploy check``'s PX4 rows: on the ground, disarmed, in STANDBY, the battery and
    the asked stream rates; a low battery fails (and enable refuses it), as does a vehicle
    already armed (here by our own enable: what a second check would find)."""
    backend = backend_for(vehicle)
    try:
        backend.connect(timeout=5.0)
        assert wait_for(lambda: backend.link is not None and backend.link.landed_state != 0, 3.0)
        rows = {i.name: i for i in backend.driver_items()}
        names = ("autopilot", "armed", "landed state", "battery", "state streams")
        assert {n: r.status for n, r in rows.items()} == dict.fromkeys(names, "PASS"), rows
        assert "STANDBY" in rows["autopilot"].measured and rows["battery"].measured == "100 %"
        vehicle.emu.charge = 0.05  # below battery_land (15 %)
        assert wait_for(lambda: {i.name: i.status for i in backend.driver_items()}["battery"] == "FAIL", 3.0)
        with pytest.raises(HardwareError, match="battery is low"):
            backend.enable()
        vehicle.emu.charge = 1.0
        assert wait_for(lambda: {i.name: i.status for i in backend.driver_items()}["battery"] == "PASS", 3.0)
        backend.enable()

        def armed_row_fails() -> bool:  # commanded meanwhile (a silent host is landed and disarmed)
            backend.command(np.array([0.5 * C.HOVER_THRUST, 0.0, 0.0, 0.0]))
            return {i.name: i.status for i in backend.driver_items()}["armed"] == "FAIL"

        assert wait_for(armed_row_fails, 3.0)
    finally:
        backend.close()


def test_connect_times_out_without_a_vehicle() -> None:
    backend = Px4Backend("ctbr", {"url": "udpout:127.0.0.1:9"})
    start = time.monotonic()
    with pytest.raises(HardwareError, match="no PX4 HEARTBEAT"):
        backend.connect(timeout=0.5)
    assert time.monotonic() - start < 2.5


def test_state_lost_with_the_link_alive_lands_by_px4s_land_mode(vehicle: ServedVehicle) -> None:
    """The downlink gone (no state), the uplink alive: the backend's AUTO.LAND reaches PX4,
    which lands on its own estimate (not its offboard-loss failsafe)."""
    backend = backend_for(vehicle, stale_after=0.15)
    try:
        backend.connect(timeout=5.0)
        backend.enable()
        fly(backend, 1.0, CLIMB)
        vehicle.emu.set_link(False, downlink_only=True)
        fly(backend, 0.3, CLIMB)  # the policy still commands; the state is stale
        assert backend.phase is not Phase.ENABLED and "state stale" in backend.health().reason
        assert wait_for(lambda: vehicle.emu.commander.mode == "AUTO.LAND", 1.0)
        assert vehicle.emu.commander.failsafe == ""
        assert wait_for(lambda: not vehicle.emu.commander.armed, 8.0) and vehicle.emu.landed()
        assert vehicle.emu.crashes == 0
    finally:
        vehicle.emu.set_link(True, downlink_only=True)
        backend.close()


def test_link_lost_both_ways_px4s_offboard_loss_failsafe_lands(vehicle: ServedVehicle) -> None:
    backend = backend_for(vehicle)
    try:
        backend.connect(timeout=5.0)
        backend.enable()
        fly(backend, 1.0, CLIMB)
        vehicle.emu.set_link(False)
        start = time.monotonic()
        fly(backend, 0.3, CLIMB)
        assert wait_for(lambda: backend.phase is Phase.DISCONNECTED, 2.0)
        assert "link lost" in backend.health().reason
        assert wait_for(lambda: vehicle.emu.commander.mode == "AUTO.LAND", 2.0)
        assert vehicle.emu.commander.failsafe == "offboard_loss"
        assert 0.8 <= time.monotonic() - start <= 2.5  # COM_OF_LOSS_T (1 s) after the last setpoint
        assert wait_for(lambda: not vehicle.emu.commander.armed, 8.0) and vehicle.emu.landed()
        assert vehicle.emu.crashes == 0
    finally:
        vehicle.emu.set_link(True)
        backend.close()


@pytest.mark.slow
@pytest.mark.parametrize(("policy", "seconds"), [("DroneHover", 25), ("DroneWaypoints", 40)])
def test_deploy_emulate_flies_the_px4_backend_through_the_graph(tmp_path: Path, policy: str, seconds: int) -> None:
    """``deploy --backend real --emulate`` with the bridge's backend set to px4 starts the
    PX4 emulator (not the robot's default one) and the shipped policy flies it. The
    emulated vehicle plays the policy's own task: DroneWaypoints' waypoints, whose course
    the planner turns into the policy's path (before: the robot's default, a hover, and
    the waypoint policy never acted, "state missing ['path']")."""
    env = {**os.environ, "ROS_AUTOMATIC_DISCOVERY_RANGE": "LOCALHOST", "ROS_DOMAIN_ID": str(unique_domain_id())}
    out = subprocess.run([sys.executable, "-m", "sim2real.cli", "deploy", "--robot", "drone", "--policy", policy,
                          "--backend", "real", "--emulate", "--set", "hardware_bridge.backend=px4",
                          "--duration", str(seconds), "--json"],
                         capture_output=True, text=True, timeout=240, env=env, cwd=tmp_path)
    assert out.returncode == 0, out.stderr[-3000:]
    summary = json.loads(out.stdout)
    emulator = summary["emulator"]
    assert emulator["task"] == policy, emulator
    assert emulator["accepted"].get("SET_ATTITUDE_TARGET", 0) > 100, emulator
    assert emulator["first_motion_at"] is not None and emulator["failsafe"] == "", emulator
    success = summary["task_success"]  # the episodes that ended while the graph ran
    assert success["episodes"] >= 1 and success["successes"] == success["episodes"], success


def test_a_heartbeat_in_a_mode_outside_our_table_still_counts() -> None:
    """PX4 in a mode the emulator does not fly (STABILIZED, ACRO, AUTO.TAKEOFF, ...) is
    still a PX4 answering: its HEARTBEAT is seen and its mode named, not taken for none."""
    import socket

    from pymavlink.dialects.v20 import common as mavlink

    from sim2real.hardware.px4.link import Px4Link

    link = Px4Link("udpin:127.0.0.1:0", np.zeros(3), lambda m: None)
    try:
        port = link.conn.port.getsockname()[1]
        mav = mavlink.MAVLink(None, srcSystem=1, srcComponent=1)
        stabilized = 7 << 16
        hb = mav.heartbeat_encode(mavlink.MAV_TYPE_QUADROTOR, mavlink.MAV_AUTOPILOT_PX4,
                                  mavlink.MAV_MODE_FLAG_CUSTOM_MODE_ENABLED, stabilized, mavlink.MAV_STATE_STANDBY)
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
            sock.sendto(hb.pack(mav), ("127.0.0.1", port))
            assert wait_for(lambda: link.heartbeat_at > 0, 2.0)
        assert link.mode == "STABILIZED" and not link.armed
    finally:
        link.close()


def test_a_low_battery_in_flight_lands_by_px4s_land_mode(vehicle: ServedVehicle) -> None:
    backend = backend_for(vehicle)
    try:
        backend.connect(timeout=5.0)
        backend.enable()
        fly(backend, 0.8, CLIMB)
        vehicle.emu.charge = 0.1  # under BAT_LOW_THR: PX4 only warns by default
        end = time.monotonic() + 2.0  # BATTERY_STATUS comes at 1 Hz
        while backend.phase is Phase.ENABLED and time.monotonic() < end:
            fly(backend, 0.05, C.HOVER_THRUST)
        assert backend.phase is Phase.CONNECTED and "battery low" in backend.health().reason
        assert wait_for(lambda: vehicle.emu.commander.mode == "AUTO.LAND", 1.0)
        assert wait_for(lambda: not backend.detail()["landing"], 8.0)  # landed and disarmed by PX4
        with pytest.raises(HardwareError, match="battery is low"):
            backend.enable()
    finally:
        backend.close()


@pytest.mark.heavy
def test_the_x500_flies_its_own_graph_through_the_emulated_px4(tmp_path: Path) -> None:
    """``deploy --robot x500 --backend real --emulate``: PX4's emulator (the robot's only
    backend) flies the X500 airframe, and its classical controller, behind the X500's
    own safety chain, holds the hover targets."""
    env = {**os.environ, "ROS_AUTOMATIC_DISCOVERY_RANGE": "LOCALHOST", "ROS_DOMAIN_ID": str(unique_domain_id())}
    out = subprocess.run([sys.executable, "-m", "sim2real.cli", "deploy", "--robot", "x500", "--backend", "real",
                          "--emulate", "--duration", "25", "--json"],
                         capture_output=True, text=True, timeout=240, env=env, cwd=tmp_path)
    assert out.returncode == 0, out.stderr[-3000:]
    summary = json.loads(out.stdout)
    emulator, hardware = summary["emulator"], summary["hardware"]
    assert emulator["robot"] == "x500" and emulator["task"] == "X500Hover", emulator
    assert hardware["preflight"] == "PASS" and hardware["commands_rejected"] == 0, hardware
    assert emulator["crashes"] == 0 and emulator["failsafe"] == "", emulator
    success = summary["task_success"]
    assert success["episodes"] >= 1 and success["successes"] == success["episodes"], success


@pytest.mark.heavy
def test_the_x500_flies_waypoints_in_velocity_through_the_graph_and_the_emulated_px4(tmp_path: Path) -> None:
    """``deploy --robot x500 --task X500Waypoints --action-mode velocity``: the classical
    position loop's velocities, through the X500's velocity chain, reach PX4 as
    SET_POSITION_TARGET_LOCAL_NED, and its velocity loop flies the waypoints."""
    env = {**os.environ, "ROS_AUTOMATIC_DISCOVERY_RANGE": "LOCALHOST", "ROS_DOMAIN_ID": str(unique_domain_id())}
    out = subprocess.run([sys.executable, "-m", "sim2real.cli", "deploy", "--robot", "x500", "--task", "X500Waypoints",
                          "--action-mode", "velocity", "--backend", "real", "--emulate", "--duration", "35", "--json"],
                         capture_output=True, text=True, timeout=240, env=env, cwd=tmp_path)
    assert out.returncode == 0, out.stderr[-3000:]
    summary = json.loads(out.stdout)
    emulator, hardware = summary["emulator"], summary["hardware"]
    assert emulator["accepted"].get("SET_POSITION_TARGET_LOCAL_NED", 0) > 500, emulator
    assert "SET_ATTITUDE_TARGET" not in emulator["accepted"], emulator
    assert hardware["preflight"] == "PASS" and hardware["commands_rejected"] == 0, hardware
    assert emulator["crashes"] == 0 and emulator["failsafe"] == "", emulator
    success = summary["task_success"]
    assert success["episodes"] >= 1 and success["successes"] == success["episodes"], success
