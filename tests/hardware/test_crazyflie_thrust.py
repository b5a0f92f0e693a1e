"""The Crazyflie's thrust model against the emulated firmware and motors (issue 44, item 3):
the emulated drone hovers where a real Crazyflie 2.1 does, the backend's identification
finds the hover command from a hover log, and battery sag is compensated. The host side
is driven with the tests' own clock (no cflib threads): the firmware gets what cflib's
Commander encodes, and the host reads what the firmware logs."""

from __future__ import annotations

import math
import socket

import numpy as np
import pytest
from cflib.crazyflie.commander import Commander
from cflib.crtp.crtpstack import CRTPPacket

import sim2real  # noqa: F401  (first: picks MUJOCO_GL before mujoco is imported)
from sim2real.hardware.crazyflie.identify import HoverLog, identify_hover
from sim2real.hardware.crazyflie.thrust import CURVES, PWM_FULL, ThrustMap, ctbr_to_setpoint
from sim2real.hardware.emulator.crazyflie import CrazyflieEmulator, CrazyflieEmulatorConfig
from sim2real.hardware.emulator.crazyflie_battery import BatteryConfig
from sim2real.sim.drone import constants as C
from sim2real.sim.drone.position_control import CascadedPID

REAL_HOVER_PWM = 36000
"""A Crazyflie 2.1 hovers near this command (the firmware's ``PID_VEL_THRUST_BASE``)."""


class Pilot:
    """A host that flies the emulator with its own controller through a thrust map,
    reading only what the firmware logs (state estimate, ``pm.vbat``)."""

    def __init__(self, emulator: CrazyflieEmulator, thrust_map: ThrustMap) -> None:
        self.emulator, self.map = emulator, thrust_map
        self.assumed_vbat: float | None = None
        """The battery voltage the map is given instead of ``pm.vbat`` (None: the logged one)."""
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", 0))
        self.commander = Commander(self)
        self.now = 0.0
        self.log: dict[str, list[float]] = {k: [] for k in ("t", "thrust", "z", "vz", "tilt", "vbat", "pwm")}
        for axis in ("Roll", "Pitch", "Yaw"):  # rate mode, as the backend sets it
            emulator.params.set(f"flightmode.stabMode{axis}", 0)
        self.commander.send_setpoint(0.0, 0.0, 0.0, 0)  # releases the thrust lock

    def send_packet(self, pk: CRTPPacket) -> None:
        self.emulator.handle(bytes((pk.header,)) + bytes(pk.data), self.sock.getsockname(), self.now)

    def state(self) -> dict[str, float]:
        e = self.emulator
        return e.log_values(e.drone.state())

    def fly(self, seconds: float, thrust_for) -> None:  # type: ignore[no-untyped-def]
        """``seconds`` of 50 Hz commands ``[thrust N, p, q, r] = thrust_for(state)``."""
        e = self.emulator
        per_control = round(C.CONTROL_DT / e.config.tick)
        for k in range(round(seconds / e.config.tick)):
            if k % per_control == 0:
                s = self.state()
                command = thrust_for(s)
                vbat = s["pm.vbat"] if self.assumed_vbat is None else self.assumed_vbat
                setpoint = ctbr_to_setpoint(command, self.map, vbat)
                self.commander.send_setpoint(*setpoint)
                quat = np.array([s[f"stateEstimate.q{a}"] for a in "wxyz"])
                for key, value in (("t", self.now), ("thrust", command[0]), ("z", s["stateEstimate.z"]),
                                   ("vz", s["stateEstimate.vz"]), ("tilt", _tilt(quat)), ("vbat", s["pm.vbat"]),
                                   ("pwm", setpoint[3])):
                    self.log[key].append(float(value))
            e.tick(self.now)
            self.now += e.config.tick

    def hover_log(self) -> HoverLog:
        a = {k: np.array(v) for k, v in self.log.items()}
        return HoverLog(times=a["t"], thrust=a["thrust"], height=a["z"], vz=a["vz"], tilt=a["tilt"], vbat=a["vbat"])

    def close(self) -> None:
        self.sock.close()


def _tilt(quat: np.ndarray) -> float:
    _, x, y, _ = quat
    return float(1.0 - 2.0 * (x * x + y * y))


def position_hold(target: np.ndarray):  # type: ignore[no-untyped-def]
    """The simulator's cascaded PID (integrator on): holds ``target`` whatever the thrust map."""
    pid = CascadedPID(1, dt=C.CONTROL_DT)

    def command(s: dict[str, float]) -> np.ndarray:
        pos = np.array([s[f"stateEstimate.{a}"] for a in "xyz"])
        vel = np.array([s[f"stateEstimate.v{a}"] for a in "xyz"])
        quat = np.array([s[f"stateEstimate.q{a}"] for a in "wxyz"])
        gyro = np.radians([s[f"gyro.{a}"] for a in "xyz"])
        rot = np.zeros(9)
        import mujoco

        mujoco.mju_quat2Mat(rot, quat)
        action = pid.act(np.concatenate([target - pos, vel, rot, gyro, np.zeros(4)]))
        return np.r_[(action[0] + 1.0) / 2.0 * C.MAX_COLLECTIVE_THRUST, action[1:] * C.MAX_BODY_RATE]

    return command


