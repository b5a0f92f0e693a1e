"""The Go2 backend: Unitree's low-level DDS protocol from the host, with the deployment
state machine real users run (:mod:`.state_machine`).

``connect`` takes the robot over from sport mode the way Unitree's example does
(:mod:`.handover`: StandDown, the robot seen lying, then ReleaseMode), starts the 500 Hz
loop and waits for ``rt/lowstate``; the robot is then lying in DAMPING (kp 0, kd 8).
``enable`` stands it up from the measured (lying) pose; ``command`` takes 12 joint
position targets (rad, FR FL RR RL x hip thigh calf) applied with the simulated servo's
gains. ``safe`` lies it down with its own targets (LYING_DOWN, then damping);
``close`` does the same, then hands it back to the sport mode that ran before. One
thread owns the link: every 2 ms it writes a LowCmd_ (CRC filled last) from the state
machine and, in between, reads every lowstate frame that arrives. Because the firmware
applies the last command forever, that loop is the robot's watchdog: a command older
than 3 policy periods (0.06 s), a state older than 0.06 s, or an invalid frame put it in
DAMPING within one loop period.

Measurements: joint positions, velocities and torques, the IMU's quaternion and body
rates, and the base velocity and position estimated from leg kinematics
(:mod:`.estimator`), since low-level state has no base velocity. Stamps are host
monotonic arrival times of ``joint_states``, ``odom`` and ``imu``.
"""

from __future__ import annotations

import threading
import time
from collections import Counter, deque
from dataclasses import dataclass
from typing import Any

import numpy as np

from sim2real.hardware.backend import HardwareError, Phase, RobotBackend
from sim2real.hardware.go2.codec import Codec, FrameError
from sim2real.hardware.go2.dds import DdsConfig, RawReader, RawWriter, close_participant, participant
from sim2real.hardware.go2.estimator import EstimatorConfig, LegOdometry
from sim2real.hardware.go2.handover import HandoverError, SportHandover, newest_lying
from sim2real.hardware.go2.motion_switcher import MotionSwitcherClient
from sim2real.hardware.go2.protocol import LowState, fill_command, parse_state
from sim2real.hardware.go2.sport import SportClient
from sim2real.hardware.go2.state_machine import DeploymentStateMachine, GaitConfig, Mode
from sim2real.hardware.go2.types import LowCmd_, LowState_
from sim2real.hardware.options import load_options
from sim2real.sim.core.deployment import Measurements
from sim2real.sim.core.errors import ConfigError
from sim2real.sim.quadruped import constants as C

WRITE_PERIOD = 0.002
"""Unitree's low-level examples write LowCmd_ every 2 ms."""
CLOSE_TIMEOUT = 0.5
"""s close() waits for the damping command to be written before the link goes."""
READ_GUARD = 0.0003
"""No state frame is processed (~0.15 ms each) in the last 0.3 ms before a write is due."""


@dataclass
class Go2Session:
    release_sport_mode: bool = True
    """Take the robot over from sport mode at connect (StandDown, then the motion
    switcher's ReleaseMode) and hand it back at close (false: the robot is already in
    low-level mode, and stays there)."""


