"""The emulated PX4 over the simulated drone, with pymavlink's ``mavutil`` as the ground
station / offboard computer over real UDP on loopback. The real-time tests serve the
emulator in a thread; the commander's behaviour (OFFBOARD refused without a stream,
arming checks, the offboard-loss failsafe) is driven with the tests' own clock, so no
test sleeps through a timeout."""

from __future__ import annotations

import math
import time

import numpy as np
import pytest
from px4_rig import HOVER, POSITION_ONLY, VELOCITY_ONLY, Bench, Gcs, ServedVehicle, open_bench
from pymavlink import mavutil
from pymavlink.dialects.v20 import common as M

from sim2real.hardware.emulator.base import EmulatorSettings, emulator_class
from sim2real.hardware.emulator.px4 import Px4Emulator, Px4EmulatorConfig
from sim2real.hardware.emulator.px4_link import ATT_IGNORE_ATTITUDE
from sim2real.hardware.px4 import frames
from sim2real.sim.core.errors import ConfigError

bench_fixture = pytest.fixture(name="bench")(open_bench)


def _climb(bench: Bench) -> None:
    bench.take_off(lambda: bench.gcs.rates(0.6))  # ~0.7 m up, climbing (well below the task's 4 m ceiling)


def test_real_time_heartbeat_and_telemetry_rates_over_udp() -> None:
    gcs = Gcs()
    emu = emulator_class("px4").launch(EmulatorSettings(port=0))
    assert isinstance(emu, Px4Emulator)
    emu.close()
    vehicle = ServedVehicle(Px4EmulatorConfig(port=0, gcs_port=gcs.port))
    try:
        hb = gcs.conn.recv_match(type="HEARTBEAT", blocking=True, timeout=3)
        assert hb is not None and hb.autopilot == M.MAV_AUTOPILOT_PX4 and hb.type == M.MAV_TYPE_QUADROTOR
        assert mavutil.interpret_px4_mode(hb.base_mode, hb.custom_mode) == "POSCTL"
        assert not hb.base_mode & M.MAV_MODE_FLAG_SAFETY_ARMED
        start = time.monotonic()
        while time.monotonic() - start < 2.0:
            if (msg := gcs.conn.recv_match(blocking=True, timeout=0.1)) is not None:
                gcs.messages.append(msg)
            gcs.drain()
        counts = {k: len(gcs.of(k)) / 2.0 for k in ("HEARTBEAT", "ATTITUDE_QUATERNION", "LOCAL_POSITION_NED",
                                                    "HIGHRES_IMU", "EXTENDED_SYS_STATE", "BATTERY_STATUS")}
        assert 0.5 <= counts["HEARTBEAT"] <= 2.0, counts
        for kind in ("ATTITUDE_QUATERNION", "LOCAL_POSITION_NED", "HIGHRES_IMU"):
            assert 35 <= counts[kind] <= 60, counts
        assert counts["EXTENDED_SYS_STATE"] >= 3 and counts["BATTERY_STATUS"] >= 0.5, counts
        assert gcs.of("EXTENDED_SYS_STATE")[-1].landed_state == M.MAV_LANDED_STATE_ON_GROUND
        assert gcs.of("BATTERY_STATUS")[-1].battery_remaining == 100
    finally:
        vehicle.close()
        gcs.close()


def test_offboard_is_refused_without_a_setpoint_stream_and_accepted_with_one(bench: Bench) -> None:
    bench.gcs.set_mode("OFFBOARD")
    assert bench.ack(M.MAV_CMD_DO_SET_MODE) == M.MAV_RESULT_TEMPORARILY_REJECTED
    assert any("Offboard" in m.text for m in bench.gcs.of("STATUSTEXT"))
    bench.run(0.5, thrust=0.0)  # streaming, but not yet for a second
    bench.gcs.set_mode("OFFBOARD")
    assert bench.ack(M.MAV_CMD_DO_SET_MODE) == M.MAV_RESULT_TEMPORARILY_REJECTED
    bench.run(0.6)  # a gap longer than 0.5 s (below 2 Hz): the stream starts over
    bench.run(0.7, thrust=0.0)
    bench.gcs.set_mode("OFFBOARD")
    assert bench.ack(M.MAV_CMD_DO_SET_MODE) == M.MAV_RESULT_TEMPORARILY_REJECTED
    bench.run(0.5, thrust=0.0)
    bench.gcs.set_mode("OFFBOARD")
    assert bench.ack(M.MAV_CMD_DO_SET_MODE) == M.MAV_RESULT_ACCEPTED
    bench.run(1.1, thrust=0.0)
    assert bench.mode() == "OFFBOARD"


