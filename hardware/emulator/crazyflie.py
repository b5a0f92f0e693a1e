"""A Crazyflie 2.x behind cflib's UDP link, backed by the simulated drone.

It answers what cflib 0.1.34 asks on connect (link source, protocol version 12, log
reset and TOC, memory count 0, param TOC and every value), echoes pings, streams log
blocks at their requested periods, takes parameter writes, legacy RPYT setpoints, the
generic STOP setpoint and notify-setpoint-stop, the emergency stop (supervisor command
and the legacy localization packet) the supervisor state query and the high-level commander's
take-off, landing and stop, and behaves as the firmware does with them
(:mod:`.crazyflie_firmware`: thrust lock, commander priorities, watchdog, rate or angle
mode; :mod:`.crazyflie_hl`: the planner). One datagram is one CRTP packet; replies go to the sender of the latest
valid packet (cflib opens a new client port on every ``open_link``).

Every malformed datagram (empty, oversize, a setpoint or write of the wrong length,
non-finite values) is counted and dropped; the real firmware has no checksum either and
would fly a NaN, the emulator refuses it so the simulation survives, and counts it.

Every state frame goes through :meth:`StreamFaults.due` before it is encoded, so the
pre-flight check's fault injections look the same as on every other protocol.
:meth:`set_link` drops the radio link both ways (a Crazyflie out of range), or only
from the drone to the host (the state lost, the drone still hearing its host).
"""

from __future__ import annotations

import math
import select
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import mujoco
import numpy as np

from sim2real.hardware.crazyflie import crtp
from sim2real.hardware.crazyflie.thrust import CURVES, PWM_FULL
from sim2real.hardware.emulator.base import EmulatorSettings, MotionOnset
from sim2real.hardware.emulator.crazyflie_battery import Battery, BatteryConfig
from sim2real.hardware.emulator.crazyflie_firmware import Firmware, attitude
from sim2real.hardware.emulator.crazyflie_ports import CrtpPorts
from sim2real.hardware.emulator.crazyflie_toc import LogSubsystem, ParamSubsystem
from sim2real.hardware.emulator.faults import StreamFaults
from sim2real.hardware.emulator.simulated_drone import DroneEmulator, SimulatedDrone, check_tick
from sim2real.hardware.realtime import EMULATOR_PRIORITY, FIRST_CPU, realtime_thread
from sim2real.hardware.timing import TimingRecord
from sim2real.sim import robot_deployment
from sim2real.sim.core.deployment import Measurements
from sim2real.sim.core.errors import ConfigError
from sim2real.sim.drone import constants as C


@dataclass
class CrazyflieEmulatorConfig:
    host: str = "127.0.0.1"
    """Address it listens on (loopback; cflib's URI is ``udp://host:port``)."""
    port: int = 19850
    """UDP port (0: any free port, see :attr:`CrazyflieEmulator.address`); 19850-19859
    are the ports cflib's UDP scan probes."""
    task: str = "DroneHover"
    """Simulated task (registry name): its target is the mission's goal."""
    dr: str | dict[str, Any] = "none"
    """Domain randomization of the simulated drone: a preset name or field values
    (``{"mass_scale": [1.3, 1.3]}``: a drone 30 % heavier than its description)."""
    seed: int = 0
    start: str = "ground"
    """Where episodes start (``ground``: on the pad, motors off, as a real takeoff)."""
    tick: float = C.INNER_DT
    """Seconds per firmware tick (one body-rate loop step and its physics)."""
    propellers: str = "cf21"
    """The motor curve (:data:`~sim2real.hardware.crazyflie.thrust.CURVES`): each motor
    makes Bitcraze's published thrust for its voltage, battery x PWM duty."""
    battery_compensation: bool = True
    """The firmware compensates the battery (``CONFIG_ENABLE_THRUST_BAT_COMPENSATED``, on
    in the stock build); False: a build without it, the command is the PWM duty."""
    battery: BatteryConfig = field(default_factory=BatteryConfig)
    """The cell: its charge at boot, sag under load, the firmware's low-battery thresholds."""

    def validate(self) -> None:
        if not 0 <= int(self.port) <= 65535:
            raise ConfigError("port", f"must be 0..65535, got {self.port}")
        check_tick(self.tick)
        if self.propellers not in CURVES:
            raise ConfigError("propellers", f"one of {', '.join(CURVES)}, got {self.propellers!r}")
        if not 0.0 <= self.battery.charge <= 1.0:
            raise ConfigError("battery.charge", f"must be in 0..1, got {self.battery.charge}")


