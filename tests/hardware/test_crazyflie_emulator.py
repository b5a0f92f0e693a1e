"""The emulated Crazyflie firmware over the simulated drone: cflib connects to it over
real UDP on loopback; the firmware behaviour (thrust lock, rate mode and its signs, the
commander watchdog, the e-stop, the high-level commander's landing and the commander's
priorities, malformed packets) is driven with the tests' own clock,
packets encoded by cflib's own Commander, so no test sleeps through the watchdog."""

from __future__ import annotations

import socket
import struct
import threading
import time
from collections.abc import Iterator

import numpy as np
import pytest
from cflib.crazyflie.commander import Commander
from cflib.crazyflie.high_level_commander import HighLevelCommander
from cflib.crtp.crtpstack import CRTPPacket

import sim2real  # noqa: F401  (first: picks MUJOCO_GL before mujoco is imported)
from sim2real.hardware.crazyflie import crtp
from sim2real.hardware.crazyflie.landing import CURRENT_YAW
from sim2real.hardware.crazyflie.thrust import ThrustMap, ctbr_to_setpoint
from sim2real.hardware.emulator.base import EmulatorSettings, emulator_class
from sim2real.hardware.emulator.crazyflie import CrazyflieEmulator, CrazyflieEmulatorConfig
from sim2real.hardware.emulator.crazyflie_firmware import WDT_LEVEL, WDT_SHUTDOWN, attitude
from sim2real.hardware.emulator.crazyflie_toc import LOG_TOC
from sim2real.hardware.emulator.faults import StreamFaults
from sim2real.sim.drone import constants as C

HOVER_PWM = ThrustMap().to_pwm(C.HOVER_THRUST)


class Host:
    """The host side without cflib's threads: cflib's Commander encodes, a UDP socket sends
    to the emulator's handler with the test's clock and receives its answers."""

    def __init__(self, emulator: CrazyflieEmulator) -> None:
        self.emulator = emulator
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.settimeout(0.5)
        self.commander = Commander(self)
        self.now = 0.0

    def send_packet(self, pk: CRTPPacket) -> None:  # what cflib's UdpDriver writes
        self.raw(bytes((pk.header,)) + bytes(pk.data))

    def raw(self, datagram: bytes) -> None:
        self.emulator.handle(datagram, self.sock.getsockname(), self.now)

    def param(self, name: str, value: int) -> None:
        ident = [e.full_name for e in self.emulator.params.entries].index(name)
        self.raw(crtp.encode(crtp.PORT_PARAM, crtp.PARAM_WRITE, struct.pack("<HB", ident, value)))

    def run(self, seconds: float, setpoint: tuple[float, float, float, int] | None = None) -> None:
        """Tick the emulator for ``seconds``, sending ``setpoint`` every 20 ms (None: silence)."""
        dt = self.emulator.config.tick
        for k in range(round(seconds / dt)):
            if setpoint is not None and k % 5 == 0:
                self.commander.send_setpoint(*setpoint)
            self.emulator.tick(self.now)
            self.now += dt

    def run_until(self, t: float) -> None:
        self.run(max(t - self.now, 0.0))

    def close(self) -> None:
        self.sock.close()


@pytest.fixture
def host() -> Iterator[Host]:
    emulator = CrazyflieEmulator(CrazyflieEmulatorConfig(port=0))
    h = Host(emulator)
    yield h
    h.close()
    emulator.close()


def height(e: CrazyflieEmulator) -> float:
    return float(e.data.qpos[2])


def test_cflib_connects_and_reads_both_tocs() -> None:
    import cflib.crtp
    from cflib.crazyflie import Crazyflie

    emulator = emulator_class("crazyflie").launch(EmulatorSettings(port=0))
    assert isinstance(emulator, CrazyflieEmulator)
    stop = threading.Event()
    server = threading.Thread(target=emulator.serve, kwargs={"should_stop": stop.is_set}, daemon=True)
    server.start()
    cflib.crtp.init_drivers()
    cf, connected = Crazyflie(rw_cache=None), threading.Event()
    cf.fully_connected.add_callback(lambda uri: connected.set())
    try:
        start = time.monotonic()
        cf.open_link(emulator.connect_options()["uri"])
        assert connected.wait(5.0), "cflib did not finish its connect sequence"
        assert time.monotonic() - start < 2.0
        assert cf.platform.get_protocol_version() == 12
        assert cf.log.toc is not None
        log = {f"{g}.{n}" for g, names in cf.log.toc.toc.items() for n in names}
        assert {"stateEstimate.x", "stateEstimate.qw", "gyro.z", "pm.vbat"} <= log
        assert cf.param.values["flightmode"]["stabModeRoll"] == "1"  # firmware default: ANGLE
        assert cf.param.values["flightmode"]["stabModeYaw"] == "0"
    finally:
        cf.close_link()
        stop.set()
        server.join(timeout=2.0)
        emulator.close()
    assert emulator.summary()["rejected"] == {}


