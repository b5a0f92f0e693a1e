"""The emulated PX4's failsafes, with pymavlink's ``mavutil`` as the ground station over
real UDP on loopback and the tests' own clock: the offboard-loss failsafe
(``COM_OF_LOSS_T``, ``COM_OBL_RC_ACT``), the data-link-loss one (``COM_DL_LOSS_T``,
``NAV_DLL_ACT``) apart from it, the RC-loss one (``COM_RC_LOSS_T``, ``NAV_RCL_ACT``,
``COM_RCL_EXCEPT``) and the auto-disarm after landing."""

from __future__ import annotations

import numpy as np
import pytest
from px4_rig import POSITION_ONLY, Bench, open_bench
from pymavlink.dialects.v20 import common as M

bench_fixture = pytest.fixture(name="bench")(open_bench)


def _climb(bench: Bench) -> None:
    bench.take_off(lambda: bench.gcs.rates(0.6))  # ~0.7 m up, climbing (well below the task's 4 m ceiling)


def test_offboard_loss_lands_after_com_of_loss_t(bench: Bench) -> None:
    conn = bench.gcs.conn
    bench.gcs.set_param("COM_OF_LOSS_T", 0.5)
    conn.mav.param_request_read_send(1, 1, b"COM_OBL_RC_ACT", -1)
    bench.run(0.02)
    values = {m.param_id: m.param_value for m in bench.gcs.of("PARAM_VALUE")}
    assert values["COM_OF_LOSS_T"] == pytest.approx(0.5) and "COM_OBL_RC_ACT" in values
    _climb(bench)
    assert bench.mode() == "OFFBOARD"
    bench.run(0.4)  # silence, shorter than COM_OF_LOSS_T
    assert bench.emu.commander.mode == "OFFBOARD"
    bench.run(0.2)
    assert bench.emu.commander.mode == "AUTO.LAND"
    bench.run(1.0)
    assert bench.mode() == "LAND"
    assert bench.gcs.of("HEARTBEAT")[-1].system_status == M.MAV_STATE_CRITICAL
    assert any("Failsafe" in m.text for m in bench.gcs.of("STATUSTEXT"))
    seen = len(bench.gcs.of("LOCAL_POSITION_NED"))
    bench.run(7.0)  # down from ~2.5 m at MPC_LAND_SPEED, then disarmed after COM_DISARM_LAND
    assert bench.gcs.of("EXTENDED_SYS_STATE")[-1].landed_state == M.MAV_LANDED_STATE_ON_GROUND
    assert not bench.emu.commander.armed
    sink = max(m.vz for m in bench.gcs.of("LOCAL_POSITION_NED")[seen:])  # NED: down is +vz
    assert sink == pytest.approx(0.7, abs=0.15)  # MPC_LAND_SPEED, not a fall
    assert bench.emu.crashes == 0


def test_auto_land_disarms_com_disarm_land_after_touch_down_whatever_the_clock() -> None:
    from sim2real.hardware.emulator.px4_commander import Commander

    commander = Commander(lambda: [], mode="AUTO.LAND", armed=True)
    for k in range(20):  # landed from t = 0.0 on (a clock that starts at zero)
        commander.update(k * 0.1, landed=True)
        assert commander.armed
    commander.update(2.0, landed=True)
    assert not commander.armed  # COM_DISARM_LAND = 2 s after touch-down, not after the second tick


def _hold_with_a_ground_station(bench: Bench, action: int, goal: tuple[float, float, float]) -> None:
    """NAV_DLL_ACT = ``action``, COM_DL_LOSS_T = 5 s (its minimum); a ground station's
    heartbeats; up to ``goal`` (NED) in OFFBOARD, then AUTO.LOITER (no offboard stream to lose)."""
    gcs = bench.gcs
    gcs.set_param("NAV_DLL_ACT", float(action), M.MAV_PARAM_TYPE_INT32)
    gcs.set_param("COM_DL_LOSS_T", 5.0)
    bench.run(0.02)
    assert bench.emu.commander.params["NAV_DLL_ACT"] == action
    bench.take_off(lambda: (gcs.heartbeat(), gcs.local_ned(POSITION_ONLY, goal)), climb=4.0, every=0.02)
    gcs.set_mode("AUTO.LOITER")
    assert bench.ack(M.MAV_CMD_DO_SET_MODE) == M.MAV_RESULT_ACCEPTED
    bench.run(1.0, send=gcs.heartbeat, every=0.5)
    gcs.heartbeat()  # the last one: the silence counts from here
    bench.run(bench.emu.config.tick)