class CrazyflieEmulator(DroneEmulator):
    """One simulated Crazyflie behind a UDP socket. :meth:`serve` runs it in real time;
    :meth:`handle` and :meth:`tick` are its steps (tests drive them with their own clock)."""


    def __init__(self, config: CrazyflieEmulatorConfig | None = None, faults: StreamFaults | None = None) -> None:
        self.config = cfg = config or CrazyflieEmulatorConfig()
        cfg.validate()
        self.faults = faults or StreamFaults()
        self.drone = SimulatedDrone(cfg.task, cfg.tick, seed=cfg.seed, start=cfg.start, dr=cfg.dr)
        self.env, self.task, self.model, self.data = self.drone.env, self.drone.task, self.drone.model, self.drone.data
        self.params = ParamSubsystem()
        self.logs = LogSubsystem()
        self.motor = CURVES[cfg.propellers]
        self.firmware = Firmware(self.params, self.motor, cfg.tick, cfg.battery_compensation)
        self.battery_model = Battery(cfg.battery)
        self.duties = np.zeros(4)
        """The motors' PWM duties the firmware set this tick."""
        self._thrust_sum, self._thrust_n = 0.0, 0
        self.ports = CrtpPorts(self.firmware, self.params, self.logs, self._reply)
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind((cfg.host, cfg.port))
        self.sock.setblocking(False)
        self.address: tuple[str, int] = self.sock.getsockname()
        self.peer: tuple[str, int] | None = None
        self.link_up = True
        self.downlink_up = True
        """False: nothing reaches the host (logs, replies) while the drone still hears it."""
        self.boot: float | None = None
        self.ticks = self.overruns = 0
        self.timing = TimingRecord(cfg.tick, capacity=50_000)
        """When each real-time tick ran, and how late."""
        self.realtime: dict[str, Any] = {}
        """The real-time loop's scheduling (:class:`~sim2real.hardware.realtime.RealtimeStatus`)."""
        self.motor_seconds = 0.0
        self.onset = MotionOnset(threshold=0.01)
        """The drone 1 cm from where it rested with its motors off (enable -> lift-off)."""
        self.accepted: dict[str, int] = {}
        self.rejected: dict[str, int] = {}
        self.sent = 0
        self._closed = False

    @classmethod
    def launch(cls, settings: EmulatorSettings) -> CrazyflieEmulator:
        if settings.airframe not in ("", "crazyflie"):  # its firmware, motors and battery are the Crazyflie's
            raise ConfigError("airframe", f"the Crazyflie emulator flies a Crazyflie, not {settings.airframe!r}")
        port = CrazyflieEmulatorConfig.port if settings.port is None else settings.port
        config = CrazyflieEmulatorConfig(host=settings.host, port=port,
                                         task=settings.task or robot_deployment("drone").task, seed=settings.seed)
        return cls(config, settings.faults)

    def connect_options(self) -> dict[str, Any]:
        return {"uri": f"udp://{self.address[0]}:{self.address[1]}"}

    # -- receiving ------------------------------------------------------------------------
    def poll(self, timeout: float, now: float | None = None) -> None:
        """Handle every datagram arriving within ``timeout`` seconds."""
        end = time.monotonic() + max(timeout, 0.0)
        while True:
            left = end - time.monotonic()
            ready, _, _ = select.select([self.sock], [], [], max(left, 0.0))
            if ready:
                while True:
                    try:
                        data, addr = self.sock.recvfrom(2048)
                    except (BlockingIOError, ConnectionRefusedError):
                        break
                    self.handle(data, addr, time.monotonic() if now is None else now)
            if left <= 0:
                return

    def handle(self, datagram: bytes, addr: tuple[str, int], now: float) -> None:
        """Decode one datagram and act on it as the firmware would, or count why not."""
        if not self.link_up:
            return self._reject("link_down")
        try:
            pk = crtp.decode(datagram)
        except crtp.CrtpError as exc:
            return self._reject(exc.reason)
        self.peer = addr
        reason = self.ports.handle(pk, now)
        if reason:
            return self._reject(reason)
        self.accepted[str(pk.port)] = self.accepted.get(str(pk.port), 0) + 1
        return None

    def _reject(self, reason: str) -> None:
        self.rejected[reason] = self.rejected.get(reason, 0) + 1

    def _reply(self, port: int, channel: int, data: bytes) -> None:
        if self.peer is None or not self.link_up or not self.downlink_up:
            return
        try:
            self.sock.sendto(crtp.encode(port, channel, data), self.peer)
            self.sent += 1
        except OSError:  # the host went away: keep flying the last setpoint (the watchdog decides)
            self._reject("send_failed")

    # -- one firmware tick ------------------------------------------------------------------
    def tick(self, now: float) -> None:
        """Supervisor, controller and physics for one tick, then the log blocks due."""
        if self.boot is None:
            self.boot = now
            self.battery_model.start(now)
        d = self.data
        if self.battery_model.shut_down:  # the firmware powered itself off: motors, radio and logs
            self.link_up = False
            self.drone.step(np.zeros(4))
            return
        acc = self.drone.specific_force() / C.GRAVITY
        vbat = self.battery_model.voltage()
        self.firmware.high_level_tick(now, d.qpos[:3])
        self.firmware.supervise(now, float(acc[2]), float(np.linalg.norm(acc)))
        self.duties = self.firmware.motor_duties(now, d.qpos[3:7], self.drone.gyro(), vbat,
                                                 position=d.qpos[:3], velocity=d.qvel[:3])
        # The motors: Bitcraze's thrust for the voltage each gets, within what the simulated rotor makes.
        thrusts = np.array([self.motor.thrust(vbat * duty) for duty in self.duties])
        commands = np.minimum(thrusts / C.MAX_THRUST, 1.0)
        if self.firmware.applied_thrust > 0:
            self._thrust_sum += self.firmware.applied_thrust
            self._thrust_n += 1
        self.battery_model.step(now, self.config.tick, np.minimum(thrusts, C.MAX_THRUST))
        self.drone.step(commands)
        self.ticks += 1
        if d.ctrl.any():
            self.motor_seconds += self.config.tick
        self.onset.observe(now, d.qpos[:3], bool(d.ctrl.any()))
        if self.ticks % self.drone.ticks_per_control == 0:
            self._evaluate()
        if self.logs.streaming and self.peer is not None and self.link_up and self.downlink_up:
            for frame in self.faults.due(now, self.drone.state()):
                blocks = self.logs.due(now)
                if not blocks:
                    break
                values = self.log_values(frame)
                millis = int((now - self.boot) * 1000.0)
                for block in blocks:
                    self._reply(crtp.PORT_LOG, crtp.LOG_DATA, LogSubsystem.encode(block, values, millis))

    def _evaluate(self) -> None:
        """The task's episode bookkeeping (crash, success), once per control period, from
        the first powered setpoint on (the stopwatch starts when the host starts flying,
        not while it is still connecting and checking)."""
        d = self.drone
        if not d.episodes and d.control_steps == 0 and self.firmware.motors_last_on == -math.inf:
            return
        if d.evaluate():  # back on the pad; the firmware keeps its state
            self.firmware.rate_controller.reset()

    def log_values(self, frame: Measurements) -> dict[str, float]:
        """Every log variable's value for one (possibly faulty) state frame, in the firmware's units."""
        d = self.data
        values: dict[str, float] = {}
        pos, vel = np.asarray(frame.base_pos), np.asarray(frame.base_lin_vel)
        quat, rates = np.asarray(frame.base_quat), np.asarray(frame.base_ang_vel)
        for i, axis in enumerate("xyz"):
            values[f"stateEstimate.{axis}"] = float(pos[i])
            values[f"stateEstimate.v{axis}"] = float(vel[i])
            values[f"gyro.{axis}"] = math.degrees(float(rates[i]))
        for i, name in enumerate(("qw", "qx", "qy", "qz")):
            values[f"stateEstimate.{name}"] = float(quat[i])
        body_acc = self.drone.specific_force() / C.GRAVITY
        true_quat = d.qpos[3:7]
        world = np.zeros(3)
        mujoco.mju_rotVecQuat(world, body_acc, true_quat)
        roll, pitch, yaw = (math.degrees(a) for a in attitude(true_quat))
        for i, axis in enumerate("xyz"):
            values[f"acc.{axis}"] = float(body_acc[i])
            values[f"stateEstimate.a{axis}"] = float(world[i] - (1.0 if axis == "z" else 0.0))
        values.update({"stateEstimate.roll": roll, "stateEstimate.pitch": -pitch, "stateEstimate.yaw": yaw,
                       "stabilizer.roll": roll, "stabilizer.pitch": -pitch, "stabilizer.yaw": yaw,
                       "stabilizer.thrust": float(self.firmware.applied_thrust),
                       "pm.vbat": self.battery(), "pm.state": float(self.battery_model.state),
                       "supervisor.info": float(self.firmware.info_bits())})
        for i in range(4):
            values[f"motor.m{i + 1}"] = round(float(self.duties[i]) * PWM_FULL)
        return values

    def battery(self) -> float:
        """V at the battery's terminals (:mod:`.crazyflie_battery`: sags under load, drains)."""
        return self.battery_model.voltage()

    # -- faults -------------------------------------------------------------------------------
    def set_link(self, up: bool, downlink_only: bool = False) -> None:
        """Drop (``False``) or restore the radio link: nothing received, nothing sent; with
        ``downlink_only`` only what the drone sends is lost (its state, its answers)."""
        if downlink_only:
            self.downlink_up = bool(up)
        else:
            self.link_up = bool(up)

    # -- real time ------------------------------------------------------------------------------
    def serve(self, duration: float = 0.0, should_stop: Callable[[], bool] | None = None) -> None:
        """The firmware's ticks on an absolute schedule, the radio served between them, at
        real-time priority where permitted (a real Crazyflie runs this on its own MCU)."""
        with realtime_thread("crazyflie emulator", EMULATOR_PRIORITY, FIRST_CPU) as status:
            self.realtime = status.as_dict()
            self._serve(duration, should_stop)

    def _serve(self, duration: float, should_stop: Callable[[], bool] | None) -> None:
        start = next_tick = time.monotonic()
        dt = self.config.tick
        while not self._closed and not (should_stop is not None and should_stop()):
            now = time.monotonic()
            if duration > 0 and now - start >= duration:
                return
            if now >= next_tick:
                self.timing.add(now, now - next_tick)
                self.tick(now)
                next_tick += dt
                if time.monotonic() > next_tick + 5 * dt:  # fell behind: resynchronize, count it
                    self.overruns += 1
                    self.timing.overrun()
                    next_tick = time.monotonic() + dt
            try:
                self.poll(min(max(next_tick - time.monotonic(), 0.0), 0.05))
            except (OSError, ValueError):
                if self._closed:  # closed from another thread
                    return
                raise

    def summary(self) -> dict[str, Any]:
        fw = self.firmware
        return {"robot": "drone", "address": f"{self.address[0]}:{self.address[1]}", "task": self.config.task,
                "ticks": self.ticks, "overruns": self.overruns, "tick_timing": self.timing.summary(),
                "realtime": self.realtime, "simulated_s": round(self.ticks * self.config.tick, 3),
                "state": fw.state, "lock_reason": fw.lock_reason, "thrust_locked": fw.thrust_locked,
                "accepted": dict(self.accepted), "rejected": dict(self.rejected), "sent": self.sent,
                "firmware": dict(fw.counters), **self.drone.summary(), "battery_v": round(self.battery(), 3),
                "battery_charge": round(self.battery_model.charge, 4), "pm_state": self.battery_model.state,
                "mean_thrust_command": round(self._thrust_sum / self._thrust_n) if self._thrust_n else None,
                **self.onset.summary()}

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self.sock.close()
        self.drone.close()