def test_arming_is_acked_and_refused_while_a_prearm_check_fails(bench: Bench) -> None:
    bench.emu.set_estimate(False)
    bench.gcs.arm()
    assert bench.ack(M.MAV_CMD_COMPONENT_ARM_DISARM) == M.MAV_RESULT_DENIED
    assert any("Arming denied" in m.text for m in bench.gcs.of("STATUSTEXT"))
    bench.emu.set_estimate(True)
    bench.emu.charge = 0.1
    bench.gcs.arm()
    assert bench.ack(M.MAV_CMD_COMPONENT_ARM_DISARM) == M.MAV_RESULT_DENIED
    bench.emu.charge = 0.9
    bench.gcs.arm()
    assert bench.ack(M.MAV_CMD_COMPONENT_ARM_DISARM) == M.MAV_RESULT_ACCEPTED
    bench.run(1.1)
    assert bench.gcs.of("HEARTBEAT")[-1].base_mode & M.MAV_MODE_FLAG_SAFETY_ARMED
    bench.gcs.arm(False)
    assert bench.ack(M.MAV_CMD_COMPONENT_ARM_DISARM) == M.MAV_RESULT_ACCEPTED
    assert not bench.emu.commander.armed


def test_attitude_target_thrust_climbs_and_telemetry_shows_it_in_ned(bench: Bench) -> None:
    _climb(bench)
    pos = bench.gcs.of("LOCAL_POSITION_NED")[-1]
    assert pos.z < -0.3 and pos.vz < -0.2, pos  # up is -z
    assert abs(pos.x) < 0.2 and abs(pos.y) < 0.2
    assert bench.gcs.of("EXTENDED_SYS_STATE")[-1].landed_state == M.MAV_LANDED_STATE_IN_AIR
    assert bench.emu.data.qpos[2] - bench.emu.origin[2] == pytest.approx(-pos.z, abs=0.05)


def test_ned_and_frd_conversion_on_the_wire(bench: Bench) -> None:
    emu = bench.emu
    d = emu.data
    d.qpos[:3] = emu.origin + np.array([1.0, 2.0, 0.5])  # 1 m east, 2 m north, 0.5 m up
    d.qvel[:3] = [0.3, 0.6, 0.9]
    d.qpos[3:7] = [1.0, 0.0, 0.0, 0.0]  # level, nose east (ENU yaw 0)
    d.qvel[3:6] = [0.0, 0.0, 0.5]  # turning left (counter-clockwise seen from above)
    seen = {k: len(bench.gcs.of(k)) for k in ("LOCAL_POSITION_NED", "ATTITUDE_QUATERNION", "HIGHRES_IMU")}
    bench.run(0.024)  # one telemetry period; the first of each after the state was set
    pos = bench.gcs.of("LOCAL_POSITION_NED")[seen["LOCAL_POSITION_NED"]]
    assert (pos.x, pos.y) == pytest.approx((2.0, 1.0), abs=0.05) and pos.z == pytest.approx(-0.5, abs=0.05)
    assert (pos.vx, pos.vy) == pytest.approx((0.6, 0.3), abs=0.05) and pos.vz == pytest.approx(-0.9, abs=0.1)
    att = bench.gcs.of("ATTITUDE_QUATERNION")[seen["ATTITUDE_QUATERNION"]]
    w, x, y, z = att.q1, att.q2, att.q3, att.q4
    yaw = math.atan2(2 * (w * z + x * y), 1 - 2 * (y * y + z * z))
    assert yaw == pytest.approx(math.pi / 2, abs=0.05)  # nose east is heading 90 deg in NED
    assert att.yawspeed < -0.3  # counter-clockwise from above is a negative FRD yaw rate
    imu = bench.gcs.of("HIGHRES_IMU")[seen["HIGHRES_IMU"]]
    assert imu.zgyro < -0.3


def test_frames_round_trip() -> None:
    rng = np.random.default_rng(0)
    for _ in range(20):
        q = rng.normal(size=4)
        q /= np.linalg.norm(q)
        q = q if q[0] >= 0 else -q
        assert frames.quat_ned_frd_to_enu_flu(frames.quat_enu_flu_to_ned_frd(q)) == pytest.approx(q, abs=1e-9)
        v = rng.normal(size=3)
        assert frames.ned_to_enu(frames.enu_to_ned(v)) == pytest.approx(v)
        assert frames.frd_to_flu(frames.flu_to_frd(v)) == pytest.approx(v)