def test_thrust_is_locked_until_a_zero_thrust_setpoint(host: Host) -> None:
    e, rest = host.emulator, height(host.emulator)
    host.run(0.5, (0.0, 0.0, 0.0, 45000))
    assert e.firmware.thrust_locked and not e.data.ctrl.any() and height(e) == pytest.approx(rest, abs=1e-3)
    assert e.firmware.counters["locked_thrust"] > 0
    host.run(0.1, (0.0, 0.0, 0.0, 0))
    host.run(0.2, (0.0, 0.0, 0.0, 900))  # below 1000: no power
    assert not e.firmware.thrust_locked and not e.data.ctrl.any()
    host.run(0.5, (0.0, 0.0, 0.0, 65000))
    assert e.firmware.applied_thrust == 60000 and e.data.ctrl.any() and height(e) > rest + 0.05


@pytest.mark.parametrize("rates", [(1.5, 0.0, 0.0), (0.0, 1.5, 0.0), (0.0, -1.5, 0.0), (0.0, 0.0, 1.0)])
def test_rate_mode_setpoints_turn_the_drone_with_the_right_signs(host: Host, rates: tuple[float, ...]) -> None:
    e = host.emulator
    for axis in ("Roll", "Pitch", "Yaw"):
        host.param(f"flightmode.stabMode{axis}", 0)
    host.run(0.04, (0.0, 0.0, 0.0, 0))
    host.run(0.4, ctbr_to_setpoint(np.r_[1.2 * C.HOVER_THRUST, 0.0, 0.0, 0.0], ThrustMap()))  # off the pad
    host.run(0.25, ctbr_to_setpoint(np.r_[C.HOVER_THRUST, rates], ThrustMap()))
    body = e.data.qvel[3:6]
    axis = int(np.argmax(np.abs(rates)))
    assert np.sign(body[axis]) == np.sign(rates[axis]) and abs(body[axis]) > 0.6 * abs(rates[axis])
    assert all(s.rate == (True, True, True) for s in list(e.firmware.history)[-5:])


def test_angle_mode_holds_the_commanded_attitude(host: Host) -> None:
    e = host.emulator
    host.run(0.04, (0.0, 0.0, 0.0, 0))
    host.run(0.6, (10.0, -8.0, 0.0, int(1.1 * HOVER_PWM)))  # cflib: roll 10 deg, pitch -8 deg (nose up)
    roll, pitch, _ = attitude(e.data.qpos[3:7])
    assert np.degrees(roll) == pytest.approx(10.0, abs=2.0) and np.degrees(pitch) == pytest.approx(-8.0, abs=2.0)


def test_watchdog_levels_at_half_a_second_and_cuts_the_motors_at_two(host: Host) -> None:
    """What a Crazyflie does when its host dies mid-flight (the bridge killed): it keeps the
    last setpoint, levels out after 0.5 s with the last thrust, stops its motors after
    2 s and locks until rebooted."""
    e = host.emulator
    host.run(0.04, (0.0, 0.0, 0.0, 0))
    last = (12.0, 0.0, 0.0, int(1.08 * HOVER_PWM))  # tilted 12 deg in roll, climbing slowly
    host.run(1.0, last)
    assert e.firmware.setpoint is not None
    silent_since = e.firmware.setpoint.time
    host.run_until(silent_since + WDT_LEVEL - 0.02)
    assert e.firmware.state == "flying" and np.degrees(attitude(e.data.qpos[3:7])[0]) > 8.0
    host.run_until(silent_since + WDT_LEVEL + 0.02)
    assert e.firmware.state == "level_out" and e.firmware.applied_thrust == last[3] and e.data.ctrl.any()
    host.run_until(silent_since + WDT_LEVEL + 0.6)
    assert abs(np.degrees(attitude(e.data.qpos[3:7])[0])) < 3.0  # levelled, motors still on
    host.run_until(silent_since + WDT_SHUTDOWN - 0.02)
    assert e.firmware.state == "level_out" and e.data.ctrl.any()
    fall_from = height(e)
    host.run_until(silent_since + WDT_SHUTDOWN + 0.02)
    assert e.firmware.state == "locked" and not e.data.ctrl.any()
    host.run(0.2, (0.0, 0.0, 0.0, 0))
    host.run(0.2, last)  # locked: setpoints no longer start the motors
    assert not e.data.ctrl.any() and e.firmware.counters["watchdog_cutoffs"] == 1
    host.run(1.0)  # and it falls: a crash from the height it had climbed to
    assert fall_from > 1.0 and e.episodes == [False]


