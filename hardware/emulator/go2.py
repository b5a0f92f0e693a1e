"""The robot side of Unitree's Go2 low-level DDS protocol, backed by the simulator.

It behaves as the Go2's firmware does, as far as a host can see on the wire:

* ``rt/lowstate`` every 2 ms: motor positions, velocities and torques (FR, FL, RR, RL x
  hip, thigh, calf), the IMU (quaternion w, x, y, z; body rates; specific force), the
  foot forces (newtons here; an uncalibrated count on a real Go2), a millisecond tick
  and the CRC. Every frame passes :meth:`StreamFaults.due` first.
* ``rt/lowcmd``: per motor ``tau = kp (q_des - q) + kd (dq_des - dq) + tau_ff`` (mode
  0x01; any other mode: no torque), within the motors' torque limits. Frames with a
  bad CRC, a wrong head (0xFE 0xEF) or level flag (0xFF), non-finite values or the
  wrong size are dropped and counted per reason. The last valid command applies
  forever: the firmware has no lowcmd timeout.
* Sport mode after boot (:mod:`.go2_sport`): the robot's own controller stands and
  low-level commands are ignored (counted ``sport_mode``; a real Go2 would fight them)
  until the motion switcher (:mod:`sim2real.hardware.go2.motion_switcher`) releases it.
  The sport service answers StandDown (lie down) and StandUp over the same DDS
  request/response API as the robot's. Released, the motors are limp until the first
  valid command: a robot released standing drops (counted, with its fall speed).
  SelectMode hands the robot back to the sport controller.

The servo law runs inside MuJoCo at every physics step (2 ms, the state period): each
position actuator's gain and bias are set from the command (gain 1, bias -kp q - kd dq,
control kp q_des + kd dq_des + tau_ff), so no Python runs between steps. A fallen robot
stays fallen: a real one is not teleported back on its feet.
"""

from __future__ import annotations

import math
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import mujoco
import numpy as np

from sim2real.hardware.emulator.base import Emulator, EmulatorSettings, Mission, MotionOnset
from sim2real.hardware.emulator.faults import StreamFaults
from sim2real.hardware.emulator.gait_record import GaitRecord
from sim2real.hardware.emulator.go2_sport import SportController
from sim2real.hardware.go2 import sport
from sim2real.hardware.go2.codec import Codec, FrameError
from sim2real.hardware.go2.dds import (
    LOOPBACK,
    SDK_QOS,
    DdsConfig,
    RawReader,
    RawWriter,
    close_participant,
    default_domain,
    participant,
)
from sim2real.hardware.go2.motion_switcher import MotionSwitcherService
from sim2real.hardware.go2.protocol import check_command, lowstate_frame
from sim2real.hardware.go2.rpc import RpcServer
from sim2real.hardware.go2.types import LowCmd_, LowState_
from sim2real.hardware.realtime import DDS_THREADS, EMULATOR_PRIORITY, FIRST_CPU, realtime_thread
from sim2real.hardware.timing import PeriodicSchedule, TimingRecord
from sim2real.sim import robot_deployment
from sim2real.sim.core.deployment import Measurements
from sim2real.sim.core.errors import ConfigError
from sim2real.sim.core.registry import REGISTRY
from sim2real.sim.quadruped import constants as C
from sim2real.sim.quadruped.base import QuadrupedTask

STATE_PERIOD = 0.002
"""The Go2 streams lowstate at 500 Hz; physics steps at the same period."""
FALL_WATCH_SECONDS = 1.0
"""After a release of sport mode, the base's fastest fall within this long is recorded."""


@dataclass
class Go2EmulatorConfig:
    """The simulated Go2 and its network."""

    task: str = "QuadrupedVelocity"
    """Simulated task (registry name): its model and world."""
    cmd_vel: tuple[float, float, float] = (0.5, 0.0, 0.0)
    """The operator's velocity command (vx, vy, yaw rate) :meth:`Go2Emulator.mission` gives."""
    seed: int = 0
    """Seed of the task's set-up."""
    sport_mode: bool = True
    """Boot in sport mode (standing, low-level commands ignored until released)."""
    dds: DdsConfig = field(default_factory=lambda: DdsConfig.loopback(default_domain()))
    """Network (loopback by default; :meth:`DdsConfig` itself: the robot's own, Unitree's)."""
    corrupt_state_after: float = math.inf
    """Simulated seconds after which every lowstate frame leaves with a wrong CRC (a link
    that corrupts frames, for the fault tests)."""

    def validate(self) -> None:
        if len(self.cmd_vel) != 3 or not all(math.isfinite(v) for v in self.cmd_vel):
            raise ConfigError("cmd_vel", f"must be 3 finite numbers, got {self.cmd_vel!r}")
        self.dds.validate()


