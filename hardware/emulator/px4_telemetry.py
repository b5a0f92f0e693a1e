"""The PX4 emulator's telemetry: what it streams each tick, in PX4's frames and messages
(HEARTBEAT with PX4's mode, EXTENDED_SYS_STATE, BATTERY_STATUS, ATTITUDE_QUATERNION,
HIGHRES_IMU, LOCAL_POSITION_NED) and the commander's STATUSTEXTs."""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np
from pymavlink.dialects.v20 import common as mavlink

from sim2real.hardware.emulator.px4_commander import Commander
from sim2real.hardware.emulator.px4_control import Target
from sim2real.hardware.px4 import frames, modes
from sim2real.sim.core.deployment import Measurements


class _Config(Protocol):
    rates_hz: dict[str, float]
    tick: float


class Vehicle(Protocol):
    """What the link reads and sets on the vehicle (:class:`~.px4.Px4Emulator`)."""

    @property
    def config(self) -> _Config: ...
    commander: Commander
    target: Target | None
    origin: np.ndarray
    frame: Measurements | None
    estimate_valid: bool
    charge: float
    battery_cells: int
    boot: float | None

    def battery_voltage(self) -> float: ...
    def specific_force(self) -> np.ndarray: ...
    def landed(self) -> bool: ...
    def local_position(self, frame: Measurements) -> tuple[np.ndarray, np.ndarray]: ...


class Link(Protocol):
    """What the telemetry needs of the link (:class:`~.px4_link.Px4Link`)."""

    vehicle: Vehicle
    mav: Any

    def due(self, name: str, now: float) -> bool: ...
    def send(self, msg: Any) -> None: ...


def send_telemetry(link: Link, now: float) -> None:
    """The telemetry due at ``now`` and any STATUSTEXT the commander queued, through ``link``."""
    v, c = link.vehicle, link.vehicle.commander
    boot_ms = int((now - (v.boot if v.boot is not None else now)) * 1000.0) & 0xFFFFFFFF
    while c.texts:
        severity, text = c.texts.pop(0)
        link.send(link.mav.statustext_encode(severity, text.encode()))
    if link.due("HEARTBEAT", now):
        link.send(_heartbeat(link))
    if link.due("EXTENDED_SYS_STATE", now):
        link.send(link.mav.extended_sys_state_encode(mavlink.MAV_VTOL_STATE_UNDEFINED, _landed_state(link)))
    if link.due("BATTERY_STATUS", now):
        volts = [min(int(v.battery_voltage() / v.battery_cells * 1000), 65534)] * v.battery_cells
        volts += [65535] * (10 - len(volts))
        link.send(link.mav.battery_status_encode(0, mavlink.MAV_BATTERY_FUNCTION_ALL, mavlink.MAV_BATTERY_TYPE_LIPO,
                                                 32767, volts, -1, -1, -1, int(round(v.charge * 100))))
    frame = v.frame
    if frame is None or frame.base_quat is None:
        return
    rates = frames.flu_to_frd(np.asarray(frame.base_ang_vel))
    if link.due("ATTITUDE_QUATERNION", now):
        q = frames.quat_enu_flu_to_ned_frd(np.asarray(frame.base_quat))
        link.send(link.mav.attitude_quaternion_encode(boot_ms, q[0], q[1], q[2], q[3], rates[0], rates[1], rates[2],
                                                      [0.0, 0.0, 0.0, 0.0]))
    if link.due("HIGHRES_IMU", now):
        acc = frames.flu_to_frd(v.specific_force())
        link.send(link.mav.highres_imu_encode(boot_ms * 1000, acc[0], acc[1], acc[2], rates[0], rates[1], rates[2],
                                              0.0, 0.0, 0.0, 1013.25, 0.0, 0.0, 25.0, 0b111111, 0))
    if link.due("LOCAL_POSITION_NED", now) and v.estimate_valid:
        pos, vel = v.local_position(frame)
        link.send(link.mav.local_position_ned_encode(boot_ms, pos[0], pos[1], pos[2], vel[0], vel[1], vel[2]))

def _heartbeat(link: Link) -> Any:
    c = link.vehicle.commander
    base = mavlink.MAV_MODE_FLAG_CUSTOM_MODE_ENABLED | mavlink.MAV_MODE_FLAG_STABILIZE_ENABLED
    if c.mode == "OFFBOARD" or c.mode.startswith("AUTO"):
        base |= mavlink.MAV_MODE_FLAG_GUIDED_ENABLED | (mavlink.MAV_MODE_FLAG_AUTO_ENABLED if
                                                        c.mode.startswith("AUTO") else 0)
    if c.armed:
        base |= mavlink.MAV_MODE_FLAG_SAFETY_ARMED
    state = (mavlink.MAV_STATE_CRITICAL if c.failsafe else
             mavlink.MAV_STATE_ACTIVE if c.armed else mavlink.MAV_STATE_STANDBY)
    return link.mav.heartbeat_encode(mavlink.MAV_TYPE_QUADROTOR, mavlink.MAV_AUTOPILOT_PX4, base,
                                     modes.custom_mode(c.mode), state)

def _landed_state(link: Link) -> int:
    v, c = link.vehicle, link.vehicle.commander
    if v.landed():
        return mavlink.MAV_LANDED_STATE_ON_GROUND
    return mavlink.MAV_LANDED_STATE_LANDING if c.mode == "AUTO.LAND" else mavlink.MAV_LANDED_STATE_IN_AIR