def test_watchdog_ignores_a_drone_that_landed(host: Host) -> None:
    e = host.emulator
    host.run(0.04, (0.0, 0.0, 0.0, 0))
    host.run(0.3, (0.0, 0.0, 0.0, int(0.5 * HOVER_PWM)))  # spins the motors on the pad
    host.run(2.1, (0.0, 0.0, 0.0, 0))  # zero thrust past the 2 s is-flying hysteresis
    host.run(WDT_SHUTDOWN + 0.2)  # then silence
    assert e.firmware.state == "ready" and e.firmware.counters["watchdog_cutoffs"] == 0


@pytest.mark.parametrize("stop", ["supervisor", "localization"])
def test_emergency_stop_cuts_the_motors_and_latches(host: Host, stop: str) -> None:
    e = host.emulator
    host.run(0.04, (0.0, 0.0, 0.0, 0))
    host.run(0.3, (0.0, 0.0, 0.0, int(1.3 * HOVER_PWM)))
    assert e.data.ctrl.any()
    if stop == "supervisor":
        host.raw(crtp.encode(crtp.PORT_SUPERVISOR, crtp.SUPERVISOR_COMMAND, bytes((crtp.SUPERVISOR_EMERGENCY_STOP,))))
    else:
        host.raw(crtp.encode(crtp.PORT_LOCALIZATION, crtp.LOCALIZATION_GENERIC,
                             bytes((crtp.LOCALIZATION_EMERGENCY_STOP,))))
    host.run(0.004)
    assert not e.data.ctrl.any() and e.firmware.state == "locked"
    host.run(0.2, (0.0, 0.0, 0.0, int(1.3 * HOVER_PWM)))
    assert not e.data.ctrl.any() and e.firmware.info_bits() & (1 << 6)


def test_malformed_datagrams_are_counted_and_dropped(host: Host) -> None:
    e = host.emulator
    host.run(0.04, (0.0, 0.0, 0.0, 0))
    good = crtp.encode(crtp.PORT_COMMANDER, 0, crtp.RPYT_FORMAT.pack(0.0, 0.0, 0.0, 50000))
    before = e.firmware.counters["setpoints"]
    for datagram, reason in ((good[:-3], "truncated"), (good + b"\0", "oversize"), (b"", "empty"),
                             (bytes(40), "oversize"),
                             (crtp.encode(crtp.PORT_COMMANDER, 0, struct.pack("<fffH", float("nan"), 0, 0, 50000)),
                              "non_finite"),
                             (crtp.encode(0xB, 0, b"x"), "unknown_port")):
        count = e.rejected.get(reason, 0)
        host.raw(datagram)
        assert e.rejected.get(reason, 0) == count + 1, reason
    assert e.firmware.counters["setpoints"] == before and e.firmware.setpoint is not None
    assert e.firmware.setpoint.thrust == 0  # the last valid setpoint still stands
    # Over the real socket too: one truncated datagram, then a valid one.
    e.poll(0.0)
    host.sock.sendto(good[:5], e.address)
    host.sock.sendto(good, e.address)
    deadline = time.monotonic() + 2.0
    while e.firmware.counters["setpoints"] == before and time.monotonic() < deadline:
        e.poll(0.05, now=host.now)
    assert e.rejected["truncated"] == 2 and e.firmware.setpoint.thrust == 50000


def test_log_blocks_stream_at_their_period_through_the_faults() -> None:
    faults = StreamFaults(quat_order="xyzw", rate_hz=50.0)
    e = CrazyflieEmulator(CrazyflieEmulatorConfig(port=0), faults)
    host = Host(e)
    try:
        names = [v.full_name for v in LOG_TOC]
        ops = b"".join(struct.pack("<BH", 0x07, names.index(n)) for n in
                       ("stateEstimate.qw", "stateEstimate.qz", "stateEstimate.z"))
        host.raw(crtp.encode(crtp.PORT_LOG, crtp.LOG_SETTINGS, bytes((crtp.LOG_CREATE_BLOCK_V2, 1)) + ops))
        host.raw(crtp.encode(crtp.PORT_LOG, crtp.LOG_SETTINGS, bytes((crtp.LOG_START, 1, 1))))  # every 10 ms
        too_big = b"".join(struct.pack("<BH", 0x07, 0) for _ in range(7))
        host.raw(crtp.encode(crtp.PORT_LOG, crtp.LOG_SETTINGS, bytes((crtp.LOG_CREATE_BLOCK_V2, 2)) + too_big))
        host.run(0.2)
        packets = []
        while True:
            try:
                packets.append(crtp.decode(host.sock.recv(64)))
            except TimeoutError:
                break
            host.sock.settimeout(0.05)
        answers = [p.data for p in packets if p.port == crtp.PORT_LOG and p.channel == crtp.LOG_SETTINGS]
        assert answers == [bytes((crtp.LOG_CREATE_BLOCK_V2, 1, 0)), bytes((crtp.LOG_START, 1, 0)),
                           bytes((crtp.LOG_CREATE_BLOCK_V2, 2, 7))]  # 28 bytes of values: E2BIG
        data = [p.data for p in packets if p.port == crtp.PORT_LOG and p.channel == crtp.LOG_DATA]
        assert 8 <= len(data) <= 11  # 10 ms blocks, but the faulty stream gives 50 Hz
        qw, qz, z = struct.unpack("<fff", data[-1][4:])
        assert qz == pytest.approx(float(e.data.qpos[3]), abs=1e-3)  # xyzw: w landed in qz's place
        assert z == pytest.approx(float(e.data.qpos[2]), abs=1e-3) and abs(qw) < 0.1
    finally:
        host.close()
        e.close()


