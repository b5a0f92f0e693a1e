"""The Go2 backend: Unitree's low-level DDS protocol from the host, with the deployment
state machine real users run (:mod:`.state_machine`).

``connect`` takes the robot over from sport mode the way Unitree's example does
(:mod:`.handover`: StandDown, the robot seen lying, then ReleaseMode), starts the 500 Hz
link and waits for ``rt/lowstate``; the robot is then lying in DAMPING (kp 0, kd 8).
``enable`` stands it up from the measured (lying) pose; ``command`` takes 12 joint
position targets (rad, FR FL RR RL x hip thigh calf) applied with the simulated servo's
gains. ``safe`` lies it down with its own targets (LYING_DOWN, then damping);
``close`` does the same, then hands it back to the sport mode that ran before.

The link that owns ``rt/lowcmd`` runs in a process of its own at real-time priority
(:mod:`.link`; Python's GIL would make a writer thread here wait for the ROS executor):
every 2 ms it writes a LowCmd_ (CRC filled last) from the state machine, which it runs on
its own reading of ``rt/lowstate``. Because the firmware applies the last command
forever, that loop is the robot's watchdog: a command older than 3 policy periods
(0.06 s), a state older than 0.06 s, an invalid frame stream, or this backend's process
ending put it in DAMPING within one loop period. This process sends it the newest
command and the requests (stand, safe, damp) without ever waiting inside its lock, and
reads the same ``rt/lowstate`` for the measurements.

Measurements: joint positions, velocities and torques, the IMU's quaternion and body
rates, and the base velocity and position estimated from leg kinematics
(:mod:`sim2real.sim.quadruped.estimator`), since low-level state has no base velocity.
Stamps are host monotonic arrival times of ``joint_states``, ``odom`` and ``imu``.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from dataclasses import dataclass
from typing import Any

import numpy as np
from cyclonedds.core import DDSException

from sim2real.hardware.backend import HardwareError, Phase, RobotBackend
from sim2real.hardware.go2.codec import Codec
from sim2real.hardware.go2.dds import SDK_QOS, DdsConfig, RawReader, RawWriter, close_participant, participant
from sim2real.hardware.go2.handover import HandoverError, SportHandover, newest_lying
from sim2real.hardware.go2.link import WRITE_PERIOD, robot_restarted
from sim2real.hardware.go2.link_client import LinkProcess
from sim2real.hardware.go2.motion_switcher import MotionSwitcherClient
from sim2real.hardware.go2.protocol import LowState, fill_command, newest_state
from sim2real.hardware.go2.sport import SportClient
from sim2real.hardware.go2.state_machine import GaitConfig, Mode, MotorTargets
from sim2real.hardware.go2.types import LowCmd_, LowState_
from sim2real.hardware.options import load_options
from sim2real.hardware.realtime import DDS_THREADS, EXECUTOR_PRIORITY, realtime_thread
from sim2real.sim.core.deployment import Measurements
from sim2real.sim.core.errors import ConfigError
from sim2real.sim.quadruped import constants as C
from sim2real.sim.quadruped.estimator import EstimatorConfig, LegOdometry

CLOSE_TIMEOUT = 0.5
"""s close() waits for the damping command to be written before the link goes."""
DETAIL_WINDOW = 10.0
"""s of the writer's timing :meth:`Go2Backend.detail` summarises."""
NOT_STREAMING = 0.5
"""s without a lowstate in this process after which enable() says the robot is not streaming."""
ACK_TIMEOUT = 0.5
"""s a request to the link (stand, safe, damp) waits to be applied (it takes one period)."""


@dataclass
class Go2Session:
    release_sport_mode: bool = True
    """Take the robot over from sport mode at connect (StandDown, then the motion
    switcher's ReleaseMode) and hand it back at close (false: the robot is already in
    low-level mode, and stays there)."""