def test_data_link_loss_lands_per_nav_dll_act_after_com_dl_loss_t(bench: Bench) -> None:
    _hold_with_a_ground_station(bench, 3, (0.0, 0.0, -1.2))  # 3: Land
    bench.run(4.8)  # no ground station for less than COM_DL_LOSS_T
    assert bench.emu.commander.mode == "AUTO.LOITER" and bench.emu.commander.failsafe == ""
    bench.run(0.4)
    assert bench.emu.commander.mode == "AUTO.LAND" and bench.emu.commander.failsafe == "data_link_loss"
    assert any("ground station link" in m.text for m in bench.gcs.of("STATUSTEXT"))
    bench.run(5.0)
    assert not bench.emu.commander.armed and bench.emu.landed() and bench.emu.crashes == 0
    bench.gcs.heartbeat()
    bench.run(0.1)
    assert any("regained" in m.text for m in bench.gcs.of("STATUSTEXT"))


def test_data_link_loss_returns_home_per_nav_dll_act(bench: Bench) -> None:
    _hold_with_a_ground_station(bench, 2, (1.0, 0.6, -1.2))  # 2: Return, from 1 m north, 0.6 m east
    bench.run(5.2)
    assert bench.emu.commander.mode == "AUTO.RTL" and bench.emu.commander.failsafe == "data_link_loss"
    bench.run(9.0)  # back over home at its altitude, down at MPC_LAND_SPEED, disarmed
    assert not bench.emu.commander.armed and bench.emu.crashes == 0
    assert np.linalg.norm(bench.emu.data.qpos[:2] - bench.emu.origin[:2]) < 0.25
    assert bench.mode() == "RTL"


def test_data_link_loss_disabled_warns_and_an_onboard_computers_silence_is_not_it(bench: Bench) -> None:
    """NAV_DLL_ACT 0 (PX4's default): a warning, the mode kept. And in OFFBOARD with the
    setpoints still streaming, a lost ground station is the data-link failsafe, not the
    offboard-loss one; an onboard computer's heartbeats never were the data link."""
    _hold_with_a_ground_station(bench, 0, (0.0, 0.0, -1.0))
    bench.run(5.5)
    assert bench.emu.commander.mode == "AUTO.LOITER" and bench.emu.commander.armed
    assert any("Connection to ground station lost" in m.text for m in bench.gcs.of("STATUSTEXT"))
    gcs = bench.gcs
    gcs.set_param("NAV_DLL_ACT", 3.0, M.MAV_PARAM_TYPE_INT32)
    onboard = lambda: gcs.conn.mav.heartbeat_send(M.MAV_TYPE_ONBOARD_CONTROLLER, M.MAV_AUTOPILOT_INVALID,  # noqa: E731
                                                  0, 0, M.MAV_STATE_ACTIVE)
    setpoint = lambda: gcs.local_ned(POSITION_ONLY, (0.0, 0.0, -1.0))  # noqa: E731
    bench.run(1.2, send=lambda: (gcs.heartbeat(), setpoint()), every=0.02)  # the ground station is back
    gcs.set_mode("OFFBOARD")
    assert bench.ack(M.MAV_CMD_DO_SET_MODE) == M.MAV_RESULT_ACCEPTED
    bench.run(5.5, send=lambda: (onboard(), setpoint()), every=0.02)  # setpoints and an onboard computer only
    assert bench.emu.commander.mode == "AUTO.LAND" and bench.emu.commander.failsafe == "data_link_loss"
    assert bench.emu.commander.counters.get("offboard_loss", 0) == 0




