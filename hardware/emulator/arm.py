"""The robot side of the arm protocol, backed by the simulator: a protocol-level
emulator of a real arm's controller box.

It does what the real controller does and nothing a host could not see on the wire:
it steps the simulated arm once per control period in real time, streams a ``STATE``
packet to the host in control (one at a time: :mod:`.control_lease`), applies the
newest valid ``COMMAND`` from it and holds
the arm (zero Cartesian velocity, gripper kept) when commands stop for
``command_timeout`` seconds, while the e-stop is engaged, or before the first command.
Every malformed, foreign, stale or out-of-order packet is counted and dropped.

The emulator also plays the operator that the sim bridge plays with ``publish_mission``:
a ``MISSION`` packet carries the task's goal and episode counters (a real robot sends
none; an operator publishes ``goal`` instead).
"""

from __future__ import annotations

import math
import select
import socket
import time
from collections import deque
from dataclasses import dataclass
from typing import Any

import mujoco
import numpy as np

from sim2real.hardware.arm_protocol import (
    ARM_JOINT_COUNT,
    Command,
    Hello,
    Mission,
    PacketError,
    PacketStats,
    Release,
    SequenceGate,
    State,
    Status,
    decode,
    encode,
    mode_from_name,
)
from sim2real.hardware.emulator.arm_units import arm_command_units
from sim2real.hardware.emulator.control_lease import ControlLease
from sim2real.sim.arm import constants as ARM
from sim2real.sim.arm.base import ArmTask
from sim2real.sim.core.env import SimEnv
from sim2real.sim.core.errors import ConfigError
from sim2real.sim.core.registry import REGISTRY

JOINT_NAMES = (*ARM.ARM_JOINTS, "finger_left", "finger_right")
assert len(JOINT_NAMES) == ARM_JOINT_COUNT


@dataclass
class ArmEmulatorConfig:
    host: str = "127.0.0.1"
    """Address the robot listens on (loopback unless told otherwise)."""
    port: int = 17001
    """UDP port of the robot (0: any free port, see :attr:`ArmEmulator.address`)."""
    task: str = "ArmReach"
    """Simulated task (registry name): its targets become the mission's goal."""
    action_mode: str = "ee_delta"
    """Command space the controller accepts: ee_delta, ee_impedance or joint_torque."""
    dr: str = "none"
    """Domain-randomization preset of the simulated robot."""
    seed: int = 0
    """Seed of the simulated targets."""
    command_timeout: float = 0.15
    """Seconds without a valid command after which the robot holds (3 periods at 20 Hz)."""
    lease_timeout: float = 1.0
    """Seconds of silence from the controlling host after which another host's HELLO may
    take control (a RELEASE gives it up at once)."""
    max_state_lag: int = 3
    """A command computed from a state more than this many packets old is stale."""
    mission_period: float = 1.0
    """Seconds between MISSION packets (and on every goal change)."""

    def validate(self) -> None:
        for name in ("command_timeout", "mission_period", "lease_timeout"):
            value = getattr(self, name)
            if not (isinstance(value, int | float) and math.isfinite(value) and value > 0):
                raise ConfigError(name, f"must be a positive number of seconds, got {value!r}")
        if not 0 <= int(self.port) <= 65535:
            raise ConfigError("port", f"must be 0..65535, got {self.port}")
        if int(self.max_state_lag) < 0:
            raise ConfigError("max_state_lag", f"must be >= 0, got {self.max_state_lag}")


