"""What every ros2_control-like emulator shares (the Franka's under franka_ros2, the UR's
under ur_robot_driver): the simulated arm kept in step with the wall clock, joint states
stamped as the controller manager stamps its update, and forward commands checked as
ros2_control's forward controllers check them."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from rclpy.clock import Clock
from rclpy.duration import Duration
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray

from sim2real.hardware.emulator.faults import SAMPLED
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