def test_malformed_and_unknown_messages_are_counted_and_ignored(bench: Bench) -> None:
    emu, conn = bench.emu, bench.gcs.conn
    conn.write(b"\x00garbage\xff" * 5)
    good = conn.mav.heartbeat_encode(M.MAV_TYPE_GCS, M.MAV_AUTOPILOT_INVALID, 0, 0, 0).pack(conn.mav)
    conn.write(good[:-3])  # truncated
    conn.write(good[:-1] + bytes([good[-1] ^ 0xFF]))  # bad CRC
    conn.mav.mission_request_list_send(1, 1)  # not handled by the emulator
    conn.mav.set_attitude_target_send(0, 1, 1, ATT_IGNORE_ATTITUDE, [1, 0, 0, 0], 0, 0, 0, float("nan"))
    conn.mav.set_attitude_target_send(0, 7, 1, ATT_IGNORE_ATTITUDE, [1, 0, 0, 0], 0, 0, 0, 0.5)  # another system
    bench.run(0.2)
    rejected = emu.summary()["rejected"]
    assert rejected.get("non_finite") == 1 and rejected.get("other_system") == 1, rejected
    assert rejected.get("unhandled_MISSION_REQUEST_LIST") == 1, rejected
    assert sum(rejected.values()) >= 5, rejected
    assert emu.target is None and emu.commander.stream_since is None
    before = len(bench.gcs.of("HEARTBEAT"))
    bench.run(1.1)  # still alive
    assert len(bench.gcs.of("HEARTBEAT")) > before


def test_set_message_interval_changes_a_streams_rate(bench: Bench) -> None:
    conn = bench.gcs.conn
    conn.mav.command_long_send(1, 1, M.MAV_CMD_SET_MESSAGE_INTERVAL, 0, M.MAVLINK_MSG_ID_LOCAL_POSITION_NED,
                               10_000, 0, 0, 0, 0, 0)
    assert bench.ack(M.MAV_CMD_SET_MESSAGE_INTERVAL) == M.MAV_RESULT_ACCEPTED
    conn.mav.command_long_send(1, 1, M.MAV_CMD_SET_MESSAGE_INTERVAL, 0, M.MAVLINK_MSG_ID_HIGHRES_IMU, -1,
                               0, 0, 0, 0, 0)
    assert bench.ack(M.MAV_CMD_SET_MESSAGE_INTERVAL) == M.MAV_RESULT_ACCEPTED
    conn.mav.command_long_send(1, 1, M.MAV_CMD_SET_MESSAGE_INTERVAL, 0, M.MAVLINK_MSG_ID_GPS_RAW_INT, 10_000,
                               0, 0, 0, 0, 0)
    assert bench.ack(M.MAV_CMD_SET_MESSAGE_INTERVAL) == M.MAV_RESULT_DENIED  # a stream it does not have
    before = {k: len(bench.gcs.of(k)) for k in ("LOCAL_POSITION_NED", "ATTITUDE_QUATERNION", "HIGHRES_IMU")}
    bench.run(1.0)
    counts = {k: len(bench.gcs.of(k)) - n for k, n in before.items()}
    assert 95 <= counts["LOCAL_POSITION_NED"] <= 105 and 45 <= counts["ATTITUDE_QUATERNION"] <= 55, counts
    assert counts["HIGHRES_IMU"] == 0, counts


def test_attitude_quaternion_setpoint_is_flown_in_frd_ned(bench: Bench) -> None:
    """SET_ATTITUDE_TARGET with its attitude: 10 deg right wing down, heading north (NED)."""
    bench.take_off(lambda: bench.gcs.rates(0.6), climb=0.6)  # off the ground, below the geofence's ceiling
    roll = math.radians(10.0)
    q = [math.cos(roll / 2), math.sin(roll / 2), 0.0, 0.0]  # FRD -> NED: roll about x, yaw 0 (north)
    bench.run(1.5, every=0.02,
              send=lambda: bench.gcs.conn.mav.set_attitude_target_send(0, 1, 1, 0b0000_0111, q, 0, 0, 0, HOVER))
    att = bench.gcs.of("ATTITUDE_QUATERNION")[-1]
    w, x, y, z = att.q1, att.q2, att.q3, att.q4
    got_roll = math.atan2(2 * (w * x + y * z), 1 - 2 * (x * x + y * y))
    got_yaw = math.atan2(2 * (w * z + x * y), 1 - 2 * (y * y + z * z))
    assert math.degrees(got_roll) == pytest.approx(10.0, abs=2.0)
    assert math.degrees(got_yaw) == pytest.approx(0.0, abs=3.0)
    pos = bench.gcs.of("LOCAL_POSITION_NED")[-1]
    assert pos.vy > 0.1  # right wing down in a north heading: it slides east (+y in NED)
    assert bench.emu.crashes == 0


