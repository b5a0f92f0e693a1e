"""The hierarchy's messages: the planner's path (``nav_msgs/Path``, each pose's z the
height the robot may have there) and the robot's rangefinders (one ``sensor_msgs/Range``
per rangefinder on ``ranges/<name>``, REP 117's conventions for out-of-range readings).
Each parser returns the values or the reason the message is refused (fail closed)."""

from __future__ import annotations

import math

import numpy as np
from builtin_interfaces.msg import Time
from nav_msgs.msg import Path
from sensor_msgs.msg import Range

from sim2real.ros_nodes.messages import pose_stamped

MAX_PATH_POSES = 5000
"""A longer path is refused (a 5 cm grid across a 250 m building)."""


def path(waypoints: np.ndarray, stamp: Time, frame: str = "odom") -> Path:
    """``waypoints [K, 3]`` (x, y, allowed height) as a path in ``frame``."""
    msg = Path()
    msg.header.stamp = stamp
    msg.header.frame_id = frame
    identity = np.array([1.0, 0.0, 0.0, 0.0])
    msg.poses = [pose_stamped(np.asarray(w, dtype=float), identity, stamp, frame) for w in waypoints]
    return msg


def parse_path(msg: Path, frame: str = "odom") -> np.ndarray | str:
    """``[K, 3]`` waypoints, or why the path is refused: empty, too long, in another
    frame than the odometry's, or with non-finite values."""
    if msg.header.frame_id != frame:
        return f"path in frame {msg.header.frame_id!r}, not the odometry's {frame!r}"
    if not msg.poses:
        return "empty path"
    if len(msg.poses) > MAX_PATH_POSES:
        return f"{len(msg.poses)} poses (at most {MAX_PATH_POSES})"
    out = np.array([[p.pose.position.x, p.pose.position.y, p.pose.position.z] for p in msg.poses])
    if not np.all(np.isfinite(out)):
        return "non-finite waypoint"
    return out


def range_reading(value: float, stamp: Time, frame: str, max_range: float, min_range: float = 0.02) -> Range:
    """One rangefinder's reading; beyond ``max_range`` it is +inf (REP 117: no return)."""
    msg = Range()
    msg.header.stamp = stamp
    msg.header.frame_id = frame
    msg.radiation_type = Range.INFRARED
    msg.field_of_view = 0.05
    msg.min_range, msg.max_range = float(min_range), float(max_range)
    msg.range = float(value) if value < max_range else math.inf
    return msg


def parse_range(msg: Range) -> float | str:
    """The distance (m): +inf (nothing within range) reads as the maximum range, -inf (too
    close to measure) as the minimum, as the simulated sensors read; NaN is refused."""
    if not (math.isfinite(msg.max_range) and math.isfinite(msg.min_range)) or msg.max_range <= msg.min_range:
        return f"invalid limits [{msg.min_range}, {msg.max_range}]"
    if math.isnan(msg.range):
        return "NaN range"
    return float(min(max(msg.range, msg.min_range), msg.max_range))
