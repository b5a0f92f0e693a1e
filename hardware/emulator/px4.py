"""A PX4 multicopter behind MAVLink 2 on UDP, backed by the simulated drone.

As PX4 SITL's offboard link (``mavlink start -u 14580 -o 14540``): it listens on
``port`` (14580) and sends to ``gcs_port`` (14540, where MAVSDK, MAVROS and
``mavutil``'s ``udpin:`` listen) on the same host, then to whoever last sent it a valid
message. It streams HEARTBEAT (1 Hz; PX4's main/sub mode in ``custom_mode``,
:mod:`sim2real.hardware.px4.modes`), ATTITUDE_QUATERNION, LOCAL_POSITION_NED,
HIGHRES_IMU (50 Hz), EXTENDED_SYS_STATE (5 Hz) and BATTERY_STATUS (1 Hz), all in PX4's
frames (:mod:`sim2real.hardware.px4.frames`: local NED from where it booted, body FRD).
It takes COMMAND_LONG (``MAV_CMD_DO_SET_MODE``, ``MAV_CMD_COMPONENT_ARM_DISARM``, each
answered with COMMAND_ACK), SET_ATTITUDE_TARGET, SET_POSITION_TARGET_LOCAL_NED,
PARAM_REQUEST_READ/LIST and PARAM_SET; modes, arming and the failsafes are
:mod:`.px4_commander`'s, the controllers :mod:`.px4_control`'s.

A datagram that does not parse (bad CRC, truncated, garbage), a message for another
system, a setpoint with non-finite values, or one not handled is counted and dropped.
Every state frame goes through :meth:`StreamFaults.due` before it is encoded, as on every
other protocol.
"""

from __future__ import annotations

import math
import select
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from sim2real.hardware.emulator.base import EmulatorSettings, MotionOnset
from sim2real.hardware.emulator.faults import StreamFaults
from sim2real.hardware.emulator.px4_commander import Commander
from sim2real.hardware.emulator.px4_control import Px4Control, Target
from sim2real.hardware.emulator.px4_link import Px4Link
from sim2real.hardware.emulator.simulated_drone import DroneEmulator, SimulatedDrone, check_tick
from sim2real.hardware.px4 import frames
from sim2real.hardware.realtime import EMULATOR_PRIORITY, FIRST_CPU, realtime_thread
from sim2real.sim import robot_deployment
from sim2real.sim.core.deployment import Measurements
from sim2real.sim.core.errors import ConfigError
from sim2real.sim.drone import constants as C
from sim2real.sim.drone.airframe import PAD_TOP, airframe
from sim2real.sim.drone.base import quat_to_mat
from sim2real.sim.drone.position_control import is_landed

RATES_HZ: dict[str, float] = {"HEARTBEAT": 1.0, "ATTITUDE_QUATERNION": 50.0, "LOCAL_POSITION_NED": 50.0,
                              "HIGHRES_IMU": 50.0, "EXTENDED_SYS_STATE": 5.0, "BATTERY_STATUS": 1.0}
"""Streams and their rates (PX4's ``onboard`` MAVLink mode, rounded)."""


@dataclass
class Px4EmulatorConfig:
    host: str = "127.0.0.1"
    """Address it listens on and sends to (loopback)."""
    port: int = 14580
    """UDP port it listens on (PX4 SITL's offboard link; 0: any free one)."""
    gcs_port: int = 14540
    """UDP port it sends to before anyone has spoken to it (the offboard API's)."""
    task: str = "DroneHover"
    """A drone task; its robot is the vehicle (``DroneHover``: the Crazyflie-scale drone,
    ``X500Hover``: the X500)."""
    airframe: str = ""
    """The quadrotor it flies (:mod:`sim2real.sim.drone.airframe`: ``crazyflie``, ``x500``;
    empty: the task's robot's)."""
    seed: int = 0
    start: str = "ground"
    tick: float = C.INNER_DT
    """Seconds per controller tick (one body-rate step and its physics)."""
    rates_hz: dict[str, float] = field(default_factory=lambda: dict(RATES_HZ))
    battery_charge: float = 1.0
    """Charge at boot, 0..1."""
    battery_seconds: float = 420.0
    """Seconds of hover a full charge lasts (the Crazyflie-scale airframe's ~7 min)."""
    battery_cells: int = 0
    """Cells in series of the pack it reports (0: the airframe's)."""

    def validate(self) -> None:
        for name in ("port", "gcs_port"):
            if not 0 <= int(getattr(self, name)) <= 65535:
                raise ConfigError(name, f"must be 0..65535, got {getattr(self, name)}")
        check_tick(self.tick)
        if self.airframe:
            airframe(self.airframe)
        if not 0.0 <= self.battery_charge <= 1.0:
            raise ConfigError("battery_charge", f"must be in 0..1, got {self.battery_charge}")
        unknown = set(self.rates_hz) - set(RATES_HZ)
        if unknown or not all(math.isfinite(r) and r > 0 for r in self.rates_hz.values()):
            raise ConfigError("rates_hz", f"streams of {sorted(RATES_HZ)} at rates > 0, got {self.rates_hz}")