def _offboard_with_rc(bench: Bench, **params: float) -> None:
    """A pilot's RC present; ``params`` set (integers as INT32); up to 1 m in OFFBOARD,
    the setpoints streaming on."""
    for name, value in params.items():
        kind = M.MAV_PARAM_TYPE_REAL32 if name.endswith("_T") else M.MAV_PARAM_TYPE_INT32
        bench.gcs.set_param(name, float(value), kind)
    bench.emu.set_rc(True)
    bench.run(0.02)
    assert all(bench.emu.commander.params[k] == v for k, v in params.items())
    bench.take_off(lambda: bench.gcs.local_ned(POSITION_ONLY, (0.0, 0.0, -1.0)), climb=3.0, every=0.02)
    assert bench.emu.commander.mode == "OFFBOARD" and bench.emu.commander.manual_control()


def test_rc_loss_lands_per_nav_rcl_act_after_com_rc_loss_t(bench: Bench) -> None:
    _offboard_with_rc(bench, NAV_RCL_ACT=3, COM_RC_LOSS_T=0.5)  # 3: Land; no exception for OFFBOARD
    setpoint = lambda: bench.gcs.local_ned(POSITION_ONLY, (0.0, 0.0, -1.0))  # noqa: E731
    bench.emu.set_rc(False)  # the pilot's radio out of range; the host still streams
    bench.run(0.45, send=setpoint, every=0.02)
    assert bench.emu.commander.mode == "OFFBOARD" and bench.emu.commander.failsafe == ""
    bench.run(0.1, send=setpoint, every=0.02)
    assert bench.emu.commander.mode == "AUTO.LAND" and bench.emu.commander.failsafe == "rc_loss"
    assert any("manual control lost" in m.text for m in bench.gcs.of("STATUSTEXT"))
    bench.run(5.0)
    assert not bench.emu.commander.armed and bench.emu.landed() and bench.emu.crashes == 0
    bench.emu.set_rc(True)
    bench.run(0.1)
    assert any("Manual control regained" in m.text for m in bench.gcs.of("STATUSTEXT"))


def test_an_offboard_flight_excepted_from_rc_loss_flies_on_and_its_offboard_loss_lands(bench: Bench) -> None:
    """COM_RCL_EXCEPT bit 2: the host's offboard flight ignores the pilot's radio (a warning
    only). Its offboard loss then finds no manual control to hand over to: Position mode
    (COM_OBL_RC_ACT 0) falls back to Land."""
    _offboard_with_rc(bench, NAV_RCL_ACT=3, COM_RCL_EXCEPT=4, COM_OBL_RC_ACT=0)
    bench.emu.set_rc(False)
    bench.run(2.0, send=lambda: bench.gcs.local_ned(POSITION_ONLY, (0.0, 0.0, -1.0)), every=0.02)
    assert bench.emu.commander.mode == "OFFBOARD" and bench.emu.commander.counters.get("rc_loss", 0) == 0
    assert any("Manual control lost" in m.text for m in bench.gcs.of("STATUSTEXT"))
    bench.run(1.2)  # the host falls silent: COM_OF_LOSS_T (1 s)
    assert bench.emu.commander.mode == "AUTO.LAND" and bench.emu.commander.failsafe == "offboard_loss"


def test_offboard_loss_with_a_pilots_rc_hands_over_in_position_mode(bench: Bench) -> None:
    """COM_OBL_RC_ACT 0 with the RC there: Position mode, the vehicle holding where it was
    for the pilot (sticks centred), neither landing nor drifting."""
    _offboard_with_rc(bench, COM_OBL_RC_ACT=0)
    where = bench.emu.data.qpos[:3].copy()
    bench.run(1.1)  # the host falls silent
    assert bench.emu.commander.mode == "POSCTL" and bench.emu.commander.failsafe == "offboard_loss"
    bench.run(3.0)
    assert bench.mode() == "POSCTL" and bench.emu.commander.armed and bench.emu.crashes == 0
    assert np.linalg.norm(bench.emu.data.qpos[:3] - where) < 0.2
