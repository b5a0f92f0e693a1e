"""A robot's state streams, subscribed and validated in one place for every node that
reads them (the policy, the safety filter, the console).

Which streams exist is the robot's own description
(:class:`~sim2real.sim.core.deployment.RobotDeployment`): ``joint_states`` when it has
joints, ``odom`` (and ``imu``, for nodes that ask) when it has a floating base,
``ee_pose`` and ``ee_pose_desired`` when it has an end effector, and for nodes that ask,
``ranges/<name>`` per rangefinder (assembled into one ``ranges`` stream that flows only
while every rangefinder is fresh, so one dead sensor stops it). A message that fails
its check (unknown or missing joints, wrong lengths, NaN or inf, an orientation that is
not a rotation, a header stamp further than the node's ``stamp_tolerance`` from its
clock: stale, from the future, or unset) is counted and logged and never reaches the
node.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from typing import Any, Protocol

import numpy as np
from geometry_msgs.msg import PoseStamped
from nav_msgs.msg import Odometry
from sensor_msgs.msg import Imu, JointState, Range

from sim2real.ros_nodes import messages as M
from sim2real.ros_nodes import path_messages as P
from sim2real.ros_nodes.qos import sensor_qos
from sim2real.sim.core.deployment import RobotDeployment


class StreamNode(Protocol):
    """What the streams need of their node: a managed node, or any rclpy node that logs
    throttled (the HIL actor's)."""

    def create_subscription(self, *args: Any, **kwargs: Any) -> Any: ...

    def get_clock(self) -> Any: ...

    def log_throttled(self, key: str, message: str, period: float = 1.0, level: str = "warning") -> None: ...


STAMP_TOLERANCE = 0.5
"""s: the default ``stamp_tolerance`` (:class:`~sim2real.ros_nodes.settings.StateReaderSettings`)."""

RANGE_MAX_AGE = 0.25
"""Seconds a rangefinder's reading may be older than the newest for the ``ranges``
stream to flow."""

StateCallback = Callable[[str, dict[str, np.ndarray | None], Any], None]
"""``(topic, measurement fields, message header)`` of each valid state message."""


class StateStreams:
    """Subscribes the robot's state topics on ``node`` and calls ``on_state`` with each
    valid message's fields (named as :class:`~sim2real.sim.core.deployment.Measurements`
    and :class:`~sim2real.policies.safety.types.SafetyState` name them).

    Args:
        imu: Also subscribe ``imu`` (attitude, body rates and specific force), for a
            floating base.
        ranges: Also subscribe the robot's rangefinders (a path follower's observation).
        on_reject: Called with ``(topic, reason)`` for each refused message, after it is
            counted in :attr:`rejected` and logged (throttled).
    """

    def __init__(self, node: StreamNode, deployment: RobotDeployment, on_state: StateCallback, imu: bool = False,
                 on_reject: Callable[[str, str], None] | None = None, ranges: bool = False) -> None:
        self.node, self.joints, self.on_state, self.on_reject = node, deployment.joints, on_state, on_reject
        ros_node: Any = node  # a managed node declares stamp_tolerance; the HIL actor's node does not
        declared = hasattr(ros_node, "has_parameter") and ros_node.has_parameter("stamp_tolerance")
        self.stamp_tolerance = float(ros_node.get_parameter("stamp_tolerance").value if declared else STAMP_TOLERANCE)
        self.rejected: Counter[str] = Counter()
        """Refused messages per topic."""
        self.subscriptions: list[Any] = []
        """Every subscription made (a watchdog drains them before it judges staleness)."""
        qos = sensor_qos()
        if deployment.joints:
            self._subscribe(JointState, "joint_states", self._on_joints, qos)
        if deployment.floating_base:
            self._subscribe(Odometry, "odom", self._on_odom, qos)
            if imu:
                self._subscribe(Imu, "imu", self._on_imu, qos)
        if deployment.has_ee:
            self._subscribe(PoseStamped, "ee_pose", lambda m: self._on_pose(m, "ee_pose", "ee_pos", "ee_quat"), qos)
            self._subscribe(PoseStamped, "ee_pose_desired",
                                     lambda m: self._on_pose(m, "ee_pose_desired", "ee_pos_desired", "ee_quat_desired"),
                                     qos)
        self.rangefinders = deployment.rangefinders if ranges else ()
        self._ranges = np.full(len(self.rangefinders), np.nan)
        self._range_arrivals = np.full(len(self.rangefinders), -np.inf)
        for i, name in enumerate(self.rangefinders):
            self._subscribe(Range, f"ranges/{name}", self._range_callback(i), qos)

    def _subscribe(self, msg_type: Any, topic: str, callback: Any, qos: Any) -> None:
        self.subscriptions.append(self.node.create_subscription(msg_type, topic, callback, qos))

    def _reject(self, topic: str, reason: str) -> None:
        self.rejected[topic] += 1
        self.node.log_throttled(topic + reason[:16], f"rejected {topic}: {reason}", level="error")
        if self.on_reject is not None:
            self.on_reject(topic, reason)

    def _misdated(self, topic: str, header: Any) -> bool:
        """Refuse (and say so) a message stamped too far from the node's clock: ROS time, or
        the simulation clock with ``use_sim_time``, as the sender stamps it."""
        offset = self.node.get_clock().now().nanoseconds * 1e-9 - M.stamp_to_sec(header.stamp)
        if abs(offset) <= self.stamp_tolerance:
            return False
        what = f"{offset:.3f} s old" if offset > 0 else f"{-offset:.3f} s in the future"
        self._reject(topic, f"stamped {what} (tolerance {self.stamp_tolerance} s; unsynchronised clocks or a "
                            "replayed or unstamped message)")
        return True

    def _on_joints(self, msg: JointState) -> None:
        if self._misdated("joint_states", msg.header):
            return
        parsed = M.parse_joint_state(msg, self.joints)
        if isinstance(parsed, str):
            return self._reject("joint_states", parsed)
        pos, vel, effort = parsed
        self.on_state("joint_states", {"joint_pos": pos, "joint_vel": vel, "joint_effort": effort}, msg.header)

    def _on_odom(self, msg: Odometry) -> None:
        if self._misdated("odom", msg.header):
            return
        parsed = M.parse_odometry(msg)
        if isinstance(parsed, str):
            return self._reject("odom", parsed)
        pos, quat, lin_vel, ang_vel = parsed
        self.on_state("odom", {"base_pos": pos, "base_quat": quat, "base_lin_vel": lin_vel, "base_ang_vel": ang_vel},
                      msg.header)

    def _on_imu(self, msg: Imu) -> None:
        if self._misdated("imu", msg.header):
            return
        parsed = M.parse_imu(msg)
        if isinstance(parsed, str):
            return self._reject("imu", parsed)
        quat, rates, accel = parsed
        self.on_state("imu", {"base_quat": quat, "base_ang_vel": rates, "base_lin_acc": accel}, msg.header)

    def _range_callback(self, index: int) -> Callable[[Range], None]:
        return lambda msg: self._on_range(index, msg)

    def _on_range(self, index: int, msg: Range) -> None:
        if self._misdated(f"ranges/{self.rangefinders[index]}", msg.header):
            return
        parsed = P.parse_range(msg)
        if isinstance(parsed, str):
            return self._reject(f"ranges/{self.rangefinders[index]}", parsed)
        now = time.monotonic()
        self._ranges[index], self._range_arrivals[index] = parsed, now
        if np.all(now - self._range_arrivals <= RANGE_MAX_AGE):
            self.on_state("ranges", {"ranges": self._ranges.copy()}, msg.header)

    def _on_pose(self, msg: PoseStamped, topic: str, pos_field: str, quat_field: str) -> None:
        if self._misdated(topic, msg.header):
            return
        parsed = M.parse_pose(msg.pose)
        if isinstance(parsed, str):
            return self._reject(topic, parsed)
        self.on_state(topic, {pos_field: parsed[0], quat_field: parsed[1]}, msg.header)