def test_position_setpoint_local_ned_is_flown(bench: Bench) -> None:
    """SET_POSITION_TARGET_LOCAL_NED (position only): 0.5 m north, 1 m up."""
    bench.take_off(lambda: bench.gcs.local_ned(POSITION_ONLY, (0.5, 0.0, -1.0)), climb=5.0, every=0.02)
    pos = bench.gcs.of("LOCAL_POSITION_NED")[-1]
    assert (pos.x, pos.y, pos.z) == pytest.approx((0.5, 0.0, -1.0), abs=0.15), pos
    assert bench.emu.crashes == 0


def test_the_x500_airframe_holds_a_position_setpoint_at_its_own_hover_thrust() -> None:
    """The emulator flying the X500 model (2 kg, 4 x 8.55 N): a LOCAL_NED position setpoint
    1 m up is held, on rotors that carry its weight (the Crazyflie's 0.6 N could not)."""
    bench = Bench(Px4EmulatorConfig(airframe="x500"))
    try:
        assert bench.emu.connect_options()["airframe"] == "x500"
        assert bench.emu.model.body("drone").mass[0] == pytest.approx(2.0)
        bench.take_off(lambda: bench.gcs.local_ned(POSITION_ONLY, (0.0, 0.0, -1.0)), climb=5.0, every=0.02)
        pos = bench.gcs.of("LOCAL_POSITION_NED")[-1]
        assert (pos.x, pos.y, pos.z) == pytest.approx((0.0, 0.0, -1.0), abs=0.1), pos
        assert abs(pos.vz) < 0.1
        thrust = float(bench.emu.data.actuator_force.sum())
        assert thrust == pytest.approx(2.0 * 9.81, rel=0.05)  # its weight, not the Crazyflie's 0.26 N
        assert bench.emu.crashes == 0
    finally:
        bench.close()


def test_velocity_setpoint_local_ned_is_flown(bench: Bench) -> None:
    """SET_POSITION_TARGET_LOCAL_NED with a velocity alone (position ignored): 0.3 m/s north
    while climbing at 0.4 m/s, as PX4's velocity loop flies it."""
    bench.take_off(lambda: bench.gcs.local_ned(VELOCITY_ONLY, velocity=(0.3, 0.0, -0.4)), climb=2.5, every=0.02)
    target = bench.emu.target
    assert target is not None and getattr(target, "position", 0) is None  # the position was ignored
    pos = bench.gcs.of("LOCAL_POSITION_NED")[-1]
    assert (pos.vx, pos.vy, pos.vz) == pytest.approx((0.3, 0.0, -0.4), abs=0.08), pos
    assert pos.x > 0.3 and pos.z < -0.5
    bench.run(0.1, send=lambda: bench.gcs.local_ned(0b111_111_111_111))  # neither position nor velocity
    assert bench.emu.summary()["rejected"].get("position_setpoint_unsupported", 0) >= 1
    assert bench.emu.crashes == 0


def test_a_velocity_that_asks_no_climb_idles_the_motors_on_the_ground(bench: Bench) -> None:
    """PX4's land detector: armed in OFFBOARD on the ground under a velocity that asks no
    climb (zero, or down), the motors idle; a climb asked for spins them up; a descent
    onto the ground ends with them idle again."""
    bench.take_off(lambda: bench.gcs.local_ned(VELOCITY_ONLY, velocity=(0.0, 0.0, 0.2)), climb=1.0, every=0.02)
    assert bench.emu.commander.armed and bench.emu.landed()
    assert float(np.abs(bench.emu.data.ctrl).max()) == 0.0
    bench.run(1.5, send=lambda: bench.gcs.local_ned(VELOCITY_ONLY, velocity=(0.0, 0.0, -0.5)), every=0.02)
    assert not bench.emu.landed() and float(bench.emu.data.ctrl.min()) > 0.2
    bench.run(4.0, send=lambda: bench.gcs.local_ned(VELOCITY_ONLY, velocity=(0.0, 0.0, 0.4)), every=0.02)
    assert bench.emu.landed() and float(np.abs(bench.emu.data.ctrl).max()) == 0.0
    assert bench.emu.crashes == 0


def test_the_airframe_is_an_emulator_setting_only_px4_takes_another_of() -> None:
    """``sim2real hardware emulate --airframe x500`` reaches the PX4 emulator; the
    Crazyflie's refuses it (its firmware, motors and battery are a Crazyflie's)."""
    emu = emulator_class("px4").launch(EmulatorSettings(port=0, airframe="x500"))
    try:
        assert emu.connect_options()["airframe"] == "x500"
    finally:
        emu.close()
    with pytest.raises(ConfigError, match="airframe"):
        emulator_class("crazyflie").launch(EmulatorSettings(port=0, airframe="x500"))
    with pytest.raises(ConfigError, match="airframe"):
        emulator_class("px4").launch(EmulatorSettings(port=0, airframe="f450"))
