"""The PX4 backend's setpoints against the emulated PX4 over real UDP on loopback: thrust
normalized by the vehicle's airframe (the X500 model), attitude setpoints as
SET_ATTITUDE_TARGET and position and velocity setpoints as SET_POSITION_TARGET_LOCAL_NED
(flown, and on the wire as pymavlink reads them)."""

from __future__ import annotations

import time

import numpy as np
import pytest
from px4_rig import ServedVehicle, backend_for, fly, serve_vehicle, wait_for

from sim2real.hardware.backend import Phase
from sim2real.hardware.emulator.px4 import Px4EmulatorConfig
from sim2real.sim.drone.airframe import airframe

vehicle_fixture = pytest.fixture(name="vehicle")(serve_vehicle)


def test_the_backend_normalizes_thrust_by_the_vehicles_airframe() -> None:
    """Against the X500 model (connect options say so): 1.2 x its 19.6 N weight in newtons
    climbs at 0.2 g, as the same command does on the Crazyflie; normalized by the
    Crazyflie's 0.6 N it would be full thrust (0.74 g up, through the ceiling)."""
    x500 = airframe("x500")
    vehicle = ServedVehicle(Px4EmulatorConfig(port=0, gcs_port=9, airframe="x500"))
    backend = backend_for(vehicle)
    try:
        assert backend.max_thrust == pytest.approx(x500.max_collective_thrust)
        backend.connect(timeout=5.0)
        assert backend.detail()["airframe"] == "x500"  # what deploy check and the console show
        backend.enable()
        fly(backend, 1.0, 1.2 * x500.hover_thrust)
        state = backend.state()
        assert state is not None and state.base_pos is not None and state.base_lin_vel is not None
        assert 0.4 < float(state.base_pos[2]) < 1.6, state.base_pos  # 0.2 g for ~1 s: about 1 m, not 3.6
        assert 1.0 < float(state.base_lin_vel[2]) < 2.8, state.base_lin_vel
        fly(backend, 0.5, x500.hover_thrust)  # its weight: the climb rate holds
        after = backend.state()
        assert after is not None and after.base_lin_vel is not None
        assert abs(float(after.base_lin_vel[2]) - float(state.base_lin_vel[2])) < 0.5
        backend.safe("test")
        assert wait_for(lambda: not vehicle.emu.commander.armed, 12.0) and vehicle.emu.crashes == 0
    finally:
        backend.close()
        vehicle.close()


def test_position_and_velocity_setpoints_stream_as_set_position_target_local_ned(vehicle: ServedVehicle) -> None:
    """The backend's position setpoint (task's ENU, PX4's local NED on the wire) is flown to
    within 0.15 m by PX4's position controller; its velocity setpoint (position ignored) is
    flown at that velocity; a non-finite one is refused; safe still lands."""
    backend = backend_for(vehicle)
    emu = vehicle.emu
    try:
        backend.connect(timeout=5.0)
        backend.enable()
        goal = emu.origin + np.array([0.4, -0.3, 1.0])  # 0.4 m east, 0.3 m south, 1 m up (ENU)
        end = time.monotonic() + 4.0
        while time.monotonic() < end:
            backend.command_position(goal)
            time.sleep(0.02)
        assert np.linalg.norm(emu.data.qpos[:3] - goal) < 0.15, emu.data.qpos[:3]
        assert emu.link.accepted.get("SET_POSITION_TARGET_LOCAL_NED", 0) > 100
        end = time.monotonic() + 2.0
        while time.monotonic() < end:
            backend.command_velocity(np.array([0.0, 0.3, 0.0]))  # north at 0.3 m/s
            time.sleep(0.02)
        state = backend.state()
        assert state is not None and state.base_lin_vel is not None
        assert np.asarray(state.base_lin_vel) == pytest.approx([0.0, 0.3, 0.0], abs=0.08)
        with pytest.raises(ValueError, match="finite"):
            backend.command_position(np.array([np.nan, 0.0, 1.0]))
        assert backend.phase is Phase.ENABLED
        backend.safe("test")
        assert wait_for(lambda: not emu.commander.armed, 8.0) and emu.crashes == 0
    finally:
        backend.close()


def _angle(a: np.ndarray, b: np.ndarray) -> float:
    """Degrees between two attitudes (unit quaternions)."""
    return float(np.degrees(2.0 * np.arccos(min(1.0, abs(float(np.dot(a, b)))))))