def height_pd(target: float):  # type: ignore[no-untyped-def]
    """A height hold with no integrator: its height error is the thrust model's error."""

    def command(s: dict[str, float]) -> np.ndarray:
        quat = np.array([s[f"stateEstimate.q{a}"] for a in "wxyz"])
        w, x, y, z = quat
        roll = math.atan2(2 * (w * x + y * z), 1 - 2 * (x * x + y * y))
        pitch = math.asin(max(-1.0, min(1.0, 2 * (w * y - z * x))))
        accel = C.GRAVITY + 4.0 * (target - s["stateEstimate.z"]) - 3.0 * s["stateEstimate.vz"]
        return np.array([C.MASS * accel / max(_tilt(quat), 0.5), -6.0 * roll, -6.0 * pitch, 0.0])

    return command


def emulator(**overrides) -> CrazyflieEmulator:  # type: ignore[no-untyped-def]
    return CrazyflieEmulator(CrazyflieEmulatorConfig(port=0, **overrides))


def test_published_curves_hover_a_crazyflie_near_36000() -> None:
    """Bitcraze's motor curve at a full battery and Förster's quadratic agree on the hover
    command of the description's drone within 5 %, near the firmware's 36000."""
    per_motor = C.HOVER_THRUST / 4
    bitcraze = CURVES["cf21"].volts(per_motor) / 4.2 * PWM_FULL
    a, b, c = 2.130295e-11, 1.032633e-6, 5.484560e-4 - per_motor  # Förster 2015, per motor, N
    forster = (-b + math.sqrt(b * b - 4 * a * c)) / (2 * a)
    assert abs(bitcraze / forster - 1) < 0.05 and abs(forster / REAL_HOVER_PWM - 1) < 0.03
    assert abs(ThrustMap().hover_command() / REAL_HOVER_PWM - 1) < 0.03  # the stock firmware's compensated map


@pytest.mark.parametrize("compensation", [True, False], ids=["stock-firmware", "no-firmware-compensation"])
def test_emulated_crazyflie_hovers_near_36000_at_full_battery(compensation: bool) -> None:
    """The command that holds the emulated drone in the air at a full battery is a real
    CF2.1's (was 28900: a linear map through the simulated motors' 0.6 N)."""
    emu = emulator(start="air", battery_compensation=compensation)
    pilot = Pilot(emu, ThrustMap(firmware_compensation=compensation))
    try:
        pilot.fly(4.0, position_hold(np.array([*emu.data.qpos[:2], 1.0])))
        hover = np.array(pilot.log["pwm"][-75:])
        z = np.array(pilot.log["z"][-75:])
    finally:
        pilot.close()
        emu.close()
    assert np.ptp(z) < 0.05 and abs(z.mean() - 1.0) < 0.05, "not hovering"
    assert abs(hover.mean() / REAL_HOVER_PWM - 1) < 0.08, hover.mean()


@pytest.mark.parametrize("compensation", [True, False], ids=["stock-firmware", "no-firmware-compensation"])
def test_identification_recovers_the_hover_command_from_a_hover_log(compensation: bool) -> None:
    """A 25 % heavier drone flown on the nominal map: the fit over 3 s of take-off and
    hover finds the command that hovers it within 3 % of what holds it in the air after."""
    emu = emulator(start="air", battery_compensation=compensation, dr={"mass_scale": [1.25, 1.25]})
    nominal = ThrustMap(firmware_compensation=compensation)
    pilot = Pilot(emu, nominal)
    try:
        hold = position_hold(np.array([*emu.data.qpos[:2], 1.2]))
        pilot.fly(3.0, hold)
        fit = identify_hover(pilot.hover_log(), nominal)
        start = len(pilot.log["pwm"])
        pilot.fly(3.0, hold)
        held = float(np.mean(pilot.log["pwm"][start + 75:]))
        vbat = float(np.mean(pilot.log["vbat"][start + 75:]))
    finally:
        pilot.close()
        emu.close()
    assert abs(fit.thrust_scale - 1.25) < 0.05, fit
    identified = fit.thrust_map(nominal).hover_command(vbat)
    assert abs(identified / held - 1) < 0.03, (identified, held, fit)


def test_battery_sag_is_compensated_by_the_host_map() -> None:
    """A firmware without battery compensation: as the battery drains from full to 3.5 V,
    the host map, fed with ``pm.vbat``, keeps a height hold without integrator within 5 cm;
    a map that ignores the battery sinks (what the test would see without compensation)."""
    results = {}
    for label, battery_aware in (("compensated", True), ("ignored", False)):
        emu = emulator(start="air", battery_compensation=False, battery=BatteryConfig(charge=1.0))
        pilot = Pilot(emu, ThrustMap(firmware_compensation=False))
        try:
            pilot.fly(1.5, height_pd(1.0))
            full_v = pilot.log["vbat"][-1]
            if not battery_aware:  # the command the full battery needed, whatever the battery does now
                pilot.assumed_vbat = full_v
            start = len(pilot.log["z"])
            for _ in range(30):  # drain the cell to 10 % over 3 s (a fast-forwarded flight)
                emu.battery_model.charge = max(emu.battery_model.charge - 0.03, 0.1)
                pilot.fly(0.1, height_pd(1.0))
            z = np.array(pilot.log["z"][start:])
            results[label] = (float(np.max(np.abs(z[-25:] - 1.0))), full_v, pilot.log["vbat"][-1])
        finally:
            pilot.close()
            emu.close()
    error, v_start, v_end = results["compensated"]
    assert v_start - v_end > 0.4, results  # the battery did sag
    assert error < 0.05, results
    assert results["ignored"][0] > 0.15, results