class Go2Emulator(Emulator):
    """One simulated Go2 on DDS; :meth:`serve` runs it in real time, :meth:`tick` is one
    2 ms period (tests call it with their own clock)."""

    robot = "quadruped"

    def __init__(self, config: Go2EmulatorConfig | None = None, faults: StreamFaults | None = None) -> None:
        self.config = cfg = config or Go2EmulatorConfig()
        cfg.validate()
        self.faults = faults or StreamFaults()
        task = REGISTRY.get(cfg.task)(num_envs=1)
        if not isinstance(task, QuadrupedTask):
            raise ConfigError("task", f"{cfg.task} is not a quadruped task")
        self.task = task
        self.model = model = task.build_model()
        model.opt.timestep = STATE_PERIOD
        model.actuator_ctrllimited[:] = 0  # the command is a torque law, not a position within range
        model.actuator_gainprm[:, 0] = 1.0
        self.data = mujoco.MjData(model)
        mujoco.mj_resetDataKeyframe(model, self.data, model.key("home").id)
        self._read = robot_deployment("quadruped").joint_reader(model)
        self._sensor = task.sensor_slices
        self._touch = np.array([self._sensor[f"{leg}_touch"].start for leg in C.LEGS])
        self.cmd_codec, self.state_codec = Codec.of(LowCmd_), Codec.of(LowState_)
        self.dp = participant(cfg.dds)
        self.lowcmd = RawReader.create(self.dp, "rt/lowcmd", LowCmd_, SDK_QOS, depth=16)
        self.lowstate = RawWriter.create(self.dp, "rt/lowstate", LowState_, SDK_QOS)
        self.sport = SportController(cfg.sport_mode)
        self.switcher = MotionSwitcherService(self.dp, "normal" if cfg.sport_mode else "", self._mode_changed)
        self.sport_service = RpcServer(self.dp, sport.SERVICE, self._sport_answer)
        self.fall_after_release = 0.0
        """m/s: the base's fastest fall within FALL_WATCH_SECONDS of any release of sport mode."""
        self._watch_fall_until = -math.inf
        self.command: np.ndarray | None = None
        """The last valid LowCmd_ (applied forever)."""
        self.rejected: Counter[str] = Counter()
        self.gains_seen: Counter[str] = Counter()
        """Accepted commands per distinct gain setting of the motors they power ("kp=40 kd=1"):
        whose gains reached the motors (the policy's own, the bridge's damping, ...)."""
        self._gains_raw, self._gains_label = b"", ""
        self.accepted = self.sent = self.ticks = 0
        self.timing = TimingRecord(STATE_PERIOD, capacity=50_000)
        """When each real-time tick started, and how late (:meth:`serve`)."""
        self.realtime: dict[str, Any] = {}
        """The real-time loop's scheduling (:class:`~sim2real.hardware.realtime.RealtimeStatus`)."""
        self._applied: tuple[bytes, str] | None = None
        self._extras: dict[float, tuple[np.ndarray, np.ndarray, int]] = {}
        self._closed = False
        self._powered = False
        self.gait = GaitRecord()
        """Velocity tracking and falls while the host commands the motors (the mission's success)."""
        self.onset = MotionOnset(threshold=0.01)
        """The first joint to move 0.01 rad under the host's stiffness (enable -> first motion)."""
        self.rate_hz = 0.0
        """lowstate frames per second over the last :meth:`serve`."""
        self._apply()

    @classmethod
    def launch(cls, settings: EmulatorSettings) -> Go2Emulator:
        domain = settings.domain_id if settings.robot_domain_id is None else settings.robot_domain_id
        config = Go2EmulatorConfig(task=settings.task or robot_deployment("quadruped").task, seed=settings.seed,
                                   dds=DdsConfig(domain_id=domain, interface=settings.interface))
        return cls(config, settings.faults)

    def connect_options(self) -> dict[str, Any]:
        """On loopback, loopback (the backend's default is the robot's network); on a
        network, only the domain: the backend finds its own interface there, as it does
        for the robot."""
        dds = self.config.dds.resolved()
        if dds.interface != LOOPBACK:
            return {"domain_id": dds.domain_id}
        return {"domain_id": dds.domain_id, "interface": dds.interface}

    # -- commands ------------------------------------------------------------------
    def handle(self, frame: bytes) -> bool:
        """Validate one lowcmd frame and keep it as the command; False (counted) when dropped."""
        try:
            msg = self.cmd_codec.decode(frame)
            check_command(self.cmd_codec, msg)
        except FrameError as exc:
            self.rejected[exc.reason] += 1
            return False
        if self.switcher.mode:
            self.rejected["sport_mode"] += 1
            return False
        self.command = msg
        self.accepted += 1
        m = msg["motor_cmd"][: C.NUM_JOINTS]
        raw = m["mode"].tobytes() + m["kp"].tobytes() + m["kd"].tobytes()
        if raw != self._gains_raw:  # labelled once per change, not on every 2 ms frame
            on = m["mode"] == 1
            kp, kd = ({round(float(v), 3) for v in m[k][on]} for k in ("kp", "kd"))
            self._gains_raw = raw
            self._gains_label = f"kp={'/'.join(f'{v:g}' for v in sorted(kp)) or '-'} " \
                                f"kd={'/'.join(f'{v:g}' for v in sorted(kd)) or '-'}"
        self.gains_seen[self._gains_label] += 1
        return True

    def poll(self) -> None:
        """Everything that arrived: commands (the newest valid one wins), service calls."""
        for frame in self.lowcmd.take(64):
            self.handle(frame)
        self.switcher.poll()
        self.sport_service.poll()

    def _joints(self) -> tuple[np.ndarray, np.ndarray]:
        n = C.NUM_JOINTS
        return self.data.qpos[7:7 + n].copy(), self.data.qvel[6:6 + n].copy()

    def _sport_answer(self, api: int, parameter: str) -> tuple[int, str] | None:
        return self.sport.answer(api, self.data.time, self._joints()[0])

    def _mode_changed(self, old: str, new: str) -> None:
        q, dq = self._joints()
        if not new:
            self.sport.release(self.data.time, q, dq)
            self._watch_fall_until = self.data.time + FALL_WATCH_SECONDS
        elif not old:
            self.sport.select(self.data.time, q, dq)
            self.command = None  # the sport controller owns the motors; a later release starts limp

    def _apply(self) -> None:
        """Set the actuators from the sport controller or the last command."""
        n = C.NUM_JOINTS
        if self.sport.running:  # the sport controller's pose, every tick (it moves)
            self._applied = None
            self._powered = False
            target = self.sport.targets(self.data.time)
            self.model.actuator_biasprm[:, 1] = -target.kp
            self.model.actuator_biasprm[:, 2] = -target.kd
            self.data.ctrl[:] = target.kp * target.q
            return
        key = (b"" if self.command is None else self.command.tobytes(), self.switcher.mode)
        if key == self._applied:
            return
        self._applied = key
        if self.command is None:  # released, nothing commanded yet: limp
            q = dq = kp = kd = tau = np.zeros(n)
        else:
            m = self.command["motor_cmd"][:n]
            on = m["mode"] == 1
            q, dq, tau = (m[k].astype(np.float64) for k in ("q", "dq", "tau"))
            kp, kd = np.where(on, m["kp"], 0.0), np.where(on, m["kd"], 0.0)
            tau = np.where(on, tau, 0.0)
        self._powered = bool(np.any(kp > 0))
        self.model.actuator_biasprm[:, 1] = -kp
        self.model.actuator_biasprm[:, 2] = -kd
        self.data.ctrl[:] = kp * q + kd * dq + tau

    # -- one period ------------------------------------------------------------------
    def measure(self, now: float) -> Measurements:
        m = Measurements(cmd_vel=np.array(self.config.cmd_vel), stamps={"lowstate": now})
        self._read(self.data, m)
        return m

    def tick(self, now: float) -> None:
        """Apply the newest command, step 2 ms of physics, send the state frames due."""
        self.poll()
        self._apply()
        mujoco.mj_step(self.model, self.data)
        self.ticks += 1
        d = self.data
        if d.time <= self._watch_fall_until:
            self.fall_after_release = max(self.fall_after_release, float(-d.qvel[2]))
        self.gait.sample(d.time, d.qpos, d.qvel, np.asarray(self.config.cmd_vel), self._powered, now)
        self.onset.observe(now, d.qpos[7:7 + C.NUM_JOINTS], self._powered)
        accel = d.sensordata[self._sensor["imu_acc"]].copy()
        feet = d.sensordata[self._touch].copy()
        m = self.measure(now)
        self._extras[now] = (accel, feet, int(round(d.time * 1000)) & 0xFFFFFFFF)
        for frame in self.faults.due(now, m):
            extra = self._extras.pop(frame.stamps["lowstate"], None)
            if extra is None:
                continue
            accel, feet, tick = extra
            if self.faults.imu_flipped:
                accel = accel * np.array([1.0, -1.0, -1.0])
            encoded = lowstate_frame(self.state_codec, frame, accel, feet, tick)
            if d.time >= self.config.corrupt_state_after:
                encoded = encoded[:-1] + bytes([encoded[-1] ^ 0x01])  # the CRC's last byte
            self.lowstate.write(encoded)
            self.sent += 1
        if len(self._extras) > 4096:  # frames a slow-rate fault skipped are never sent
            for stamp in sorted(self._extras)[:-2048]:
                del self._extras[stamp]

    # -- real time -------------------------------------------------------------------
    def serve(self, duration: float = 0.0, should_stop: Callable[[], bool] | None = None) -> None:
        """Tick every 2 ms on an absolute schedule, at real-time priority where permitted
        (a real Go2 runs this on its own computer)."""
        start, ticks_before = time.monotonic(), self.ticks
        try:
            with realtime_thread("go2 emulator", EMULATOR_PRIORITY, FIRST_CPU, DDS_THREADS) as status:
                self.realtime = status.as_dict()
                self._serve(start, duration, should_stop)
        finally:
            elapsed = time.monotonic() - start
            self.rate_hz = (self.ticks - ticks_before) / elapsed if elapsed > 0 else 0.0

    def _serve(self, start: float, duration: float, should_stop: Callable[[], bool] | None) -> None:
        schedule = PeriodicSchedule(STATE_PERIOD, self.timing)
        schedule.start(start)
        while not self._closed and not (should_stop is not None and should_stop()):
            now = schedule.sleep()
            if duration > 0 and now - start >= duration:
                return
            self.tick(now)
            schedule.tick(now)

    def mission(self) -> Mission | None:
        return Mission(cmd_vel=np.array(self.config.cmd_vel))

    def truth(self) -> Measurements:
        """The simulated robot's true state (for tests: what the host must estimate)."""
        return self.measure(time.monotonic())

    def summary(self) -> dict[str, Any]:
        timing = self.timing.summary()
        return {
            "robot": "quadruped", "protocol": "unitree_go2 lowcmd/lowstate (DDS)",
            "domain_id": self.config.dds.domain_id, "interface": self.config.dds.interface, "ticks": self.ticks,
            "simulated_s": round(self.data.time, 3),
            "rate_hz": round(self.rate_hz, 1), "overruns": self.timing.overruns, "state_frames_sent": self.sent,
            "commands_accepted": self.accepted,
            "commands_rejected": dict(self.rejected), "gains_seen": dict(self.gains_seen),
            "sport_mode": self.switcher.mode,
            "motion_switcher_calls": dict(self.switcher.calls),
            "sport": {"posture": self.sport.posture, "calls": dict(self.sport_service.calls),
                      "released_standing": self.sport.counts["released_standing"],
                      "fall_after_release": round(self.fall_after_release, 3)},
            "tick_jitter_ms": {**timing.get("lateness_ms", {}), "n": timing["ticks"]},
            "tick_interval_jitter_ms": timing.get("jitter_ms", {}), "deadline_misses": timing["deadline_misses"],
            "realtime": self.realtime,
            "base_height": round(float(self.data.qpos[2]), 4),
            "cmd_vel": list(self.config.cmd_vel), **self.gait.summary(), **self.onset.summary(),
            "last_command": None if self.command is None else {
                k: sorted({round(float(v), 3) for v in self.command["motor_cmd"][k][: C.NUM_JOINTS]})
                for k in ("kp", "kd", "tau")},
        }

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        close_participant(self.dp)