def test_an_attitude_setpoint_is_held_by_px4s_attitude_controller(vehicle: ServedVehicle) -> None:
    """``command_attitude`` (the task's ENU/FLU attitude, thrust in N): level at 1.3 x the
    weight climbs; 10 degrees nose down, facing east, is reached (within 3 degrees) and
    accelerates the vehicle east; a quaternion that is not a unit one is refused."""
    from sim2real.sim.drone import constants as C

    backend = backend_for(vehicle)
    emu = vehicle.emu
    level = np.array([1.0, 0.0, 0.0, 0.0])
    nose_down = np.array([np.cos(np.radians(5.0)), 0.0, np.sin(np.radians(5.0)), 0.0])  # 10 deg about +y (left)
    try:
        backend.connect(timeout=5.0)
        backend.enable()
        end = time.monotonic() + 0.8  # about 0.8 m up (0.3 g), turning from its resting heading to east
        while time.monotonic() < end:
            backend.command_attitude(level, 1.3 * C.HOVER_THRUST)
            time.sleep(0.02)
        assert float(emu.data.qpos[2]) - float(emu.origin[2]) > 0.3
        east = float(emu.data.qvel[0])
        end = time.monotonic() + 1.2
        while time.monotonic() < end:
            backend.command_attitude(nose_down, C.HOVER_THRUST / np.cos(np.radians(10.0)))
            time.sleep(0.02)
        assert _angle(emu.data.qpos[3:7], nose_down) < 3.0, emu.data.qpos[3:7]
        assert float(emu.data.qvel[0]) > east + 0.5  # tan(10 deg) g for a second: ~1.7 m/s
        assert emu.drone.episodes == []  # one flight: never out of the arena, never reset
        assert emu.link.accepted.get("SET_ATTITUDE_TARGET", 0) > 100
        with pytest.raises(ValueError, match="unit quaternion"):
            backend.command_attitude(np.array([1.0, 1.0, 0.0, 0.0]), C.HOVER_THRUST)
        assert backend.phase is Phase.ENABLED
        backend.safe("test")
        assert wait_for(lambda: not emu.commander.armed, 8.0) and emu.crashes == 0
    finally:
        backend.close()


def test_an_attitude_setpoint_on_the_wire_is_frd_in_ned_with_the_rates_ignored() -> None:
    """Level, facing east in the task's ENU: PX4's body FRD in NED is a 90 degree yaw
    (w = z = 0.707); type_mask 0b111 (the rates ignored, the attitude counts)."""
    from pymavlink import mavutil

    from sim2real.hardware.px4.link import Px4Link
    from sim2real.hardware.px4.setpoints import AttitudeSetpoint

    vehicle = mavutil.mavlink_connection("udpin:127.0.0.1:0", source_system=1, source_component=1)
    port = vehicle.port.getsockname()[1]
    link = Px4Link(f"udpout:127.0.0.1:{port}", np.zeros(3), lambda m: None)
    try:
        link.setpoint(AttitudeSetpoint(0.6, np.array([1.0, 0.0, 0.0, 0.0])))
        got = vehicle.recv_match(type="SET_ATTITUDE_TARGET", blocking=True, timeout=2)
    finally:
        link.close()
        vehicle.close()
    assert got is not None and got.type_mask == 0b111
    assert list(got.q) == pytest.approx([np.sqrt(0.5), 0.0, 0.0, np.sqrt(0.5)], abs=1e-6)
    assert got.thrust == pytest.approx(0.6)
    with pytest.raises(ValueError, match="normalized thrust"):
        AttitudeSetpoint(1.5, np.array([1.0, 0.0, 0.0, 0.0]))


def test_local_setpoints_on_the_wire_are_px4s_type_masks_in_local_ned() -> None:
    """What the link sends, read by pymavlink as the vehicle: MAV_FRAME_LOCAL_NED, the
    position relative to ``home`` in NED with velocity, acceleration and yaw ignored
    (type_mask 0x0DF8), or a velocity alone in NED (0x0DC7)."""
    from pymavlink import mavutil
    from pymavlink.dialects.v20 import common as mavlink

    from sim2real.hardware.px4.link import Px4Link
    from sim2real.hardware.px4.setpoints import LocalSetpoint

    vehicle = mavutil.mavlink_connection("udpin:127.0.0.1:0", source_system=1, source_component=1)
    port = vehicle.port.getsockname()[1]
    home = np.array([1.0, 2.0, 0.1])
    link = Px4Link(f"udpout:127.0.0.1:{port}", home, lambda m: None)
    try:
        link.setpoint(LocalSetpoint(np.array([1.5, 1.0, 1.1]), None))  # 0.5 m east, 1 m south, 1 m up of home
        link.setpoint(LocalSetpoint(None, np.array([0.0, 0.3, -0.2])))  # north at 0.3 m/s, sinking 0.2 m/s
        got = [vehicle.recv_match(type="SET_POSITION_TARGET_LOCAL_NED", blocking=True, timeout=2) for _ in range(2)]
    finally:
        link.close()
        vehicle.close()
    position, velocity = got
    assert position is not None and velocity is not None
    assert position.coordinate_frame == velocity.coordinate_frame == mavlink.MAV_FRAME_LOCAL_NED
    assert position.type_mask == 0x0DF8 and velocity.type_mask == 0x0DC7
    assert (position.x, position.y, position.z) == pytest.approx((-1.0, 0.5, -1.0))
    assert (velocity.vx, velocity.vy, velocity.vz) == pytest.approx((0.3, 0.0, 0.2))
    with pytest.raises(ValueError, match="position, a velocity or both"):
        LocalSetpoint(None, None)
