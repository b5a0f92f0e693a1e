"""The QoS profiles of the deployment graph (docs/deployment.md has the table).

* sensor data (joint states, IMU, odometry, poses, images): best effort, keep last 1,
  volatile: a late sample is worthless, the newest one replaces it.
* commands: reliable, keep last 1, with a deadline where the robot needs a steady
  stream (the deadline events are counted as misses).
* mission inputs (goal, cmd_vel), diagnostics: reliable; the goal is transient-local
  so a late-joining policy still receives it.
* the e-stop input (``estop``): reliable, keep last 1, transient-local: each source's
  latest state is durable on the wire, so a restarted safety filter learns at once that
  a button is still pressed (:func:`estop_qos`).
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


def observer_qos(depth: int = 200) -> QoSProfile:
    """A reader that must see every message of a command stream (a test's probe, a
    monitor): reliable with a deep history. With ``command_qos``'s depth 1, a reader whose
    thread falls behind on a busy machine is handed only the newest message and the
    earlier ones are silently replaced (measured: a takeover's first 150 ms lost)."""
    return QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=depth, reliability=ReliabilityPolicy.RELIABLE,
                      durability=DurabilityPolicy.VOLATILE)


def mission_qos() -> QoSProfile:
    return QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=1, reliability=ReliabilityPolicy.RELIABLE,
                      durability=DurabilityPolicy.TRANSIENT_LOCAL)


def status_qos() -> QoSProfile:
    return QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=10, reliability=ReliabilityPolicy.RELIABLE,
                      durability=DurabilityPolicy.VOLATILE)


def estop_qos(depth: int = 1) -> QoSProfile:
    """What an e-stop source publishes ``estop`` with: its current state stays available
    to every subscriber that joins later (a restarted safety filter). The filter reads
    both durable and volatile writers (it subscribes twice: a transient-local reader
    does not match a volatile writer, and a volatile one receives no history).

    ``depth``: 1 for a source (its latest state); the filter's reader keeps more, as the
    topic has one DDS instance: with depth 1 a late joiner that receives several
    sources' states at once kept only the newest (measured: one of two buttons lost)."""
    return QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=depth, reliability=ReliabilityPolicy.RELIABLE,
                      durability=DurabilityPolicy.TRANSIENT_LOCAL)