class Go2Backend(RobotBackend):
    """A Unitree Go2 (or its emulator) in low-level mode.

    Options: ``interface``, ``peers``, ``multicast``, ``domain_id`` (:class:`.dds.DdsConfig`;
    default loopback, domain 0), the gains and timeouts of :class:`.state_machine.GaitConfig`,
    ``contact_threshold`` and the time constants of :class:`.estimator.EstimatorConfig`,
    ``release_sport_mode`` (default true; false for a robot already in low-level mode).
    """

    robot = "quadruped"
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
        self._jitter: deque[float] = deque(maxlen=5000)
        self._write_times: deque[float] = deque(maxlen=5000)
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self._notify = threading.Condition()
        self._pending: Measurements | None = None
        self._machine = DeploymentStateMachine(self.gait)
        self._state_time = -np.inf
        self._last_state: LowState | None = None
        self._odometry = LegOdometry(self.estimator_config)
        self._dp: Any = None
        self._needs_release = False
        self._handover: SportHandover | None = None
        self.handback = ""
        """Why the last close() did not give the robot back to sport mode ('' : it did, or none ran)."""
        self.last_fault: dict[str, Any] = {}
        """The latest drop to damping the loop decided: reason, when (host monotonic s), and
        how old the newest command and state were then (s)."""

    # -- life cycle ----------------------------------------------------------------
    def connect(self, timeout: float) -> None:
        if self._phase in (Phase.CONNECTED, Phase.ENABLED) and not self._needs_release:
            return
        self.close()
        end = time.monotonic() + timeout
        try:
            self._dp = participant(self.dds)
            self._writer = RawWriter.create(self._dp, "rt/lowcmd", LowCmd_)
            self._reader = RawReader.create(self._dp, "rt/lowstate", LowState_, depth=16)
            self._handover = None
            if self.release_sport_mode:
                self._handover = SportHandover(MotionSwitcherClient(self._dp), SportClient(self._dp),
                                               self._lying_now)
                self._handover.take_over(max(end - time.monotonic(), 0.1))
        except (HandoverError, TimeoutError, OSError, ConfigError, RuntimeError) as exc:
            self._teardown()
            raise HardwareError(f"Go2 on {self.dds.interface} (domain {self.dds.domain_id}): {exc}") from exc
        self._machine = DeploymentStateMachine(self.gait)
        self._odometry.reset()
        self._state_time, self._last_state, self._needs_release = -np.inf, None, False
        self._stop = stop = threading.Event()  # one per connection: old threads keep theirs
        self._thread = threading.Thread(target=self._run, args=(stop,), name="go2-lowcmd", daemon=True)
        self._thread.start()
        threading.Thread(target=self._deliver, args=(stop,), name="go2-state", daemon=True).start()
        while time.monotonic() < end and not np.isfinite(self._state_time):
            time.sleep(0.005)
        if not np.isfinite(self._state_time):
            self._teardown()
            raise HardwareError(f"no valid rt/lowstate within {timeout:g} s on {self.dds.interface} "
                                f"(domain {self.dds.domain_id})")
        self._set_phase(Phase.CONNECTED, "connected: damping")

    def enable(self) -> None:
        with self._lock:
            if self._phase is not Phase.CONNECTED:
                raise HardwareError(f"cannot enable from {self._phase.value}" +
                                    (f" ({self._reason})" if self._reason else ""))
            if self._needs_release:
                raise HardwareError("the robot restarted (in sport mode again): connect() first")
            now = time.monotonic()
            if now - self._state_time > self.gait.state_timeout or self._last_state is None:
                raise HardwareError("no fresh lowstate: the robot is not streaming")
            self._machine.stand(now, self._last_state.q)
        end = time.monotonic() + self.gait.stand_seconds + 1.0
        while time.monotonic() < end:
            with self._lock:  # the loop may damp at any moment: decide and set the phase at once
                mode = self._machine.mode
                if mode in (Mode.HOLD, Mode.POLICY) and self._phase is Phase.CONNECTED:
                    self._set_phase(Phase.ENABLED)
                    return
                if mode is Mode.DAMPING or self._phase is not Phase.CONNECTED:
                    raise HardwareError(f"stand-up aborted: {self._machine.reason}")
            time.sleep(0.005)
        self.safe("stand-up did not finish")
        raise HardwareError("stand-up did not finish")

    def command(self, values: np.ndarray) -> None:
        q = np.asarray(values, dtype=np.float64)
        if q.shape != (C.NUM_JOINTS,) or not np.isfinite(q).all():
            self._counts["commands_refused"] += 1
            raise ValueError(f"expected {C.NUM_JOINTS} finite joint targets, got shape {q.shape}")
        with self._lock:
            if self._phase is not Phase.ENABLED:
                self._counts["commands_ignored"] += 1
                return
            self._machine.command(time.monotonic(), q)
            self._counts["commands"] += 1

    def safe(self, reason: str) -> None:
        """Lie down with the stand gains, then damping (the robot stands: a drop is what
        this avoids); with no state to start from, or already down, damping at once."""
        with self._lock:
            if self._last_state is not None and self._machine.mode in (Mode.STANDING, Mode.HOLD, Mode.POLICY):
                self._machine.lie_down(time.monotonic(), self._last_state.q, reason)
            elif self._machine.mode is not Mode.LYING_DOWN:
                self._machine.damp(reason)
            if self._phase is Phase.ENABLED:
                self._set_phase(Phase.CONNECTED, reason)

    def estop(self, reason: str) -> None:
        with self._lock:
            self._machine.damp(f"e-stop: {reason}")
            self._set_phase(Phase.ESTOPPED, reason)

    def close(self) -> None:
        """Lie the robot down, leave damping as the last command it holds, then give it
        back to the sport mode that ran before connect() (not after an e-stop, not when
        it is not lying: then it stays damped, and :attr:`handback` says why)."""
        running = self._thread is not None and self._thread.is_alive()
        handing_back = (self._handover is not None and running and not self._needs_release
                        and self._phase is not Phase.ESTOPPED)
        if handing_back:  # from any pose (damping lets the legs slide): lying, where sport mode takes it
            with self._lock:
                if self._last_state is not None and time.monotonic() - self._state_time <= self.gait.state_timeout:
                    self._machine.lie_down(time.monotonic(), self._last_state.q, "closing")
                if self._phase is Phase.ENABLED:
                    self._set_phase(Phase.CONNECTED, "closing")
            end = time.monotonic() + self.gait.stand_seconds + 1.0
            while self._machine.mode is Mode.LYING_DOWN and time.monotonic() < end:
                time.sleep(0.01)
        with self._lock:
            self._machine.damp("closed")
            sent = self._counts["frames_sent"]
        if running:
            # Damping must be the last command the robot keeps: wait until the loop has
            # written it a few times (a loaded process may not run the loop for a while).
            end = time.monotonic() + CLOSE_TIMEOUT
            while self._counts["frames_sent"] < sent + 5 and time.monotonic() < end:
                time.sleep(WRITE_PERIOD)
        self._stop_loop()
        if handing_back and self._handover is not None:
            self.handback = self._handover.hand_back(2.0)
        self._teardown()
        if self._phase is not Phase.ESTOPPED:
            self._set_phase(Phase.DISCONNECTED, "closed")

    def _lying_now(self) -> bool | None:
        """The newest lowstate shows the robot lying (only while the loop, which owns the
        reader, is not running)."""
        return newest_lying(self._reader, self.state_codec)

    def _stop_loop(self) -> None:
        self._stop.set()
        with self._notify:
            self._notify.notify_all()
        if self._thread is not None:
            self._thread.join(timeout=1.0)
            self._thread = None

    def _teardown(self) -> None:
        self._stop_loop()
        if self._dp is not None:
            close_participant(self._dp)
            self._dp = None

    # -- the 500 Hz loop -----------------------------------------------------------
    def _run(self, stop: threading.Event) -> None:
        msg = self.cmd_codec.new()
        deadline = time.monotonic()
        while not stop.is_set():
            try:
                left = deadline - time.monotonic()
                if left > READ_GUARD:  # read states until shortly before the write is due
                    if self._reader.wait(left - READ_GUARD):
                        self._read_states()
                    continue
                if left > 0:
                    time.sleep(left)
                    continue
                if time.monotonic() - self._state_time > 2 * WRITE_PERIOD:
                    self._read_states()  # after a stall of this thread: frames waiting are not a stale stream
                now = time.monotonic()
                self._jitter.append(now - deadline)
                self._write(now, msg)
                deadline += WRITE_PERIOD
                if time.monotonic() > deadline + WRITE_PERIOD:  # a whole period late: resynchronize
                    self._counts["overruns"] += 1
                    deadline = time.monotonic()
            except Exception as exc:  # the loop must outlive any error, with the robot damped
                self._counts["loop_errors"] += 1
                with self._lock:
                    self._machine.damp(f"internal error: {type(exc).__name__}: {exc}")
                    if self._phase is Phase.ENABLED:
                        self._set_phase(Phase.CONNECTED, self._machine.reason)
                deadline = time.monotonic() + WRITE_PERIOD

    def _write(self, now: float, msg: np.ndarray) -> None:
        with self._lock:
            last = self._last_state
            targets, fault = self._machine.step(now, now - self._state_time, None if last is None else last.q)
            if fault:
                self._fault(now, fault)
        fill_command(self.cmd_codec, msg, targets)
        try:
            self._writer.write(self.cmd_codec.encode(msg))
        except Exception:
            self._counts["write_failed"] += 1
            return
        self._counts["frames_sent"] += 1
        self._write_times.append(now)

    def _fault(self, now: float, reason: str) -> None:
        """Record a drop to damping the loop decided (the lock held)."""
        self._counts["faults"] += 1
        self.last_fault = {"reason": reason, "at": now, "command_age": now - self._machine.command_time,
                           "state_age": now - self._state_time}
        if self._phase is Phase.ENABLED:
            self._set_phase(Phase.CONNECTED, reason)

    def _restarted(self, previous: LowState | None, state: LowState) -> bool:
        """The robot's millisecond tick went back (not a wrap): it rebooted, in sport mode."""
        return previous is not None and 50 < (previous.tick - state.tick) % 2**32 < 2**31

    def _read_states(self) -> None:
        for frame in self._reader.take(16):
            arrival = time.monotonic()
            try:
                state = parse_state(self.state_codec, frame)
            except FrameError as exc:
                self._counts[f"state_rejected_{exc.reason}"] += 1
                continue
            self._counts["states_received"] += 1
            previous = self._last_state
            if self._restarted(previous, state):
                with self._lock:
                    self._counts["robot_restarts"] += 1
                    self._needs_release = True
                    if self._machine.damp("the robot restarted"):
                        self._fault(arrival, "the robot restarted")
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
            if self._callbacks:  # no thread wakes 500 times a second for nobody
                with self._notify:
                    self._pending = m
                    self._notify.notify()

    def _deliver(self, stop: threading.Event) -> None:
        """Hand measurements to the callbacks on a thread of their own (newest only), so
        a slow subscriber never delays a LowCmd_."""
        while not stop.is_set():
            with self._notify:
                while self._pending is None and not stop.is_set():
                    self._notify.wait(0.1)
                m, self._pending = self._pending, None
            if m is None:
                continue
            for callback in list(self._callbacks):
                try:
                    callback(m)
                except Exception:
                    self._counts["callback_errors"] += 1

    # -- health --------------------------------------------------------------------
    def counters(self) -> dict[str, int]:
        return dict(self._counts)

    def detail(self) -> dict[str, Any]:
        jitter = np.asarray(self._jitter) * 1e3
        times = np.asarray(self._write_times)
        rate = (len(times) - 1) / (times[-1] - times[0]) if len(times) > 1 and times[-1] > times[0] else 0.0
        last = self._last_state
        return {
            "mode": self._machine.mode.value,
            "write_rate_hz": round(float(rate), 1),
            "write_jitter_ms": {q: round(float(np.percentile(jitter, p)), 3) if len(jitter) else float("nan")
                                for q, p in (("p50", 50), ("p99", 99), ("max", 100))},
            "interface": self.dds.interface,
            "domain_id": self.dds.domain_id,
            "stance": self._odometry.stance.astype(int).tolist(),
            "foot_force": [] if last is None else last.foot_force.tolist(),
        }