class Px4Emulator(DroneEmulator):
    """One simulated PX4 multicopter behind a UDP socket. :meth:`serve` runs it in real
    time; :meth:`poll` and :meth:`tick` are its steps."""


    def __init__(self, config: Px4EmulatorConfig | None = None, faults: StreamFaults | None = None) -> None:
        self.config = cfg = config or Px4EmulatorConfig()
        cfg.validate()
        self.faults = faults or StreamFaults()
        self.drone = SimulatedDrone(cfg.task, cfg.tick, seed=cfg.seed, start=cfg.start,
                                    **({"airframe": cfg.airframe} if cfg.airframe else {}))
        self.airframe = self.drone.task.airframe
        self.battery_cells = cfg.battery_cells or self.airframe.battery_cells
        self.env, self.task, self.model, self.data = self.drone.env, self.drone.task, self.drone.model, self.drone.data
        self.origin = np.array(self.data.qpos[:3], dtype=np.float64)
        """Where it booted (world ENU): the local NED frame's origin, as PX4's EKF origin."""
        self.commander = Commander(self.prearm_failures)
        self.control = Px4Control(cfg.tick, self.airframe, home=self.origin)
        self.target: Target | None = None
        self.charge = cfg.battery_charge
        self.estimate_valid = True
        self.rc_present = False
        """The pilot's RC receiver has a signal (:meth:`set_rc`; none by default)."""
        """False: the estimator has no position (a fault): no LOCAL_POSITION_NED, no arming."""
        self.link = Px4Link(self, cfg.host, cfg.port, cfg.gcs_port)
        self.address = self.link.address
        self.boot: float | None = None
        self.frame: Measurements | None = None
        """The newest state frame past the stream faults (what telemetry encodes)."""
        self.ticks = self.overruns = 0
        self.realtime: dict[str, Any] = {}
        self.onset = MotionOnset(threshold=0.01)
        self._flown = False
        self._closed = False

    @classmethod
    def launch(cls, settings: EmulatorSettings) -> Px4Emulator:
        port = Px4EmulatorConfig.port if settings.port is None else settings.port
        config = Px4EmulatorConfig(host=settings.host, port=port,
                                   task=settings.task or robot_deployment(settings.robot or cls.robot).task,
                                   seed=settings.seed, airframe=settings.airframe)
        return cls(config, settings.faults)

    def connect_options(self) -> dict[str, Any]:
        return {"url": f"udpout:{self.address[0]}:{self.address[1]}",
                "home": [round(float(v), 6) for v in self.origin],  # PX4's local origin in the task's frame
                "airframe": self.airframe.name}  # the thrust that normalized thrust 1 means

    # -- the vehicle's state ----------------------------------------------------------------------
    def prearm_failures(self) -> list[str]:
        failing = []
        if not self.estimate_valid:
            failing.append("no valid position estimate")
        if self.charge < self.commander.params["BAT_LOW_THR"]:
            failing.append("battery low")
        return failing

    def landed(self) -> bool:
        """The land detector, on the ground it booted on (its origin rests on it)."""
        d = self.data
        ground = self.origin[2] - self.airframe.rest_height + PAD_TOP
        clearance = self.airframe.clearance(d.qpos[None, 2], quat_to_mat(d.qpos[None, 3:7]), ground)
        return bool(is_landed(clearance, d.qvel[None, :3])[0])

    def battery_voltage(self) -> float:
        return self.battery_cells * (3.5 + 0.7 * self.charge)

    def set_estimate(self, valid: bool) -> None:
        """Fault: the estimator loses (False) or regains its position."""
        self.estimate_valid = bool(valid)

    def set_rc(self, present: bool) -> None:
        """A pilot's RC: its receiver gains (True) or loses (False) the radio's signal."""
        self.rc_present = bool(present)

    def set_link(self, up: bool, downlink_only: bool = False) -> None:
        """Fault: drop (False) or restore the MAVLink link both ways, or with
        ``downlink_only`` only what the vehicle sends (its state lost, it still hears the host)."""
        if downlink_only:
            self.link.downlink_up = bool(up)
        else:
            self.link.link_up = bool(up)

    # -- one tick ------------------------------------------------------------------------------------
    def tick(self, now: float) -> None:
        if self.boot is None:
            self.boot = now
        d = self.data
        landed = self.landed()
        if self.rc_present:
            self.commander.rc_signal(now)
        self.commander.update(now, landed)
        thrusts = self.control.thrusts(self.commander.mode, self.commander.armed, landed, self.target,
                                       self.commander.params["MPC_LAND_SPEED"], d.qpos[:3], d.qvel[:3],
                                       d.qpos[3:7], self.drone.gyro())
        af = self.airframe
        thrusts = np.clip(np.nan_to_num(thrusts), 0.0, af.max_thrust)
        self.charge = max(0.0, self.charge - float(thrusts.sum()) / af.hover_thrust * self.config.tick
                          / self.config.battery_seconds)
        self.drone.step(thrusts / af.max_thrust)
        self.ticks += 1
        self.onset.observe(now, d.qpos[:3], bool(d.ctrl.any()))
        self._flown |= self.commander.armed
        # The episodes count from the first arming on (the stopwatch starts when the host
        # starts flying, not while it connects and checks).
        if self._flown and self.ticks % self.drone.ticks_per_control == 0 and self.drone.evaluate():
            self.control.reset()
            self.commander.disarm("crashed")
        for frame in self.faults.due(now, self.drone.state()):
            self.frame = frame
        self.link.stream(now)

    def specific_force(self) -> np.ndarray:
        """The accelerometer (body FLU, m/s^2)."""
        return self.drone.specific_force()

    def local_position(self, frame: Measurements) -> tuple[np.ndarray, np.ndarray]:
        """(position, velocity) of a state frame in PX4's local NED."""
        return (frames.enu_to_ned(np.asarray(frame.base_pos) - self.origin),
                frames.enu_to_ned(np.asarray(frame.base_lin_vel)))

    # -- real time --------------------------------------------------------------------------------------
    def serve(self, duration: float = 0.0, should_stop: Callable[[], bool] | None = None) -> None:
        """Ticks on an absolute schedule, the link served between them, at real-time
        priority where permitted (a real autopilot runs this on its own MCU)."""
        with realtime_thread("px4 emulator", EMULATOR_PRIORITY, FIRST_CPU) as status:
            self.realtime = status.as_dict()
            start = next_tick = time.monotonic()
            dt = self.config.tick
            while not self._closed and not (should_stop is not None and should_stop()):
                now = time.monotonic()
                if duration > 0 and now - start >= duration:
                    return
                if now >= next_tick:
                    self.tick(now)
                    next_tick += dt
                    if time.monotonic() > next_tick + 5 * dt:  # fell behind: resynchronize, count it
                        self.overruns += 1
                        next_tick = time.monotonic() + dt
                try:
                    self.poll(min(max(next_tick - time.monotonic(), 0.0), 0.05))
                except (OSError, ValueError):
                    if self._closed:
                        return
                    raise

    def poll(self, timeout: float, now: float | None = None) -> None:
        """Handle every datagram arriving within ``timeout`` seconds (``now``: the caller's
        clock for them, tests' own; None: ``time.monotonic()``)."""
        end = time.monotonic() + max(timeout, 0.0)
        while True:
            left = end - time.monotonic()
            ready, _, _ = select.select([self.link.sock], [], [], max(left, 0.0))
            if ready:
                self.link.receive(time.monotonic() if now is None else now)
            if left <= 0:
                return

    def summary(self) -> dict[str, Any]:
        c = self.commander
        return {"robot": self.drone.task.robot, "address": f"{self.address[0]}:{self.address[1]}",
                "task": self.config.task,
                "ticks": self.ticks, "overruns": self.overruns, "realtime": self.realtime,
                "simulated_s": round(self.ticks * self.config.tick, 3), "mode": c.mode, "armed": c.armed,
                "failsafe": c.failsafe, "commander": dict(c.counters), "accepted": dict(self.link.accepted),
                "rejected": dict(self.link.rejected), "sent": self.link.sent,
                "battery_charge": round(self.charge, 4), **self.drone.summary(), **self.onset.summary()}

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self.link.close()
        self.drone.close()

