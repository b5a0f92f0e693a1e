"""The log blocks the Crazyflie backend asks for, and their values as :class:`Measurements`.

Blocks (each at most 26 bytes of values, cflib's ``LogConfig.MAX_LEN``):

* ``odom``: ``stateEstimate.x/y/z`` (m) and ``vx/vy/vz`` (m/s, world frame), floats;
* ``imu``: ``stateEstimate.qx/qy/qz/qw`` (floats, body to world) and ``gyro.x/y/z``
  fetched as FP16 (the firmware converts; deg/s, body frame: resolution ~0.06 deg/s
  at 100 deg/s), so attitude and rates arrive in one packet;
* ``battery``: ``pm.vbat`` (V), ``pm.state`` (the power management: 3 is low battery) and
  ``supervisor.info`` (the supervisor's state bits).

Values are checked before use: non-finite numbers and quaternions far from unit norm
are counted and dropped (the state then goes stale, which the backend treats as a
fault). Stamps are host monotonic arrival times, per stream (``odom``, ``imu``).
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from typing import Any

import numpy as np
from cflib.crazyflie.log import LogConfig

from sim2real.sim.core.deployment import Measurements

ODOM = ("stateEstimate.x", "stateEstimate.y", "stateEstimate.z",
        "stateEstimate.vx", "stateEstimate.vy", "stateEstimate.vz")
QUAT = ("stateEstimate.qw", "stateEstimate.qx", "stateEstimate.qy", "stateEstimate.qz")
GYRO = ("gyro.x", "gyro.y", "gyro.z")
BATTERY = ("pm.vbat", "pm.state", "supervisor.info")
PM_LOW_POWER = 3
"""``pm.state`` lowPower: the battery under ``pm.lowVoltage`` for 5 s (``pm_stm32f4.c``)."""
QUAT_NORM_TOLERANCE = 0.05


def log_configs(state_period_ms: int, battery_period_ms: int) -> list[LogConfig]:
    """The three blocks, to add to ``cf.log`` and start."""
    odom, imu, battery = (LogConfig("odom", state_period_ms), LogConfig("imu", state_period_ms),
                          LogConfig("battery", battery_period_ms))
    for name in ODOM:
        odom.add_variable(name, "float")
    for name in ("stateEstimate.qx", "stateEstimate.qy", "stateEstimate.qz", "stateEstimate.qw"):
        imu.add_variable(name, "float")
    for name in GYRO:
        imu.add_variable(name, "FP16")
    battery.add_variable("pm.vbat", "float")
    battery.add_variable("pm.state", "int8_t")
    battery.add_variable("supervisor.info", "uint16_t")
    return [odom, imu, battery]


class StateAssembler:
    """Turns log packets into measurements and hands each complete one to ``publish``."""

    def __init__(self, publish: Callable[[Measurements], None]) -> None:
        self._publish = publish
        self._lock = threading.Lock()
        self.odom: tuple[np.ndarray, np.ndarray, float] | None = None
        self.imu: tuple[np.ndarray, np.ndarray, float] | None = None
        self.battery_v = math.nan
        self.pm_state: int | None = None
        """The firmware's power-management state (0 battery, 3 lowPower, ...)."""
        self.supervisor_info: int | None = None
        self.supervisor_info_time = -math.inf
        """Host time the supervisor's bits arrived."""
        self.counters: dict[str, int] = {"odom_frames": 0, "imu_frames": 0, "battery_frames": 0,
                                         "rejected_non_finite": 0, "rejected_quaternion": 0}
        self.last_frame = -math.inf
        """Host time of the latest log packet of any block (the link's heartbeat)."""

    def _count(self, name: str) -> None:
        self.counters[name] = self.counters.get(name, 0) + 1

    def on_data(self, timestamp: int, data: dict[str, Any], config: LogConfig) -> None:
        """cflib's ``data_received_cb`` (its incoming-packet thread)."""
        now = time.monotonic()
        self.last_frame = now
        try:
            values = {k: float(v) for k, v in data.items()}
        except (TypeError, ValueError):
            return self._count("rejected_non_finite")
        if not all(math.isfinite(v) for v in values.values()):
            return self._count("rejected_non_finite")
        if config.name == "odom":
            pos = np.array([values[n] for n in ODOM[:3]])
            vel = np.array([values[n] for n in ODOM[3:]])
            with self._lock:
                self.odom = (pos, vel, now)
            self._count("odom_frames")
        elif config.name == "imu":
            quat = np.array([values[n] for n in QUAT])
            if abs(float(np.linalg.norm(quat)) - 1.0) > QUAT_NORM_TOLERANCE:
                return self._count("rejected_quaternion")
            rates = np.radians([values[n] for n in GYRO])
            with self._lock:
                self.imu = (quat / np.linalg.norm(quat), rates, now)
            self._count("imu_frames")
        elif config.name == "battery":
            self.battery_v = values["pm.vbat"]
            self.pm_state = int(values["pm.state"])
            self.supervisor_info, self.supervisor_info_time = int(values["supervisor.info"]), now
            self._count("battery_frames")
            return None
        with self._lock:
            odom, imu = self.odom, self.imu
        if odom is None or imu is None:
            return None
        self._publish(Measurements(base_pos=odom[0].copy(), base_quat=imu[0].copy(), base_lin_vel=odom[1].copy(),
                                   base_ang_vel=imu[1].copy(), stamps={"odom": odom[2], "imu": imu[2]}))
        return None
