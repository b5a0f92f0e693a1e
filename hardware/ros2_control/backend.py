"""A Franka arm through ros2_control's topics (franka_ros2, or its emulator). As
franka_ros2 ships (``topology: franka_ros2``): the arm's joint states from
``joint_state_broadcaster`` and the fingers from ``franka_gripper``, each stream at its own
rate; joint targets to ros2_controllers' ``joint_trajectory_controller``, which
interpolates them at the controller manager's 1 kHz; the gripper's width through its own
actions (the relay of :mod:`.gripper_relay`). ``topology: merged``: one 9-joint stream,
forward position controllers (topic names and QoS: :mod:`.topics`).

The policy commands the fingertip's velocity (``ee_delta``: vx vy vz in m/s, wx wy wz in
rad/s, gripper width in m). Each command moves a Cartesian target exactly as the
simulator's controller moves its setpoint (:func:`sim2real.sim.arm.control.cartesian_setpoint`:
integrated over the control period, kept within 5 cm / 0.15 rad of the measured pose,
inside the workspace box and the tilt limits); a damped-least-squares IK step on the
arm's own MuJoCo model turns it into joint targets within the joint position and
velocity limits: one trajectory point a control period ahead (the trajectory controller
interpolates), or, to forward controllers, a stream this backend interpolates at
``command_rate_hz`` (see :class:`~.options.Ros2ControlArmOptions` for why).

Safety: ros2_control's forward controllers hold their last command forever, and the
trajectory controller its last point, so this backend is the deadman. The safe state is
*hold*: the measured joint positions are sent once as the target (to a velocity
controller, zero; the arm stops where it is; gravity is the robot's business) and nothing
more is sent. It is entered when commands stop for ``command_timeout`` (2.5 periods), when
joint states go stale, on :meth:`safe`, and latched on :meth:`estop`.

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
from typing import Any, ClassVar

import numpy as np
from builtin_interfaces.msg import Duration as DurationMsg
from rclpy.duration import Duration as RclDuration
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64, Float64MultiArray
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

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
from sim2real.sim.arm.joint_ik import within_reach
from sim2real.sim.core.deployment import Measurements
from sim2real.sim.core.errors import ConfigError

VELOCITY_TRACKING_GAIN = 10.0
"""1/s: how fast a velocity controller's stream pulls the arm back onto the interpolated
targets (an error of 1 mrad adds 10 mrad/s; the segment's own velocity is fed forward)."""
VELOCITY_ACK_TIMEOUT = 0.5
"""s: how long closing waits for the velocity controller to acknowledge the hold's zero."""


class Ros2ControlArm(RobotBackend):
    """The arm through ros2_control (``backend: ros2_control``)."""

    protocol = "ROS 2 ros2_control (franka_ros2): joint_state_broadcaster, joint_trajectory_controller, franka_gripper"
    state_rate = T.ARM_STATE_RATE  # the arm's stream; each stream's own: stream_rates()
    options_class: ClassVar[type[Ros2ControlArmOptions]] = Ros2ControlArmOptions
    """The options it takes (a subclass's robot: its own, derived from these)."""

    def __init__(self, action_mode: str, options: dict[str, Any] | None = None) -> None:
        super().__init__(action_mode, options)
        if action_mode != "ee_delta":
            raise ConfigError("action_mode", f"the {type(self).__name__} backend drives ee_delta, not {action_mode!r}")
        (self.opt,) = load_options(self.options, [(self.options_class, "")], self.options_class.robot_label)
        self.stock = self.opt.topology == "franka_ros2"
        self.command_interface: T.CommandInterface = "trajectory" if self.stock else "position"
        """How the arm's targets reach its controller (:data:`~.topics.CommandInterface`)."""
        self.command_topic = T.TRAJECTORY if self.stock else T.POSITION_COMMANDS
        """Where the arm's targets go (both set again by :meth:`_configure_robot` for another driver)."""
        self.gripper_states = f"{self.opt.gripper_node}/joint_states"
        self._fingers: tuple[float, np.ndarray] | None = None
        """Arrival (monotonic s) and positions of the latest finger state (franka_gripper's stream)."""
        self._width_sent: float | None = None
        self._next_read = -np.inf
        self._configure_robot()
        self._control = threading.RLock()
        """Phase changes, targets and publishing: command(), the streaming thread, safe()."""
        self._ros: T.RosThread | None = None
        self._stream: threading.Thread | None = None
        self._stop = threading.Event()
        self._counts: dict[str, int] = {"states": 0, "gripper_states": 0, "commands": 0, "commands_ignored": 0,
                                        "commands_invalid": 0, "targets_sent": 0, "gripper_sent": 0, "holds": 0,
                                        "internal_errors": 0, "states_skipped": 0}
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

    def _configure_robot(self) -> None:
        """The arm's joints, kinematics and limits: a Franka's under franka_ros2 here; a
        subclass for another arm behind ros2_control sets its own."""
        self.arm_names = T.arm_joint_names(self.opt.arm_id)
        self.finger_names = T.finger_joint_names(self.opt.arm_id)
        self.names = (*self.arm_names, *self.finger_names)
        self.dof = len(self.arm_names)
        self._delta_max = C.JOINT_DELTA_MAX
        self._fk = ArmKinematics()  # the executor thread's
        self._ik = ArmKinematics()  # command()'s
        self._q_cmd = C.HOME_QPOS.copy()
        self._posture = C.HOME_QPOS.copy()

    def _make_endpoints(self, node: Any) -> None:
        """The robot's topics on ``node``: ``self._pub_q`` (the arm's joint targets) and
        the state subscriptions."""
        if self.stock:
            self._pub_q = node.create_publisher(JointTrajectory, T.TRAJECTORY, T.controller_qos())
            node.create_subscription(JointState, T.ARM_STATES, self._on_arm_states, T.state_qos())
            if self.opt.gripper:
                self._pub_grip = node.create_publisher(Float64, T.GRIPPER_WIDTH, T.controller_qos())
                node.create_subscription(JointState, self.gripper_states, self._on_gripper_states, T.state_qos())
        else:
            self._pub_q = node.create_publisher(Float64MultiArray, T.POSITION_COMMANDS, T.controller_qos())
            self._pub_grip = node.create_publisher(Float64MultiArray, T.GRIPPER_COMMANDS, T.controller_qos())
            node.create_subscription(JointState, T.JOINT_STATES, self._on_joint_states, T.state_qos())

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
            self._make_endpoints(ros.node)
            self._ros = ros
        with self._lock:
            self._latest = None
        self._width_sent = None
        end = time.monotonic() + timeout
        while self.state() is None and time.monotonic() < end:
            time.sleep(0.01)
        if self.state() is None:
            refused = {k: n - before.get(k, 0) for k, n in self._counts.items()
                       if k.startswith("refused_") and n > before.get(k, 0)}
            self._set_phase(Phase.DISCONNECTED)
            raise HardwareError(f"no valid {' + '.join(self.stream_rates())} with joints {list(self.names)} in "
                                f"{timeout:.1f} s (refused: {refused or 'none'})")
        self._stop.clear()
        self._stream = threading.Thread(target=self._stream_loop, name="ros2_control_arm_stream", daemon=True)
        self._stream.start()
        self._set_phase(Phase.CONNECTED)

    def enable(self) -> None:
        with self._control:
            self._still_connected()
            if self._ros is None:
                raise HardwareError("cannot enable: not connected")
        # A fresh state is required, not an instant one: one late joint_states message on a
        # busy host (seen once in a full test run) must not refuse the enable outright.
        end = time.monotonic() + self.opt.controller_wait
        while self._fresh_state() is None and time.monotonic() < end:
            time.sleep(0.005)
        if self._fresh_state() is None:
            raise HardwareError(f"no fresh joint states (none newer than {self.opt.state_timeout} s "
                                f"within {self.opt.controller_wait:g} s)")
        while self._pub_q.get_subscription_count() == 0 and time.monotonic() < end:
            time.sleep(0.02)
        if self._pub_q.get_subscription_count() == 0:
            topic = self.command_topic
            raise HardwareError(f"nothing subscribes {topic}: is {topic.split('/')[0]} loaded and active "
                                "(docs/hardware.md)?")
        # The target is taken from a fresh state under the lock; one that aged while the
        # controller was looked for is waited for again within the same deadline (a busy
        # host: 1 of ~1500 tests refused), never accepted stale.
        while True:
            with self._control:
                self._still_connected()
                m = self._fresh_state()
                if m is not None and m.joint_pos is not None and m.ee_pos is not None and m.ee_quat is not None:
                    q = m.joint_pos[:self.dof].copy()
                    self._q_cmd, self._posture = q.copy(), q.copy()
                    self._target_pos, self._target_quat = m.ee_pos.copy(), m.ee_quat.copy()
                    self._segment = None
                    self._generation += 1
                    self._send_rest(q)  # the controller's target becomes where the arm is: no jump
                    self._last_command = time.monotonic()
                    self._set_phase(Phase.ENABLED)
                    return
            if time.monotonic() >= end:
                raise HardwareError("joint states went stale while enabling")
            time.sleep(0.005)

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
        q_meas = m.joint_pos[:self.dof]
        q_new = self._ik.step(q_cmd, pos[0], quat[0], dt, posture)
        q_new = within_reach(q_new, q_meas, self._delta_max)
        with self._control:
            if self._phase != Phase.ENABLED or generation != self._generation:
                self._counts["commands_ignored"] += 1  # held (or enabled again) meanwhile
                return
            now = time.monotonic()
            self._target_pos, self._target_quat = pos[0], quat[0]
            start = self._segment_point(now)
            self._q_cmd = q_new
            self._segment = (now, start, q_new)  # streamed to forward controllers; a hold's reference
            if self.command_interface == "trajectory":
                self._send_trajectory(q_new, self.opt.control_dt)
            self._last_command = now
            self._counts["commands"] += 1
            self._send_width(float(np.clip(v[6], 0.0, C.GRIP_WIDTH_MAX)))

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
        # The velocity controller keeps the last velocity forever: the hold's zero must have
        # reached it before this node goes (reliable delivery, acknowledged).
        if (self._ros is not None and self.command_interface == "velocity"
                and not self._pub_q.wait_for_all_acked(RclDuration(seconds=VELOCITY_ACK_TIMEOUT))):
            self._counts["zero_unacknowledged"] = self._counts.get("zero_unacknowledged", 0) + 1
        if self._ros is not None:
            self._ros.close()
            self._ros = None

    # -- holding and streaming -------------------------------------------------------------
    def _hold(self, reason: str) -> None:
        """The safe state: the measured joints (or, without fresh state, the target
        being streamed, where the arm is heading) sent once as the target, or to a
        velocity controller a zero velocity; then silence."""
        now = time.monotonic()
        m = self._fresh_state()
        q = m.joint_pos[:self.dof] if m is not None and m.joint_pos is not None else self._segment_point(now)
        self._segment = None
        self._generation += 1
        self._send_rest(q)
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
            elif (m := self._fresh_state()) is None or m.joint_pos is None:
                self._hold("joint states stale")
            elif self.command_interface == "velocity":  # every tick: the tracking term changes
                self._send_velocity(self._tracking_velocity(now, m.joint_pos[:self.dof]))
                if self._segment is not None and now - self._segment[0] >= self.opt.control_dt:
                    self._segment = None
            elif self._segment is not None:
                if self.command_interface == "position":  # the trajectory controller interpolates on its own
                    self._send_q(self._segment_point(now))
                if now - self._segment[0] >= self.opt.control_dt:
                    self._segment = None

    def _tracking_velocity(self, now: float, q_meas: np.ndarray) -> np.ndarray:
        """For a velocity controller: the interpolated segment's velocity plus a pull
        toward where the segment is now (without it the arm drifts off the targets),
        within the joints' velocity limits; zero feed-forward once the segment ended."""
        q_ref = self._segment_point(now)
        feed = np.zeros(self.dof)
        if self._segment is not None and now - self._segment[0] < self.opt.control_dt:
            feed = (self._segment[2] - self._segment[1]) / self.opt.control_dt
        pull = VELOCITY_TRACKING_GAIN * (q_ref - q_meas)
        limit = self._delta_max / self.opt.control_dt
        return np.clip(feed + pull, -limit, limit)

    def _send_rest(self, q: np.ndarray) -> None:
        """The arm at rest at ``q``: that position as the target (to a trajectory
        controller, a point one stream period ahead), or to a velocity controller zero."""
        if self.command_interface == "velocity":
            self._send_velocity(np.zeros(self.dof))
        else:
            self._send_q(q)

    def _send_velocity(self, v: np.ndarray) -> None:
        self._send(self._pub_q, Float64MultiArray(data=[float(x) for x in v]), "targets_sent")

    def _send_q(self, q: np.ndarray) -> None:
        """``q`` as the arm's target now: a forward command, or a trajectory point one
        stream period ahead (the trajectory controller interpolates from where it is)."""
        if self.command_interface == "trajectory":
            self._send_trajectory(q, 1.0 / self.opt.command_rate_hz)
        else:
            self._send(self._pub_q, Float64MultiArray(data=[float(x) for x in q]), "targets_sent")

    def _send_trajectory(self, q: np.ndarray, seconds: float) -> None:
        """One point ``seconds`` ahead, positions only: the controller starts it on arrival
        (a zero header stamp) from its current state and interpolates at its own rate."""
        point = JointTrajectoryPoint(positions=[float(x) for x in q])
        point.time_from_start = DurationMsg(sec=int(seconds), nanosec=int(round((seconds % 1.0) * 1e9)))
        self._send(self._pub_q, JointTrajectory(joint_names=list(self.arm_names), points=[point]), "targets_sent")

    def _send_width(self, width: float) -> None:
        """The gripper's width, sent when it changes (the gripper runs its own moves at
        its own pace: franka_gripper's actions in the relay); never without a gripper."""
        if not self.opt.gripper or (self._width_sent is not None and abs(width - self._width_sent) < 1e-3):
            return
        self._width_sent = width
        msg = Float64(data=width) if self.stock else Float64MultiArray(data=[width])
        self._send(self._pub_grip, msg, "gripper_sent")

    def _send(self, pub: Any, msg: Any, counter: str) -> None:
        if self._ros is None or not self._ros.context.ok():
            return
        pub.publish(msg)
        self._counts[counter] += 1

    # -- state --------------------------------------------------------------------------
    def _fresh_state(self) -> Measurements | None:
        m = self.state()
        return m if m is not None and self._state_age(m) <= self.opt.state_timeout else None

    def _skip(self, now: float) -> bool:
        """Whether a joint state arriving at ``now`` is skipped: read at most one per
        ``1 / read_rate_hz`` on a schedule (a 1 kHz stream: every 4th message; a stream
        at the read rate: every message, its jitter forgiven up to a period)."""
        if now < self._next_read:
            self._counts["states_skipped"] += 1
            return True
        period = 1.0 / self.opt.read_rate_hz
        self._next_read = max(self._next_read, now - period) + period
        return False

    def _arrived(self, msg: JointState) -> None:
        # The controller manager stamps each update on the robot's clock (chrony/PTP-synced
        # with this host on a real robot): arrival minus stamp is the link's delay.
        self._delays.append(time.time() - (msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9))
        del self._delays[:-200]

    def _refused(self, exc: Refused) -> None:
        key = f"refused_{exc.reason}"
        self._counts[key] = self._counts.get(key, 0) + 1

    def _on_joint_states(self, msg: JointState) -> None:
        """``merged``: all 9 joints in one message."""
        now = time.monotonic()
        if self._skip(now):
            return None
        self._arrived(msg)
        try:
            pos, vel, eff = reorder([str(n) for n in msg.name], msg.position, msg.velocity, msg.effort, self.names)
        except Refused as exc:
            return self._refused(exc)
        return self._publish_state(now, pos, vel, eff, {})

    def _on_gripper_states(self, msg: JointState) -> None:
        """franka_gripper's fingers (each half the width), kept for the next arm state."""
        try:
            pos, _, _ = reorder([str(n) for n in msg.name], msg.position, msg.velocity, msg.effort,
                                self.finger_names)
        except Refused as exc:
            return self._refused(exc)
        self._counts["gripper_states"] += 1
        self._fingers = (time.monotonic(), pos)
        return None

    def _on_arm_states(self, msg: JointState) -> None:
        """``franka_ros2``: the 7 arm joints, joined with the latest fingers. A missing or
        stale finger stream (older than ``gripper_state_timeout``) refuses the state: it
        ages, and the staleness check holds the arm."""
        now = time.monotonic()
        if self._skip(now):
            return None
        self._arrived(msg)
        try:
            pos, vel, eff = reorder([str(n) for n in msg.name], msg.position, msg.velocity, msg.effort,
                                    self.arm_names)
        except Refused as exc:
            return self._refused(exc)
        stamps = {T.ARM_STATES: now}
        if not self.opt.gripper:
            fingers = np.full(2, self.opt.width_without_gripper / 2)
        elif self._fingers is None or now - self._fingers[0] > self.opt.gripper_state_timeout:
            return self._refused(Refused("gripper_stale", f"no {self.gripper_states} for "
                                                          f"{self.opt.gripper_state_timeout} s"))
        else:
            stamps[self.gripper_states] = self._fingers[0]
            fingers = self._fingers[1]
        return self._publish_state(now, np.r_[pos, fingers], np.r_[vel, 0.0, 0.0],
                                   None if eff is None else np.r_[eff, 0.0, 0.0], stamps)

    def _publish_state(self, now: float, pos: np.ndarray, vel: np.ndarray, eff: np.ndarray | None,
                       stamps: dict[str, float]) -> None:
        try:
            ee_pos, ee_quat = self._fk.forward(pos[:self.dof])
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
                                       stamps={"joint_states": now, "ee_pose": now, "ee_pose_desired": now,
                                               **stamps}))
        except Exception:
            self._counts["internal_errors"] += 1

    def stream_rates(self) -> dict[str, float]:
        """Each state stream's nominal rate, keyed as its arrivals are in
        :attr:`Measurements.stamps` (``joint_states``: the arm's stream)."""
        arm = min(self.opt.arm_state_rate_hz, self.opt.read_rate_hz)  # what is read of it
        if not self.stock:
            return {T.JOINT_STATES: arm}
        rates = {T.ARM_STATES: arm}
        if self.opt.gripper:
            rates[self.gripper_states] = self.opt.gripper_state_rate_hz
        return rates

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