class ArmEmulator:
    """One simulated arm behind a UDP socket; :meth:`serve` runs it in real time,
    :meth:`tick` and :meth:`poll` are its steps (tests call them with their own clock)."""

    def __init__(self, config: ArmEmulatorConfig | None = None) -> None:
        self.config = cfg = config or ArmEmulatorConfig()
        cfg.validate()
        self.mode = mode_from_name(cfg.action_mode)
        self.units = arm_command_units(self.mode)
        self.env = SimEnv(REGISTRY.get(cfg.task), action_mode=cfg.action_mode, dr=cfg.dr, seed=cfg.seed)
        task = self.env.task
        if not isinstance(task, ArmTask):
            raise ConfigError("task", f"{cfg.task} is not an arm task")
        self.task = task
        self.control_dt = float(self.task.control_dt)
        model = self.env.model
        joints = [mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, n) for n in JOINT_NAMES]
        self._qadr = np.array([model.jnt_qposadr[j] for j in joints], dtype=int)
        self._vadr = np.array([model.jnt_dofadr[j] for j in joints], dtype=int)
        self.env.reset(seed=cfg.seed)
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind((cfg.host, cfg.port))
        self.sock.setblocking(False)
        self.address: tuple[str, int] = self.sock.getsockname()
        self.stats = PacketStats()
        self.peer: tuple[str, int] | None = None
        self.session: int | None = None
        self.lease = ControlLease(cfg.lease_timeout)
        self._command_gate = SequenceGate()
        self.command: Command | None = None
        self.command_sequence = 0
        self.command_time = -np.inf
        self.gripper: float | None = None
        self.estop = False
        self.state_sequence = 0
        self._mission_sequence = 0
        self._rejected_since_state = False
        self._overrun_since_state = False
        self._last_mission: tuple[float, ...] | None = None
        self._mission_time = -np.inf
        self.ticks = self.hold_ticks = self.overruns = self.faults = 0
        self.episodes: list[bool] = []
        """Success of each finished episode."""
        self._sent_at: dict[int, float] = {}
        self.loop_latencies: deque[float] = deque(maxlen=100_000)
        """Seconds from a state packet leaving to the first valid command computed from it
        arriving: the whole host loop (driver, DDS, policy, safety filter) as the robot sees it."""

    # -- receiving ----------------------------------------------------------------
    def poll(self, timeout: float, now: float | None = None) -> None:
        """Handle every datagram that arrives within ``timeout`` seconds."""
        end = time.monotonic() + max(timeout, 0.0)
        while True:
            left = end - time.monotonic()
            ready, _, _ = select.select([self.sock], [], [], max(left, 0.0))
            if not ready:
                return
            while True:
                try:
                    data, addr = self.sock.recvfrom(2048)
                except BlockingIOError:
                    break
                self.handle(data, addr, time.monotonic() if now is None else now)
            if left <= 0:
                return

    def handle(self, data: bytes, addr: tuple[str, int], now: float) -> None:
        """Validate one datagram and apply it (HELLO, COMMAND) or count why not."""
        try:
            header, payload = decode(data)
        except PacketError as exc:
            return self._reject(exc.reason)
        if isinstance(payload, Hello):
            verdict = self.lease.claim((addr, payload.session), now)
            if verdict == "busy":  # another host controls the robot: it keeps control
                return self._reject("busy")
            if verdict == "granted":  # a new host: its sequence starts afresh, the robot holds
                self.peer, self.session, self.command = addr, payload.session, None
                self._command_gate.reset()
            self.stats.accept(header.type)
            return None
        if isinstance(payload, Release):
            if not self.lease.release((addr, payload.session)):
                return self._reject("peer")
            self.peer = self.session = self.command = None  # nobody in control: hold
            self.stats.accept(header.type)
            return None
        if not isinstance(payload, Command):
            return self._reject("type")  # robots do not take STATE or MISSION packets
        if not self.lease.holds((addr, payload.session)):
            return self._reject("peer")
        if payload.mode != self.mode:
            return self._reject("mode")
        lag = (self.state_sequence - payload.state_sequence) % 2**32
        if lag > self.config.max_state_lag:  # computed from an old state (or one not sent yet)
            return self._reject("stale")
        if not self._command_gate.accept(header.sequence):
            return self._reject("sequence")
        self.stats.accept(header.type)
        self.lease.heard((addr, payload.session), now)
        sent = self._sent_at.pop(payload.state_sequence, None)
        if sent is not None:
            self.loop_latencies.append(time.monotonic() - sent)
        self.command, self.command_sequence, self.command_time = payload, header.sequence, now
        self.gripper = float(payload.values[-1])
        return None

    def _reject(self, reason: str) -> None:
        self.stats.reject(reason)
        self._rejected_since_state = True

    # -- one control period --------------------------------------------------------
    def fresh_command(self, now: float) -> np.ndarray | None:
        if self.estop or self.command is None or now - self.command_time > self.config.command_timeout:
            return None
        return self.command.values

    def tick(self, now: float) -> None:
        """Step the arm one control period under the fresh command (or hold), then send the state."""
        values = self.fresh_command(now)
        holding = values is None
        command = self.units.hold(self.gripper) if holding else values
        _, _, terminated, truncated, info = self.env.step(self.units.to_action(command))
        self.ticks += 1
        self.hold_ticks += int(holding)
        if terminated or truncated:
            self.episodes.append(bool(info.get("is_success", False)))
            self.env.reset()
        status = Status(0)
        for flag, bit in ((self.estop, Status.ESTOP), (holding, Status.HOLDING),
                          (self._rejected_since_state, Status.COMMAND_REJECTED),
                          (self._overrun_since_state, Status.OVERRUN)):
            if flag:
                status |= bit
        self._rejected_since_state = self._overrun_since_state = False
        state = self.state(status, 0 if holding else self.command_sequence)
        if not all(np.all(np.isfinite(getattr(state, f))) for f in ("joint_pos", "joint_vel", "joint_effort",
                                                                     "ee_pos", "ee_quat")):
            # The simulated controller diverged: fault like a real one (drop the command, hold,
            # report ERROR) and restart the episode, which counts as failed.
            self.faults += 1
            self.command = None
            self.episodes.append(False)
            self.env.reset()
            state = self.state(status | Status.ERROR | Status.HOLDING, 0)
        self.state_sequence += 1
        if self.peer is not None:
            stamp = time.monotonic_ns()
            self._send(encode(state, self.state_sequence, stamp))
            self._sent_at[self.state_sequence] = time.monotonic()
            self._sent_at.pop(self.state_sequence - 64, None)  # bounded: older states cannot be answered
            self._send_mission(now, stamp)

    def state(self, status: Status, last_command: int) -> State:
        d, phys, mapper = self.env.data, self.env.engine.phys, self.task.mapper
        return State(status, last_command, self.mode, d.qpos[self._qadr], d.qvel[self._vadr],
                     d.qfrc_actuator[self._vadr], np.asarray(self.task.ee_pos(phys)[0]),
                     np.asarray(self.task.ee_quat(phys)[0]), mapper.setpoint_pos[0], mapper.setpoint_quat[0])

    def goal(self) -> np.ndarray | None:
        goal = getattr(self.task, "target", getattr(self.task, "targets", None))
        return None if goal is None else np.asarray(goal[0], dtype=np.float64)

    def _send_mission(self, now: float, stamp: int) -> None:
        goal = self.goal()
        if goal is None:
            return
        key = (*goal, len(self.episodes))
        if key == self._last_mission and now - self._mission_time < self.config.mission_period:
            return
        self._last_mission, self._mission_time = key, now
        self._mission_sequence += 1
        mission = Mission(goal, len(self.episodes), sum(self.episodes))
        self._send(encode(mission, self._mission_sequence, stamp))

    def _send(self, data: bytes) -> None:
        if self.peer is None:  # nobody in control: nobody to answer
            return
        try:
            self.sock.sendto(data, self.peer)
        except OSError:  # the host went away: keep controlling (holding), it may come back
            self.stats.reject("send_failed")

    # -- real time ------------------------------------------------------------------
    def serve(self, duration: float = 0.0, should_stop: Any = None) -> None:
        """Run in real time for ``duration`` seconds (0: until ``should_stop()`` is true)."""
        start = next_tick = time.monotonic()
        while not (should_stop is not None and should_stop()):
            now = time.monotonic()
            if duration > 0 and now - start >= duration:
                return
            if now >= next_tick:
                self.tick(now)
                next_tick += self.control_dt
                if time.monotonic() > next_tick:  # the step took longer than a period: resynchronize
                    self.overruns += 1
                    self._overrun_since_state = True
                    next_tick = time.monotonic() + self.control_dt
            self.poll(min(next_tick - time.monotonic(), 0.05))

    def summary(self) -> dict[str, Any]:
        return {"robot": "arm", "address": f"{self.address[0]}:{self.address[1]}", "task": self.config.task,
                "action_mode": self.config.action_mode, "ticks": self.ticks, "hold_ticks": self.hold_ticks,
                "overruns": self.overruns, "faults": self.faults, "episodes": len(self.episodes),
                "successes": sum(self.episodes),
                "simulated_s": round(self.ticks * self.control_dt, 3),
                "state_to_command_ms": latency_percentiles_ms(self.loop_latencies), "packets": self.stats.flat()}

    def close(self) -> None:
        self.sock.close()
        self.env.close()


def latency_percentiles_ms(seconds: deque[float]) -> dict[str, float | int]:
    """p50/p99/max in ms and the sample count (NaN when empty)."""
    a = np.asarray(seconds, dtype=np.float64) * 1e3
    if not len(a):
        return {"p50": math.nan, "p99": math.nan, "max": math.nan, "n": 0}
    return {"p50": round(float(np.percentile(a, 50)), 3), "p99": round(float(np.percentile(a, 99)), 3),
            "max": round(float(a.max()), 3), "n": len(a)}