def test_mission_is_the_hover_target(host: Host) -> None:
    mission = host.emulator.mission()
    assert mission is not None and mission.goal is not None
    assert 0.8 <= mission.goal[2] <= 1.2 and np.allclose(mission.goal, host.emulator.task.target[0])


# -- the high-level commander (the backend's safe state hands the landing to it) ----------------
def _climb(host: Host) -> None:
    """Unlock, then 1 s at 1.2 x hover: about 0.6 m up and climbing at 1.4 m/s."""
    host.run(0.04, (0.0, 0.0, 0.0, 0))
    host.run(1.0, (0.0, 0.0, 0.0, int(1.2 * HOVER_PWM)))
    assert height(host.emulator) > 0.3


def test_the_high_level_landing_takes_over_after_notify_and_ends_with_the_motors_off(host: Host) -> None:
    """What the backend sends on a fault: land, then notify_setpoint_stop. The planner
    lands from where the drone is and leaves it idle (motors off); its setpoints are
    fresh every tick, so the watchdog never levels or cuts, whatever the link does."""
    e = host.emulator
    _climb(host)
    HighLevelCommander(host).land(0.0, 3.0, yaw=CURRENT_YAW)
    host.commander.send_notify_setpoint_stop()
    assert e.firmware.hl.state == "landing" and e.firmware.info_bits() & 0x100
    touchdown = None
    for _ in range(round(3.6 / 0.02)):  # no packet from the host from here on
        host.run(0.02)
        if touchdown is None and height(e) < C.REST_HEIGHT + 0.01:
            touchdown = -float(e.data.qvel[2])
        assert e.firmware.state in ("flying", "ready")  # never level_out or locked
    assert height(e) < C.REST_HEIGHT + 0.01 and not e.data.ctrl.any() and e.firmware.hl.state == "idle"
    assert touchdown is not None and touchdown < 0.7 and e.crashes == 0 and e.firmware.info_bits() & 0x200
    host.run(WDT_SHUTDOWN + 0.5)
    fw = e.firmware.counters
    assert fw["level_outs"] == 0 and fw["watchdog_cutoffs"] == 0 and e.firmware.state == "ready"
    assert e.firmware.hl.counters["hl_landings"] == 1


def test_notify_with_an_idle_planner_stops_the_motors(host: Host) -> None:
    """The firmware's order of things, and why the backend sends land first: a relaxed
    priority with nothing planned hands the commander to the idle planner's null setpoint."""
    e = host.emulator
    _climb(host)
    host.commander.send_notify_setpoint_stop()
    host.run(0.008)
    assert not e.data.ctrl.any() and e.firmware.setpoint is not None and e.firmware.setpoint.kind == "null"


def test_an_rpyt_setpoint_stops_the_landing_and_a_second_land_is_refused(host: Host) -> None:
    e = host.emulator
    _climb(host)
    hl = HighLevelCommander(host)
    hl.land(0.0, 3.0, yaw=CURRENT_YAW)
    host.commander.send_notify_setpoint_stop()
    host.run(0.2)
    hl.land(0.0, 3.0, yaw=CURRENT_YAW)  # plan_land while landing: refused, the landing goes on
    assert e.firmware.hl.counters["hl_refused"] == 1 and e.firmware.hl.state == "landing"
    host.run(0.2, (0.0, 0.0, 0.0, int(1.0 * HOVER_PWM)))  # the CRTP priority wins and stops the planner
    assert e.firmware.hl.state == "idle" and e.firmware.setpoint is not None and e.firmware.setpoint.kind == "rpyt"
    e.firmware.emergency_stop()
    hl.land(0.0, 3.0, yaw=CURRENT_YAW)  # locked: blocked
    assert e.firmware.hl.state == "idle" and e.firmware.hl.counters["hl_refused"] == 2
    for bad, reason in ((bytes((8,)) + bytes(5), "truncated"), (bytes((12,)) + bytes(20), "unsupported")):
        count = e.rejected.get(reason, 0)
        host.raw(crtp.encode(crtp.PORT_SETPOINT_HL, 0, bad))
        assert e.rejected.get(reason, 0) == count + 1
