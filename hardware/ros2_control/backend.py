"""A Franka arm through ros2_control's topics (franka_ros2, or its emulator): joint states
from ``joint_state_broadcaster``, joint position targets to a
``forward_position_controller``, the gripper width to a gripper controller (topic names
and QoS: :mod:`.topics`).

The policy commands the fingertip's velocity (``ee_delta``: vx vy vz in m/s, wx wy wz in
rad/s, gripper width in m). Each command moves a Cartesian target exactly as the
simulator's controller moves its setpoint (:func:`sim2real.sim.arm.control.cartesian_setpoint`:
integrated over the control period, kept within 5 cm / 0.15 rad of the measured pose,
inside the workspace box and the tilt limits); a damped-least-squares IK step on the
arm's own MuJoCo model turns it into joint targets within the joint position and
velocity limits, and a streaming thread interpolates them at ``command_rate_hz`` (see
:class:`~.options.Ros2ControlArmOptions` for why).

Safety: ros2_control's forward controllers hold their last command forever, so this
backend is the deadman. The safe state is *hold*: the measured joint positions are sent
once as the target (the arm stops where it is; gravity is the robot's business) and
nothing more is sent. It is entered when commands stop for ``command_timeout``
(2.5 periods), when joint states go stale, on :meth:`safe`, and latched on :meth:`estop`.

What a real Franka does in the same faults: the policy or the bridge dies -> this
backend holds (a dead backend process sends nothing more and the forward controller
keeps the last target: the arm stops at most one interpolation period further, 50 ms);
the link drops -> the controller keeps its last target, franka_ros2's hardware
interface runs on the robot's PC, libfranka's 1 kHz link to the arm fails with
``communication_constraints_violation`` after a few lost packets and the arm brakes;
a command jump or speed over the limits -> Franka's own reflexes stop it (the user
stop button is the hardware e-stop). :meth:`estop` is a software hold, not the button.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import numpy as np
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray

from sim2real.hardware.backend import HardwareError, Phase, RobotBackend
from sim2real.hardware.options import load_options
from sim2real.hardware.realtime import EXECUTOR_PRIORITY, WRITER_PRIORITY, realtime_thread
from sim2real.hardware.ros2_control import topics as T
from sim2real.hardware.ros2_control.joint_states import Refused, reorder
from sim2real.hardware.ros2_control.kinematics import ArmKinematics
from sim2real.hardware.ros2_control.options import Ros2ControlArmOptions
from sim2real.hardware.timing import PeriodicSchedule, TimingRecord
from sim2real.sim.arm import constants as C
from sim2real.sim.arm.control import cartesian_setpoint
from sim2real.sim.core.deployment import Measurements
from sim2real.sim.core.errors import ConfigError


def within_reach(q_target: np.ndarray, q_measured: np.ndarray) -> np.ndarray:
    """``q_target`` at most one period's motion (``JOINT_DELTA_MAX``) ahead of the measured
    joints, as the simulator bounds its setpoints, so a blocked arm winds up no force.
    Scaled back as a whole toward the measured joints, never clipped joint by joint: a
    per-joint clip changes the direction of the step and so bends the hand's path (a
    15 cm move along x through the emulated arm sank 1-4 cm; scaled, 0.2-0.6 cm)."""
    ahead = q_target - q_measured
    ratio = float(np.max(np.abs(ahead) / C.JOINT_DELTA_MAX))
    return q_measured + ahead / ratio if ratio > 1.0 else q_target


class Ros2ControlArm(RobotBackend):
    """The arm through ros2_control (``backend: ros2_control``)."""

    robot = "arm"
    protocol = "ROS 2 ros2_control: joint_states, forward_position_controller, gripper_controller"
    state_rate = 250.0  # the emulator's; franka_ros2's controller manager runs at 1 kHz (a WARN/FAIL item shows it)

    def __init__(self, action_mode: str, options: dict[str, Any] | None = None) -> None:
        super().__init__(action_mode, options)
        if action_mode != "ee_delta":
            raise ConfigError("action_mode", f"the ros2_control arm backend drives ee_delta, not {action_mode!r}")
        (self.opt,) = load_options(self.options, [(Ros2ControlArmOptions, "")], "ros2_control arm")
        self.names = (*T.arm_joint_names(self.opt.arm_id), *T.finger_joint_names(self.opt.arm_id))
        self._fk = ArmKinematics()  # the executor thread's
        self._ik = ArmKinematics()  # command()'s
        self._control = threading.RLock()
        """Phase changes, targets and publishing: command(), the streaming thread, safe()."""
        self._ros: T.RosThread | None = None
        self._stream: threading.Thread | None = None
        self._stop = threading.Event()
        self._counts: dict[str, int] = {"states": 0, "commands": 0, "commands_ignored": 0, "commands_invalid": 0,
                                        "targets_sent": 0, "gripper_sent": 0, "holds": 0, "internal_errors": 0}
        self._q_cmd = C.HOME_QPOS.copy()
        self._posture = C.HOME_QPOS.copy()
        self._target_pos = np.zeros(3)
        self._target_quat = np.array([0.0, 1.0, 0.0, 0.0])
        self._segment: tuple[float, np.ndarray, np.ndarray] | None = None
        """Interpolation in progress: (start time, from, to) over one control period."""
        self._generation = 0
        """Counts enables and holds: an IK step computed across one is dropped."""
        self.stream_timing = TimingRecord(1.0 / self.opt.command_rate_hz, capacity=16384)
        """The command stream's ticks (rate, lateness, jitter)."""
        self.realtime: dict[str, Any] = {}
        """The stream's scheduling (:class:`~sim2real.hardware.realtime.RealtimeStatus`)."""
        self._last_command = 0.0
        self._state_gaps: list[float] = []
        self._delays: list[float] = []
        """Arrival (host wall clock) minus the header stamp of recent joint states, s."""
        self.last_hold: dict[str, Any] = {}
        """The latest hold: reason, monotonic time, seconds after the last command."""

    # -- life cycle ---------------------------------------------------------------------
    def connect(self, timeout: float) -> None:
        self.safe("reconnecting")
        self._stop_stream()
        before = dict(self._counts)
        if self._ros is None or not self._ros.spinning:
            # One DDS participant for the backend's life: a participant deleted and made
            # again is sometimes not rediscovered for a lease period (~3 s, Fast DDS), so
            # reconnecting (after an e-stop) reuses it; close() ends it.
            self._shutdown()
            ros = T.RosThread("sim2real_ros2_control_arm", T.domain_id(
                {} if self.opt.domain_id is None else {"domain_id": self.opt.domain_id}), self.opt.namespace,
                realtime=("ros2_control joint_states", EXECUTOR_PRIORITY))
            self._pub_q = ros.node.create_publisher(Float64MultiArray, T.POSITION_COMMANDS, T.controller_qos())
            self._pub_grip = ros.node.create_publisher(Float64MultiArray, T.GRIPPER_COMMANDS, T.controller_qos())
            ros.node.create_subscription(JointState, T.JOINT_STATES, self._on_joint_states, T.state_qos())
            self._ros = ros
        with self._lock:
            self._latest = None
        end = time.monotonic() + timeout
        while self.state() is None and time.monotonic() < end:
            time.sleep(0.01)
        if self.state() is None:
            refused = {k: n - before.get(k, 0) for k, n in self._counts.items()
                       if k.startswith("refused_") and n > before.get(k, 0)}
            self._set_phase(Phase.DISCONNECTED)
            raise HardwareError(f"no valid {T.JOINT_STATES} with joints {list(self.names)} in {timeout:.1f} s "
                                f"(refused: {refused or 'none'})")
        self._stop.clear()
        self._stream = threading.Thread(target=self._stream_loop, name="ros2_control_arm_stream", daemon=True)
        self._stream.start()
        self._set_phase(Phase.CONNECTED)

    def enable(self) -> None:
        with self._control:
            if self._phase == Phase.ESTOPPED:
                raise HardwareError(f"e-stopped ({self._reason}): connect() again once the cause is cleared")
            if self._phase != Phase.CONNECTED or self._ros is None:
                raise HardwareError(f"cannot enable from {self._phase.value}")
        # A fresh state is required, not an instant one: one late joint_states message on a
        # busy host (seen once in a full test run) must not refuse the enable outright.
        end = time.monotonic() + self.opt.controller_wait
        while self._fresh_state() is None and time.monotonic() < end:
            time.sleep(0.005)
        if self._fresh_state() is None:
            raise HardwareError(f"no fresh {T.JOINT_STATES} (none newer than {self.opt.state_timeout} s "
                                f"within {self.opt.controller_wait:g} s)")
        while self._pub_q.get_subscription_count() == 0 and time.monotonic() < end:
            time.sleep(0.02)
        if self._pub_q.get_subscription_count() == 0:
            raise HardwareError(f"nothing subscribes {T.POSITION_COMMANDS}: is forward_position_controller active?")
        with self._control:
            m = self._fresh_state()
            if m is None or m.joint_pos is None or m.ee_pos is None or m.ee_quat is None:
                raise HardwareError("joint states went stale while enabling")
            q = m.joint_pos[:7].copy()
            self._q_cmd, self._posture = q.copy(), q.copy()
            self._target_pos, self._target_quat = m.ee_pos.copy(), m.ee_quat.copy()
            self._segment = None
            self._generation += 1
            self._send_q(q)  # the controller's target becomes where the arm is: no jump
            self._last_command = time.monotonic()
            self._set_phase(Phase.ENABLED)

    def command(self, values: np.ndarray) -> None:
        v = np.asarray(values, dtype=np.float64)
        if v.shape != (7,) or not np.all(np.isfinite(v)):
            self._counts["commands_invalid"] += 1
            raise ValueError(f"ee_delta command must be 7 finite values (vx vy vz wx wy wz gripper), got {values!r}")
        with self._control:  # a snapshot; the IK runs outside the lock, so the stream never waits for it
            if self._phase != Phase.ENABLED:
                self._counts["commands_ignored"] += 1
                return
            m = self._fresh_state()
            if m is None or m.joint_pos is None or m.ee_pos is None or m.ee_quat is None:
                self._hold("joint states stale")
                return
            generation, q_cmd, posture = self._generation, self._q_cmd.copy(), self._posture.copy()
            target_pos, target_quat = self._target_pos.copy(), self._target_quat.copy()
        dt = self.opt.control_dt
        pos, quat = cartesian_setpoint(target_pos[None], target_quat[None], m.ee_pos[None], m.ee_quat[None],
                                       v[None, 0:3] * dt, v[None, 3:6] * dt)
        q_meas = m.joint_pos[:7]
        q_new = self._ik.step(q_cmd, pos[0], quat[0], dt, posture)
        q_new = within_reach(q_new, q_meas)
        with self._control:
            if self._phase != Phase.ENABLED or generation != self._generation:
                self._counts["commands_ignored"] += 1  # held (or enabled again) meanwhile
                return
            now = time.monotonic()
            self._target_pos, self._target_quat = pos[0], quat[0]
            start = self._segment_point(now)
            self._q_cmd = q_new
            self._segment = (now, start, q_new)
            self._last_command = now
            self._counts["commands"] += 1
            self._send(self._pub_grip, [float(np.clip(v[6], 0.0, C.GRIP_WIDTH_MAX))], "gripper_sent")

    def safe(self, reason: str) -> None:
        with self._control:
            if self._phase == Phase.ENABLED:
                self._hold(reason)

    def estop(self, reason: str) -> None:
        with self._control:
            if self._phase in (Phase.ENABLED, Phase.CONNECTED):
                self._hold(reason)
            self._set_phase(Phase.ESTOPPED, reason)

    def close(self) -> None:
        self.safe("closed")
        self._shutdown()
        if self._phase != Phase.ESTOPPED:
            self._set_phase(Phase.DISCONNECTED)

    def _stop_stream(self) -> None:
        self._stop.set()
        if self._stream is not None:
            self._stream.join(timeout=2.0)
            self._stream = None

    def _shutdown(self) -> None:
        self._stop_stream()
        if self._ros is not None:
            self._ros.close()
            self._ros = None

    # -- holding and streaming -------------------------------------------------------------
    def _hold(self, reason: str) -> None:
        """The safe state: the measured joints (or, without fresh state, the target
        being streamed, where the arm is heading) sent once as the target; then silence."""
        now = time.monotonic()
        m = self._fresh_state()
        q = m.joint_pos[:7] if m is not None and m.joint_pos is not None else self._segment_point(now)
        self._segment = None
        self._generation += 1
        self._send_q(q)
        self._counts["holds"] += 1
        self.last_hold = {"reason": reason, "time": now, "after_last_command_s": now - self._last_command}
        self._set_phase(Phase.CONNECTED, reason)

    def _segment_point(self, now: float) -> np.ndarray:
        if self._segment is None:
            return self._q_cmd.copy()
        t0, q0, q1 = self._segment
        s = min(max((now - t0) / self.opt.control_dt, 0.0), 1.0)
        return q0 + s * (q1 - q0)

    def _stream_loop(self) -> None:
        """Interpolated targets while a segment runs; the deadman and the staleness check
        always. A real-time thread of its own (:mod:`sim2real.hardware.realtime`), so a
        stuck executor cannot silence the deadman and a busy machine cannot stretch the
        stream; it takes the lock only to read the segment and publish."""
        with realtime_thread("ros2_control command stream", WRITER_PRIORITY) as status:
            self.realtime = status.as_dict()
            schedule = PeriodicSchedule(1.0 / self.opt.command_rate_hz, self.stream_timing)
            while not self._stop.is_set():
                now = schedule.sleep()
                try:
                    self._stream_once(now)
                except Exception:
                    self._counts["internal_errors"] += 1
                schedule.tick(now)

    def _stream_once(self, now: float) -> None:
        with self._control:
            if self._phase != Phase.ENABLED:
                return
            if now - self._last_command > self.opt.command_timeout:
                self._hold(f"no command for {self.opt.command_timeout:.3f} s")
            elif self._fresh_state() is None:
                self._hold("joint states stale")
            elif self._segment is not None:
                self._send_q(self._segment_point(now))
                if now - self._segment[0] >= self.opt.control_dt:
                    self._segment = None

    def _send_q(self, q: np.ndarray) -> None:
        self._send(self._pub_q, [float(x) for x in q], "targets_sent")

    def _send(self, pub: Any, data: list[float], counter: str) -> None:
        if self._ros is None or not self._ros.context.ok():
            return
        pub.publish(Float64MultiArray(data=data))
        self._counts[counter] += 1

    # -- state --------------------------------------------------------------------------
    def _fresh_state(self) -> Measurements | None:
        m = self.state()
        return m if m is not None and self._state_age(m) <= self.opt.state_timeout else None

    def _on_joint_states(self, msg: JointState) -> None:
        now = time.monotonic()
        # The controller manager stamps each update on the robot's clock (chrony/PTP-synced
        # with this host on a real robot): arrival minus stamp is the link's delay.
        self._delays.append(time.time() - (msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9))
        del self._delays[:-200]
        try:
            pos, vel, eff = reorder([str(n) for n in msg.name], msg.position, msg.velocity, msg.effort, self.names)
        except Refused as exc:
            key = f"refused_{exc.reason}"
            self._counts[key] = self._counts.get(key, 0) + 1
            return
        try:
            ee_pos, ee_quat = self._fk.forward(pos[:7])
            with self._control:
                enabled = self._phase == Phase.ENABLED
                desired = (self._target_pos.copy(), self._target_quat.copy()) if enabled else (ee_pos, ee_quat)
            previous = self.state()
            if previous is not None and previous.stamps:
                self._state_gaps.append(now - previous.stamps["joint_states"])
                del self._state_gaps[:-1000]
            self._counts["states"] += 1
            self._publish(Measurements(joint_pos=pos, joint_vel=vel, joint_effort=eff, ee_pos=ee_pos,
                                       ee_quat=ee_quat, ee_pos_desired=desired[0], ee_quat_desired=desired[1],
                                       stamps={"joint_states": now, "ee_pose": now, "ee_pose_desired": now}))
        except Exception:
            self._counts["internal_errors"] += 1

    def counters(self) -> dict[str, int]:
        return dict(self._counts)

    def latency(self) -> float | None:
        delays = list(self._delays)
        return float(np.median(delays)) if delays else None

    def detail(self) -> dict[str, Any]:
        gaps = np.asarray(self._state_gaps[-500:])
        rate = float(1.0 / gaps.mean()) if len(gaps) and gaps.mean() > 0 else 0.0
        stream = self.stream_timing.summary(since=time.monotonic() - 10.0)
        return {"realtime": dict(self.realtime), "command_stream": stream,
                "arm_id": self.opt.arm_id, "state_rate_hz": round(rate, 1),
                "state_gap_max_ms": round(float(gaps.max()) * 1e3, 2) if len(gaps) else None,
                "executor": "spinning" if self._ros is not None and self._ros.spinning else
                            (self._ros.error if self._ros is not None else "closed"),
                "last_hold": {k: v for k, v in self.last_hold.items() if k != "time"}}
