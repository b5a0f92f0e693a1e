"""What every ros2_control-like emulator shares (the Franka's under franka_ros2, the UR's
under ur_robot_driver): the controller manager's real-time loop over the simulated arm,
kept in step with the wall clock (:class:`ControllerManagerEmulator`), joint states
stamped as the controller manager stamps its update, and forward commands checked as
ros2_control's forward controllers check them."""

from __future__ import annotations

import abc
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from rclpy.clock import Clock
from rclpy.duration import Duration
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray
from trajectory_msgs.msg import JointTrajectory

from sim2real.hardware.emulator.base import Emulator
from sim2real.hardware.emulator.faults import SAMPLED
from sim2real.hardware.realtime import EMULATOR_PRIORITY, FIRST_CPU, realtime_thread
from sim2real.hardware.ros2_control import topics as T
from sim2real.hardware.timing import PeriodicSchedule, TimingRecord
from sim2real.sim.core.deployment import Measurements


class SimClock:
    """Physics steps a real-time loop owes the wall clock. When a tick is late the
    simulation catches up by at most ``catch_up`` steps and forgives the rest (it then
    runs slower than the wall clock instead of racing it); :attr:`overruns` counts those
    ticks."""

    def __init__(self, physics_dt: float, start: float, catch_up: int = 10) -> None:
        self.physics_dt = physics_dt
        self.catch_up = catch_up
        self._start = start
        self._stepped = 0
        self.overruns = 0

    def due(self, now: float) -> int:
        """Steps to run now (the caller runs them all)."""
        due = int((now - self._start) / self.physics_dt) - self._stepped
        if due > self.catch_up:
            self.overruns += 1
            self._start += (due - self.catch_up) * self.physics_dt
            due = self.catch_up
        due = max(due, 0)
        self._stepped += due
        return due


def joint_state_message(names: Sequence[str], frame: Measurements, now: float, clock: Clock) -> JointState:
    """``frame``'s first ``len(names)`` joints as a ``sensor_msgs/JointState``, stamped when
    it was sampled (a fault-delayed frame arrives with an old stamp, which is what the
    pre-flight check's latency reads), as the controller manager stamps its update."""
    assert frame.joint_pos is not None and frame.joint_vel is not None
    n = len(names)
    msg = JointState()
    age = Duration(seconds=max(now - frame.stamps.get(SAMPLED, now), 0.0))
    msg.header.stamp = (clock.now() - age).to_msg()
    msg.name = list(names)
    msg.position = [float(x) for x in frame.joint_pos[:n]]
    msg.velocity = [float(x) for x in frame.joint_vel[:n]]
    msg.effort = [] if frame.joint_effort is None else [float(x) for x in frame.joint_effort[:n]]
    return msg


def forward_command(msg: Float64MultiArray, size: int) -> np.ndarray | str:
    """A forward controller's command as an array, or why it is refused: the wrong length
    (ros2_control's forward controllers ignore it) or a non-finite value (the robots'
    hardware interfaces refuse it)."""
    q = np.asarray(msg.data, dtype=np.float64)
    if q.shape != (size,):
        return "forward_size"
    if not np.all(np.isfinite(q)):
        return "forward_non_finite"
    return q


def trajectory_command(msg: JointTrajectory, names: Sequence[str]) -> tuple[np.ndarray, np.ndarray] | str:
    """A joint trajectory controller's goal as ``(times, points)`` in ``names``' order, or
    why it is refused: other joints, a point of the wrong size or not finite, times not
    increasing from 0 (joint_trajectory_controller refuses each)."""
    given = list(msg.joint_names)
    if sorted(given) != sorted(names):
        return "trajectory_joints"
    order = [given.index(n) for n in names]
    times: list[float] = []
    points: list[np.ndarray] = []
    for p in msg.points:
        t = p.time_from_start.sec + 1e-9 * p.time_from_start.nanosec
        q = np.asarray(p.positions, dtype=np.float64)
        if q.shape != (len(names),) or not np.all(np.isfinite(q)):
            return "trajectory_point"
        if t <= (times[-1] if times else 0.0):
            return "trajectory_time"
        times.append(t)
        points.append(q[order])
    return np.array(times), np.array(points).reshape(-1, len(names))


class ControllerManagerEmulator(Emulator):
    """The loop an emulated ros2_control arm runs: its node on a ROS thread of its own, a
    real-time tick at ``state_rate_hz`` that steps the physics the wall clock owes
    (:class:`SimClock`) and publishes the driver's streams (:meth:`_tick`), and its end."""

    physics_dt: float
    """s of one physics step of the emulated arm's model."""

    def _start_ros(self, node_name: str, loop_name: str, domain_id: int | None, namespace: str,
                   state_rate_hz: float) -> None:
        self.loop_name = loop_name
        self.state_rate_hz = state_rate_hz
        self._started = time.monotonic()
        self._closed = False
        self._idle = threading.Event()
        self._idle.set()
        self.domain = T.domain_id({} if domain_id is None else {"domain_id": domain_id})
        self.ros = T.RosThread(node_name, self.domain, namespace,
                               realtime=(f"{loop_name} executor", EMULATOR_PRIORITY - 1))
        self.timing = TimingRecord(1.0 / state_rate_hz, capacity=50_000)
        """When each real-time tick ran, and how late."""
        self.realtime: dict[str, Any] = {}
        """The real-time loop's scheduling (:class:`~sim2real.hardware.realtime.RealtimeStatus`)."""
        self.counters: dict[str, int] = {"ticks": 0, "states_published": 0, "overruns": 0, "physics_steps": 0}

    @abc.abstractmethod
    def _tick(self, now: float, due: int) -> None:
        """One tick of the loop: ``due`` physics steps (maybe 0), then the streams."""

    def serve(self, duration: float = 0.0, should_stop: Callable[[], bool] | None = None) -> None:
        """Step the arm in real time and publish its streams at ``state_rate_hz``. Physics
        keeps pace with the wall clock; when a tick is late the simulation catches up by
        at most 10 physics steps and the overrun is counted."""
        self._idle.clear()
        try:
            with realtime_thread(self.loop_name, EMULATOR_PRIORITY, FIRST_CPU) as status:
                self.realtime = status.as_dict()
                schedule = PeriodicSchedule(1.0 / self.state_rate_hz, self.timing)
                start = schedule.next
                clock = SimClock(self.physics_dt, start)
                while not self._closed and not (should_stop is not None and should_stop()):
                    now = schedule.sleep()
                    if duration > 0 and now - start >= duration:
                        return
                    due = clock.due(now)
                    self.counters["overruns"] = clock.overruns
                    self._tick(now, due)
                    self.counters["ticks"] += 1
                    schedule.tick(now)
        finally:
            self._idle.set()

    def loop_summary(self) -> dict[str, Any]:
        """The counters and the loop's timing, for :meth:`summary`."""
        elapsed = max(time.monotonic() - self._started, 1e-9)
        return {**self.counters, "state_rate_hz": round(self.counters["states_published"] / elapsed, 1),
                "tick_timing": self.timing.summary(), "realtime": self.realtime}

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._idle.wait(timeout=2.0)  # serve() returns at its next tick
        self.ros.close()