class Go2Backend(RobotBackend):
    """A Unitree Go2 (or its emulator) in low-level mode.

    Options: ``interface``, ``peers``, ``multicast``, ``domain_id`` (:class:`.dds.DdsConfig`;
    default Unitree's set-up: domain 0, multicast on the interface on 192.168.123.0/24;
    ``{"interface": "lo"}`` for the emulator on this machine), the gains and timeouts of
    :class:`.state_machine.GaitConfig`,
    ``contact_threshold`` and the time constants of
    :class:`~sim2real.sim.quadruped.estimator.EstimatorConfig`,
    ``release_sport_mode`` (default true; false for a robot already in low-level mode).
    """

    protocol = "Unitree Go2 low level over DDS: rt/lowcmd (500 Hz, CRC32) / rt/lowstate, motion switcher"
    state_rate = 500.0  # rt/lowstate: the motion computer publishes every 2 ms
    needs_own_process = True
    close_seconds = 8.0  # lie down (up to twice its 1.5 s), then SelectMode and the hand-back

    def __init__(self, action_mode: str, options: dict[str, Any] | None = None) -> None:
        super().__init__(action_mode, options)
        if action_mode != "joint_pos":
            raise ConfigError("action_mode", f"the Go2 backend takes joint_pos targets, not {action_mode!r}")
        self.dds, self.gait, self.estimator_config, session = load_options(
            self.options, [(DdsConfig, ""), (GaitConfig, ""), (EstimatorConfig, ""), (Go2Session, "")], "Go2")
        self.release_sport_mode = session.release_sport_mode
        self.cmd_codec, self.state_codec = Codec.of(LowCmd_), Codec.of(LowState_)
        self._counts: Counter[str] = Counter()
        self._link: LinkProcess | None = None
        self._link_lost = ""
        """Why the link process ended on its own ('' : it did not); connect() again."""
        self._reading: threading.Thread | None = None
        self._stop = threading.Event()
        self._state_time = -np.inf
        self._last_state: LowState | None = None
        self._odometry = LegOdometry(self.estimator_config)
        self._dp: Any = None
        self._needs_release = False
        self._handover: SportHandover | None = None
        self.handback = ""
        """Why the last close() did not give the robot back to sport mode ('' : it did, or none ran)."""
        self.last_fault: dict[str, Any] = {}
        """The latest drop to damping the link decided: reason, when (host monotonic s), and
        how old the newest command and state were then (s)."""

    # -- life cycle ----------------------------------------------------------------
    def connect(self, timeout: float) -> None:
        if self._phase in (Phase.CONNECTED, Phase.ENABLED) and not (self._needs_release or self._link_lost):
            return
        self.close()
        end = time.monotonic() + timeout
        try:
            self.dds = self.dds.resolved()  # the interface `auto` finds, named in every message
            # The link process loads while the hand-over runs; until it writes, this
            # process writes damping (a released robot is limp until its first command).
            self._link = link = LinkProcess(self.dds, self.gait, self._on_link_event)
            self._dp = participant(self.dds)
            self._fallback = RawWriter.create(self._dp, "rt/lowcmd", LowCmd_, SDK_QOS)
            self._reader = RawReader.create(self._dp, "rt/lowstate", LowState_, depth=16)
            self._handover = None
            if self.release_sport_mode:
                self._handover = SportHandover(MotionSwitcherClient(self._dp), SportClient(self._dp),
                                               self._lying_now)
                self._handover.take_over(max(end - time.monotonic(), 0.1))
            while not link.loaded.is_set() and time.monotonic() < end and link.alive():
                self._write_damping(frames=5)
            if not link.loaded.is_set():
                raise TimeoutError(f"the rt/lowcmd writer process did not start within {timeout:g} s")
            link.request("start")
        except (HandoverError, TimeoutError, OSError, ConfigError, RuntimeError) as exc:
            self._teardown()
            raise HardwareError(f"Go2 on {self.dds.interface} (domain {self.dds.domain_id}): {exc}") from exc
        self._odometry.reset()
        self._state_time, self._last_state, self._needs_release, self._link_lost = -np.inf, None, False, ""
        self._stop = stop = threading.Event()  # one per connection: old threads keep theirs
        self._reading = threading.Thread(target=self._read_loop, args=(stop,), name="go2-state", daemon=True)
        self._reading.start()
        while time.monotonic() < end and not np.isfinite(self._state_time):
            time.sleep(0.005)
        if not np.isfinite(self._state_time):
            self._teardown()
            raise HardwareError(f"no valid rt/lowstate within {timeout:g} s on {self.dds.interface} "
                                f"(domain {self.dds.domain_id})")
        self._set_phase(Phase.CONNECTED, "connected: damping")

    def enable(self) -> None:
        with self._lock:
            self._still_connected()
            if self._needs_release:
                raise HardwareError("the robot restarted (in sport mode again): connect() first")
            if self._link_lost or self._link is None:
                raise HardwareError(f"{self._link_lost or 'not connected'}: connect() first")
            # Whether the state is fresh enough to stand up on is the link's decision (its own
            # reading, at real-time priority; a stale one aborts the stand-up and says so);
            # this process's reading, behind the GIL, only tells a robot that is not streaming.
            if time.monotonic() - self._state_time > NOT_STREAMING or self._last_state is None:
                raise HardwareError("no fresh lowstate: the robot is not streaming")
            link = self._link
        if not link.request("stand", wait=ACK_TIMEOUT):
            raise HardwareError("the rt/lowcmd writer did not take the stand-up")
        link.wait_mode(lambda mode: mode != Mode.STANDING.value, self.gait.stand_seconds + 1.0)
        with self._lock:  # a fault may damp it at any moment: decide and set the phase at once
            self._still_connected()
            if link.mode in (Mode.HOLD.value, Mode.POLICY.value):
                self._set_phase(Phase.ENABLED)
                return
            if link.mode == Mode.DAMPING.value:
                raise HardwareError(f"stand-up aborted: {link.reason}")
        self.safe("stand-up did not finish")
        raise HardwareError("stand-up did not finish")

    def command(self, values: np.ndarray) -> None:
        q = np.asarray(values, dtype=np.float64)
        if q.shape != (C.NUM_JOINTS,) or not np.isfinite(q).all():
            self._counts["commands_refused"] += 1
            raise ValueError(f"expected {C.NUM_JOINTS} finite joint targets, got shape {q.shape}")
        with self._lock:
            if self._phase is not Phase.ENABLED or self._link is None:
                self._counts["commands_ignored"] += 1
                return
            if not self._link.command(time.monotonic(), q):
                self._counts["commands_dropped"] += 1  # the link is not reading: its watchdog damps
                return
            self._counts["commands"] += 1

    def safe(self, reason: str) -> None:
        """Lie down with the stand gains, then damping (the robot stands: a drop is what
        this avoids); with no state to start from, or already down, damping at once."""
        with self._lock:
            link = self._link
            if self._phase is Phase.ENABLED:
                self._set_phase(Phase.CONNECTED, reason)
        if link is not None:
            link.request("safe", wait=ACK_TIMEOUT, reason=reason)

    def estop(self, reason: str) -> None:
        with self._lock:
            link = self._link
            self._set_phase(Phase.ESTOPPED, reason)
        if link is not None and not link.request("damp", wait=ACK_TIMEOUT, reason=f"e-stop: {reason}"):
            self._write_damping()

    def close(self) -> None:
        """Lie the robot down, leave damping as the last command it holds, then give it
        back to the sport mode that ran before connect() (not after an e-stop, not when
        it is not lying: then it stays damped, and :attr:`handback` says why)."""
        link = self._link
        running = link is not None and link.alive() and link.ready.is_set()
        handing_back = (self._handover is not None and running and not self._needs_release
                        and self._phase is not Phase.ESTOPPED)
        if link is not None and handing_back:  # from any pose (damping lets the legs slide): lying
            with self._lock:
                if self._phase is Phase.ENABLED:
                    self._set_phase(Phase.CONNECTED, "closing")
            link.request("close_pose", wait=ACK_TIMEOUT, reason="closing")
            link.wait_mode(lambda mode: mode != Mode.LYING_DOWN.value, self.gait.stand_seconds + 1.0)
        if link is not None and running:
            # Damping must be the last command the robot keeps: wait until the link has
            # written it a few times (a loaded machine may not run it for a while).
            link.request("damp", wait=ACK_TIMEOUT, reason="closed")
            sent, end = link.counters()["frames_sent"], time.monotonic() + CLOSE_TIMEOUT
            while link.counters()["frames_sent"] < sent + 5 and time.monotonic() < end:
                time.sleep(WRITE_PERIOD)
        self._stop_loops()
        if handing_back and self._handover is not None:
            self.handback = self._handover.hand_back(2.0)
        self._teardown()
        if self._phase is not Phase.ESTOPPED:
            self._set_phase(Phase.DISCONNECTED, "closed")

    def _lying_now(self) -> bool | None:
        """The newest lowstate shows the robot lying (only while this process's state
        thread, which owns the reader, is not running)."""
        return newest_lying(self._reader, self.state_codec)

    def _stop_loops(self) -> None:
        """The state thread ends, and the link stops writing (its process ends in the
        background: the hand-back need not wait for it)."""
        self._stop.set()
        if self._reading is not None:
            self._reading.join(timeout=1.0)
            self._reading = None
        if self._link is not None:
            self._link.halt(ACK_TIMEOUT)

    def _teardown(self) -> None:
        self._stop_loops()
        if self._link is not None:
            self._link.stop()
            self._link = None
        if self._dp is not None:
            close_participant(self._dp)
            self._dp = None

    # -- what the link decided ------------------------------------------------------
    def _on_link_event(self, event: dict[str, Any]) -> None:
        kind = event.get("ev")
        with self._lock:
            if kind == "fault":
                self._counts["faults"] += 1
                cause = str(event["reason"]).split(" (")[0].replace(" ", "_")  # "stale command (63 ms)"
                self._counts[f"faults_{cause}"] += 1
                self.last_fault = {k: event[k] for k in ("reason", "at", "command_age", "state_age")}
                if self._phase is Phase.ENABLED:
                    self._set_phase(Phase.CONNECTED, str(event["reason"]))
            elif kind == "restart":
                self._counts["robot_restarts"] += 1
                self._needs_release = True
            elif kind == "exit":  # the writer died (killed, crashed): nothing damps the robot but us
                self._counts["link_exits"] += 1
                self._link_lost = f"the rt/lowcmd writer process ended (exit code {event.get('code')})"
                self.last_fault = {"reason": self._link_lost, "at": time.monotonic(), "command_age": float("nan"),
                                   "state_age": time.monotonic() - self._state_time}
                if self._phase is Phase.ENABLED:
                    self._set_phase(Phase.CONNECTED, self._link_lost)
        if kind == "exit":
            self._write_damping()

    def _write_damping(self, frames: int = 25) -> None:
        """Damping from this process's own writer (the link is gone or deaf), a few times
        over one command timeout: the firmware keeps the last command it receives."""
        msg, targets = self.cmd_codec.new(), MotorTargets()
        targets.kd[:] = self.gait.damping_kd
        fill_command(self.cmd_codec, msg, targets)
        frame = self.cmd_codec.encode(msg)
        for _ in range(frames):
            try:
                if self._dp is None:
                    return
                self._fallback.write(frame)
                self._counts["fallback_damping_sent"] += 1
            except Exception:
                self._counts["write_failed"] += 1
            time.sleep(WRITE_PERIOD)

    # -- the measurements -------------------------------------------------------------
    def _read_loop(self, stop: threading.Event) -> None:
        # Real-time below the link: a normal-priority thread holding the GIL here would be
        # preempted by every competing process while the bridge's executor waits for it.
        # Cyclone's receive threads with it: at normal priority they starved under the
        # graph's own real-time load and rt/lowstate reached the bridge up to 0.7 s late.
        with realtime_thread("go2 lowstate reader", EXECUTOR_PRIORITY, cpu=None, helpers=DDS_THREADS):
            while not stop.is_set():
                try:
                    if self._reader.wait(0.05):
                        self._read_states()
                except Exception:  # never let the state thread die: the link keeps the robot safe
                    self._counts["state_errors"] += 1
                    time.sleep(WRITE_PERIOD)

    def _read_states(self) -> None:
        # The newest frame only: working through a backlog would make this thread later
        # still, and the estimator integrates over the ticks between the frames it uses.
        frames = self._reader.take(16)
        arrival = time.monotonic()
        self._counts["states_received"] += len(frames)
        state = newest_state(self.state_codec, frames, self._counts)
        if state is None:
            return
        previous = self._last_state
        if previous is not None and robot_restarted(previous.tick, state.tick):
            self._odometry.reset()
            previous = None
        dt = WRITE_PERIOD
        if previous is not None and 0 < (state.tick - previous.tick) % 2**32 < 100:
            dt = ((state.tick - previous.tick) % 2**32) / 1000.0
        velocity, position = self._odometry.update(dt, state.quat, state.gyro, state.accel, state.q, state.dq,
                                                   state.foot_force)
        m = Measurements(joint_pos=state.q, joint_vel=state.dq, joint_effort=state.tau, base_pos=position,
                         base_quat=state.quat, base_lin_vel=velocity, base_ang_vel=state.gyro,
                         specific_force=state.accel,  # the IMU's accelerometer, m/s^2, body frame
                         stamps={"joint_states": arrival, "odom": arrival, "imu": arrival})
        with self._lock:
            self._last_state, self._state_time, self._latest = state, arrival, m
        for callback in list(self._callbacks):  # the newest only; a slow one delays no LowCmd_
            try:
                callback(m)
            except Exception:
                self._counts["callback_errors"] += 1

    # -- health --------------------------------------------------------------------
    def counters(self) -> dict[str, int]:
        out = dict(self._counts)
        link = self._link
        if link is not None:
            out.update({k: v for k, v in link.counters().items() if k != "states_seen"})
            out["overruns"], out["deadline_misses"] = link.timing.overruns, link.timing.misses
        return out

    def writer_timing(self, since: float = -np.inf) -> dict[str, Any]:
        """The writer's ticks at or after ``since`` (monotonic s; the last 65 s at most):
        rate, lateness and interval jitter, deadline misses (:class:`~sim2real.hardware.timing.TimingRecord`)."""
        link = self._link
        return link.timing.summary(since) if link is not None else {}

    def _robot_writers(self) -> list[dict[str, object]]:
        """The robot's ``rt/lowstate`` writers discovery found (type identity, QoS)."""
        reader, dp = getattr(self, "_reader", None), self._dp
        try:
            return reader.writers() if reader is not None and dp is not None else []
        except DDSException:
            return []  # closed under us

    def detail(self) -> dict[str, Any]:
        link = self._link
        timing = self.writer_timing(since=time.monotonic() - DETAIL_WINDOW)
        last = self._last_state
        return {
            "mode": link.mode if link is not None else Mode.DAMPING.value,
            "write_rate_hz": round(float(timing.get("rate_hz", 0.0)), 1),
            "write_jitter_ms": timing.get("lateness_ms") or {q: float("nan") for q in ("p50", "p99", "max")},
            "write_interval_jitter_ms": timing.get("jitter_ms", {}),
            "deadline_misses": timing.get("deadline_misses", 0),
            "realtime": dict(link.realtime) if link is not None else {},
            "writer_pid": link.pid if link is not None else None,
            "interface": self.dds.interface,
            "domain_id": self.dds.domain_id,
            "robot_writers": self._robot_writers(),
            "stance": self._odometry.stance.astype(int).tolist(),
            "foot_force": [] if last is None else last.foot_force.tolist(),
        }
