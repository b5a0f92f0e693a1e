"""The robot's state streams, published the same way by every driver node.

The sim bridge (from MuJoCo) and the hardware bridge (from a real robot's backend) both
turn a :class:`~sim2real.sim.core.deployment.Measurements` into the topics the robot's
deployment description names (``joint_states``; ``odom`` and ``imu`` for a floating
base; ``ee_pose`` and ``ee_pose_desired`` for an arm; ``ranges/<name>`` for rangefinders
where the task reads them), with the sensor-data QoS the
policy and the safety filter subscribe with (:mod:`.state_input` reads them back).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from geometry_msgs.msg import PoseStamped
from nav_msgs.msg import Odometry
from sensor_msgs.msg import Imu, JointState, Range

from sim2real.ros_nodes import messages as M
from sim2real.ros_nodes import path_messages as P
from sim2real.ros_nodes.qos import sensor_qos
from sim2real.sim.core.deployment import Measurements, RobotDeployment


class MissingMeasurement(ValueError):
    """A stream the robot's description promises had no value: a driver bug, never a
    reading to publish."""


def _measured(name: str, value: np.ndarray | None) -> np.ndarray:
    if value is None:
        raise MissingMeasurement(f"no {name} in the measurements the driver produced")
    return value


class StatePublishers:
    """One publisher per state stream of ``info`` on ``node``."""

    def __init__(self, node: Any, info: RobotDeployment[Any]) -> None:
        sensor = sensor_qos()
        self.info = info
        self.joints = node.create_publisher(JointState, "joint_states", sensor) if info.joints else None
        self.odom = node.create_publisher(Odometry, "odom", sensor) if info.floating_base else None
        self.imu = node.create_publisher(Imu, "imu", sensor) if info.floating_base else None
        self.ee = node.create_publisher(PoseStamped, "ee_pose", sensor) if info.has_ee else None
        self.ee_desired = node.create_publisher(PoseStamped, "ee_pose_desired", sensor) if info.has_ee else None
        self.ranges = [node.create_publisher(Range, f"ranges/{name}", sensor) for name in info.rangefinders]

    def publish(self, m: Measurements, stamp: Any, specific_force: np.ndarray | None = None) -> None:
        """Every stream of ``m``, stamped ``stamp``; ``specific_force`` is the IMU's
        accelerometer (body frame, m/s^2; None: the IMU message says it has none).

        Raises:
            MissingMeasurement: a stream of the robot without its value.
        """
        if self.joints is not None:
            self.joints.publish(M.joint_state(self.info.joints, _measured("joint_pos", m.joint_pos),
                                              _measured("joint_vel", m.joint_vel), m.joint_effort, stamp))
        if self.odom is not None and self.imu is not None:
            quat, ang_vel = _measured("base_quat", m.base_quat), _measured("base_ang_vel", m.base_ang_vel)
            self.odom.publish(M.odometry(_measured("base_pos", m.base_pos), quat,
                                         _measured("base_lin_vel", m.base_lin_vel), ang_vel, stamp))
            msg = M.imu(quat, ang_vel, np.zeros(3) if specific_force is None else specific_force, stamp)
            if specific_force is None:
                msg.linear_acceleration_covariance[0] = -1.0  # REP 145: no accelerometer reading
            self.imu.publish(msg)
        if self.ee is not None and self.ee_desired is not None:
            self.ee.publish(M.pose_stamped(_measured("ee_pos", m.ee_pos), _measured("ee_quat", m.ee_quat), stamp))
            self.ee_desired.publish(M.pose_stamped(_measured("ee_pos_desired", m.ee_pos_desired),
                                                   _measured("ee_quat_desired", m.ee_quat_desired), stamp))
        if m.ranges is not None:  # the robot's rangefinders, where its task reads them
            for pub, name, value in zip(self.ranges, self.info.rangefinders, m.ranges, strict=True):
                pub.publish(P.range_reading(float(value), stamp, f"range_{name}", self.info.range_max))
