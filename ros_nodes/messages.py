"""Conversions between ROS 2 messages and numpy, with the checks a deployment needs:
joint names are matched by name (order on the wire may differ), unknown or missing
names and arrays whose length differs from the names are rejected with a reason.

Quaternions are (w, x, y, z) in numpy (MuJoCo's order) and (x, y, z, w) in messages.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from builtin_interfaces.msg import Time
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from geometry_msgs.msg import Pose, PoseStamped, Twist
from nav_msgs.msg import Odometry
from sensor_msgs.msg import Imu, JointState
from std_msgs.msg import Float64MultiArray, MultiArrayDimension

from sim2real.sim.core.frames import rotation


def stamp_to_sec(stamp: Time) -> float:
    return stamp.sec + 1e-9 * stamp.nanosec


def sec_to_stamp(t: float) -> Time:
    ns = int(round(t * 1e9))
    return Time(sec=ns // 1_000_000_000, nanosec=ns % 1_000_000_000)


# -- joint states -----------------------------------------------------------------------
def joint_state(names: Sequence[str], pos: np.ndarray, vel: np.ndarray, effort: np.ndarray | None, stamp: Time,
                frame: str = "") -> JointState:
    msg = JointState()
    msg.header.stamp = stamp
    msg.header.frame_id = frame
    msg.name = list(names)
    msg.position = [float(x) for x in pos]
    msg.velocity = [float(x) for x in vel]
    msg.effort = [] if effort is None else [float(x) for x in effort]
    return msg


def parse_joint_state(
    msg: JointState, expected: Sequence[str]
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None] | str:
    """``(position, velocity, effort or None)`` in ``expected`` order, or the reason the
    message is rejected. Extra joints (e.g. fingers) are allowed when the caller lists
    them in ``expected``; anything else is an unknown joint."""
    names = list(msg.name)
    n = len(names)
    if names == list(expected) and len(msg.position) == n and len(msg.velocity) == n \
            and len(msg.effort) in (0, n):
        # The common case, on the control path: every joint, in order (no reordering).
        pos = np.array(msg.position, dtype=np.float64)
        vel = np.array(msg.velocity, dtype=np.float64)
        if not math.isfinite(float(np.add.reduce(pos)) + float(np.add.reduce(vel))):
            return "non-finite joint position or velocity"
        return pos, vel, np.array(msg.effort, dtype=np.float64) if len(msg.effort) else None
    unknown = [n for n in names if n not in expected]
    if unknown:
        return f"unknown joint names {unknown} (expected {list(expected)})"
    missing = [n for n in expected if n not in names]
    if missing:
        return f"missing joints {missing}"
    if len(set(names)) != len(names):
        return "duplicate joint names"
    for field, required in (("position", True), ("velocity", True), ("effort", False)):
        n = len(getattr(msg, field))
        if (required or n) and n != len(names):
            return f"wrong length: {field} has {n} values for {len(names)} joint names"
    order = [names.index(n) for n in expected]
    pos = np.asarray(msg.position, dtype=np.float64)[order]
    vel = np.asarray(msg.velocity, dtype=np.float64)[order]
    eff = np.asarray(msg.effort, dtype=np.float64)[order] if len(msg.effort) else None
    if not (np.all(np.isfinite(pos)) and np.all(np.isfinite(vel))):
        return "non-finite joint position or velocity"
    return pos, vel, eff


# -- poses and odometry -----------------------------------------------------------------
def set_pose(pose: Pose, pos: np.ndarray, quat_wxyz: np.ndarray) -> None:
    pose.position.x, pose.position.y, pose.position.z = (float(v) for v in pos)
    w, x, y, z = (float(v) for v in quat_wxyz)
    pose.orientation.w, pose.orientation.x, pose.orientation.y, pose.orientation.z = w, x, y, z


def pose_arrays(pose: Pose) -> tuple[np.ndarray, np.ndarray]:
    p, q = pose.position, pose.orientation
    return np.array([p.x, p.y, p.z]), np.array([q.w, q.x, q.y, q.z])


MAX_MAGNITUDE = 1e6
"""A position (m), velocity (m/s) or rate (rad/s) beyond this is a corrupt frame, not a
measurement: finite values of 1e155 passed every check before."""


def plausible(*arrays: np.ndarray) -> bool:
    """Every value finite and within :data:`MAX_MAGNITUDE`."""
    # One reduction over every value: NaN and inf fail the comparison as a huge value does.
    # It runs on every state message (the Go2's 600 a second, in the filter and the policy).
    values = np.concatenate([np.ravel(a) for a in arrays]) if arrays else np.empty(0)
    return values.size == 0 or bool(np.abs(values).max() <= MAX_MAGNITUDE)


def unit_quaternion(quat: np.ndarray) -> np.ndarray | None:
    """``quat`` normalised, or ``None`` when it is no rotation: not finite, or its norm
    not within 0.5-1.5 (a sensor sends unit quaternions). The norm is computed without
    overflow (``math.hypot``): components of 1e155 gave an infinite norm and then a zero
    quaternion that every check accepted."""
    if not np.all(np.isfinite(quat)):
        return None
    norm = math.hypot(*(float(v) for v in quat))
    return quat / norm if 0.5 < norm < 1.5 else None


def parse_pose(pose: Pose) -> tuple[np.ndarray, np.ndarray] | str:
    """``(pos, quat wxyz)`` with the quaternion normalised, or the reason it is rejected
    (non-finite or implausible values, an orientation that is not a rotation)."""
    pos, quat = pose_arrays(pose)
    unit = unit_quaternion(quat)
    if unit is None or not plausible(pos):
        return "non-finite pose or invalid orientation"
    return pos, unit


def pose_stamped(pos: np.ndarray, quat_wxyz: np.ndarray, stamp: Time, frame: str = "world") -> PoseStamped:
    msg = PoseStamped()
    msg.header.stamp = stamp
    msg.header.frame_id = frame
    set_pose(msg.pose, pos, quat_wxyz)
    return msg


def rotate_to_body(quat_wxyz: np.ndarray, v_world: np.ndarray) -> np.ndarray:
    return rotation(quat_wxyz).T @ v_world



def odometry(pos: np.ndarray, quat: np.ndarray, lin_vel_world: np.ndarray, ang_vel_body: np.ndarray, stamp: Time,
             frame: str = "odom", child: str = "base_link") -> Odometry:
    """REP 105 odometry: pose in ``frame``, twist in the body frame ``child``."""
    msg = Odometry()
    msg.header.stamp = stamp
    msg.header.frame_id = frame
    msg.child_frame_id = child
    set_pose(msg.pose.pose, pos, quat)
    v = rotate_to_body(quat, lin_vel_world)
    t = msg.twist.twist
    t.linear.x, t.linear.y, t.linear.z = (float(x) for x in v)
    t.angular.x, t.angular.y, t.angular.z = (float(x) for x in ang_vel_body)
    return msg


def parse_odometry(msg: Odometry) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | str:
    """``(pos, quat, lin_vel_world, ang_vel_body)`` or the reason it is rejected."""
    pos, quat = pose_arrays(msg.pose.pose)
    t = msg.twist.twist
    v_body = np.array([t.linear.x, t.linear.y, t.linear.z])
    w_body = np.array([t.angular.x, t.angular.y, t.angular.z])
    unit = unit_quaternion(quat)
    if unit is None or not plausible(pos, v_body, w_body):
        return "non-finite odometry or invalid orientation"
    return pos, unit, rotation(unit) @ v_body, w_body


def imu(quat: np.ndarray, ang_vel_body: np.ndarray, lin_acc_body: np.ndarray, stamp: Time,
        frame: str = "imu_link") -> Imu:
    msg = Imu()
    msg.header.stamp = stamp
    msg.header.frame_id = frame
    w, x, y, z = (float(v) for v in quat)
    msg.orientation.w, msg.orientation.x, msg.orientation.y, msg.orientation.z = w, x, y, z
    msg.angular_velocity.x, msg.angular_velocity.y, msg.angular_velocity.z = (float(v) for v in ang_vel_body)
    msg.linear_acceleration.x, msg.linear_acceleration.y, msg.linear_acceleration.z = (float(v) for v in lin_acc_body)
    return msg


def parse_imu(msg: Imu) -> tuple[np.ndarray, np.ndarray, np.ndarray | None] | str:
    """``(quat wxyz, ang_vel_body, specific_force_body)`` or the reason it is rejected
    (non-finite values, an orientation that is not a rotation, or none:
    ``orientation_covariance[0] == -1``). The accelerometer is ``None`` when the IMU
    says it has none (``linear_acceleration_covariance[0] == -1``) or it is not finite."""
    o, w, a = msg.orientation, msg.angular_velocity, msg.linear_acceleration
    quat = np.array([o.w, o.x, o.y, o.z])
    rates = np.array([w.x, w.y, w.z])
    if msg.orientation_covariance[0] == -1.0:
        return "the IMU publishes no orientation"
    unit = unit_quaternion(quat)
    if unit is None or not plausible(rates):
        return "non-finite IMU values or invalid orientation"
    accel = np.array([a.x, a.y, a.z])
    if msg.linear_acceleration_covariance[0] == -1.0 or not plausible(accel):
        accel = None
    return unit, rates, accel


# -- commands -----------------------------------------------------------------------------
_LAYOUTS: dict[tuple[str, ...], list[MultiArrayDimension]] = {}


def command_array(values: np.ndarray, labels: Sequence[str] = ()) -> Float64MultiArray:
    """Forward-command-controller style array; ``labels`` (the element names) go into
    the layout so a receiver can check them (built once per label set: hot path)."""
    msg = Float64MultiArray()
    if labels:
        key = tuple(labels)
        if key not in _LAYOUTS:
            _LAYOUTS[key] = [MultiArrayDimension(label=str(n), size=1, stride=1) for n in key]
        msg.layout.dim = _LAYOUTS[key]
    msg.data = [float(v) for v in values]
    return msg


def command_labels(msg: Float64MultiArray) -> list[str]:
    """Element names carried in the layout (empty when the sender gave none)."""
    labels = [d.label for d in msg.layout.dim]
    return labels if any(labels) else []


def driver_command(msg: Float64MultiArray, names: list[str] | tuple[str, ...]) -> tuple[np.ndarray | None, str, str]:
    """What a robot driver accepts on ``command``: ``(values, "", "")``, or ``(None, key,
    reason)`` for a wrong length, element names that differ from ``names`` (when the
    sender labelled them) or non-finite values, so the caller can count and log it."""
    labels = command_labels(msg)
    if len(msg.data) != len(names) or (labels and labels != list(names)):
        reason = f"rejected command: {len(msg.data)} values {labels or ''}, expected {len(names)} ({', '.join(names)})"
        return None, "bad_command", reason
    values = np.asarray(msg.data, dtype=np.float64)
    if not np.all(np.isfinite(values)):
        return None, "nan_command", "rejected command with non-finite values"
    return values, "", ""


def twist(linear: np.ndarray, angular: np.ndarray) -> Twist:
    msg = Twist()
    msg.linear.x, msg.linear.y, msg.linear.z = (float(v) for v in linear)
    msg.angular.x, msg.angular.y, msg.angular.z = (float(v) for v in angular)
    return msg


def twist_arrays(msg: Twist) -> tuple[np.ndarray, np.ndarray]:
    return (np.array([msg.linear.x, msg.linear.y, msg.linear.z]),
            np.array([msg.angular.x, msg.angular.y, msg.angular.z]))


def status_node(status: DiagnosticStatus) -> str:
    """The node that reported ``status``. A node names its status after itself
    (``BaseNode.publish_status``); the ROS convention ``node: part`` and a fully-qualified
    name (``/robot1/safety_filter``) name the same node, so every reader of a node's
    diagnostics finds it in a namespaced graph too."""
    return status.name.split(":")[0].rsplit("/", 1)[-1]


def node_status(msg: DiagnosticArray, node: str) -> tuple[dict[str, str], str] | None:
    """The values and message node ``node`` last reported in ``msg`` (``None``: it
    reported nothing there)."""
    found = None
    for status in msg.status:
        if status_node(status) == node:
            found = ({kv.key: kv.value for kv in status.values}, status.message)
    return found
