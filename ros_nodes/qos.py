"""The QoS profiles of the deployment graph (docs/deployment.md has the table).

* sensor data (joint states, IMU, odometry, poses, images): best effort, keep last 1,
  volatile: a late sample is worthless, the newest one replaces it.
* commands: reliable, keep last 1, with a deadline where the robot needs a steady
  stream (the deadline events are counted as misses).
* mission inputs (goal, cmd_vel), e-stop, diagnostics: reliable; the goal is
  transient-local so a late-joining policy still receives it.
"""

from __future__ import annotations

from rclpy.duration import Duration
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy


def sensor_qos() -> QoSProfile:
    return QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=1, reliability=ReliabilityPolicy.BEST_EFFORT,
                      durability=DurabilityPolicy.VOLATILE)


def command_qos(deadline_s: float = 0.0) -> QoSProfile:
    """Reliable keep-last-1; ``deadline_s > 0`` sets the deadline (publisher and
    subscriber must agree: the subscriber's may not be shorter than the publisher's)."""
    q = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=1, reliability=ReliabilityPolicy.RELIABLE,
                   durability=DurabilityPolicy.VOLATILE)
    if deadline_s > 0:
        q.deadline = Duration(nanoseconds=int(deadline_s * 1e9))
    return q


def mission_qos() -> QoSProfile:
    return QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=1, reliability=ReliabilityPolicy.RELIABLE,
                      durability=DurabilityPolicy.TRANSIENT_LOCAL)


def status_qos() -> QoSProfile:
    return QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=10, reliability=ReliabilityPolicy.RELIABLE,
                      durability=DurabilityPolicy.VOLATILE)
