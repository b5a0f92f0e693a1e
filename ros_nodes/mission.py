"""The operator's side of a real robot's mission on ROS 2: ``goal``, ``cmd_vel``,
``course`` and ``episodes``, as a person or a mission planner publishes them.

In simulation the sim bridge publishes these from its task (``publish_mission``). A real
robot's driver has no mission; with an emulator, the emulated task does
(:meth:`sim2real.hardware.emulator.base.Emulator.mission`), and ``sim2real hardware
emulate`` publishes it through :class:`MissionPublisher` with the sim bridge's topics,
message types and QoS, so the policy node cannot tell the two apart.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
from geometry_msgs.msg import PoseStamped, Twist
from rclpy.node import Node
from std_msgs.msg import String

from sim2real.hardware.emulator.base import Mission
from sim2real.ros_nodes import messages as M
from sim2real.ros_nodes.qos import mission_qos, status_qos


class MissionPublisher(Node):
    """Publishes a mission when it changes (and the episode counters as they grow)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__("mission", **kwargs)
        self.pub_goal = self.create_publisher(PoseStamped, "goal", mission_qos())
        self.pub_cmd_vel = self.create_publisher(Twist, "cmd_vel", mission_qos())
        self.pub_episode = self.create_publisher(String, "episodes", status_qos())
        self.pub_course = self.create_publisher(String, "course", mission_qos())
        self._last: tuple[Any, ...] | None = None
        self._episodes = 0

    def publish(self, mission: Mission) -> None:
        course = None if mission.course is None else json.dumps(mission.course)
        key = (None if mission.goal is None else tuple(np.round(mission.goal, 9)),
               None if mission.cmd_vel is None else tuple(np.round(mission.cmd_vel, 9)), course)
        if key != self._last:
            self._last = key
            stamp = self.get_clock().now().to_msg()
            if mission.goal is not None:
                self.pub_goal.publish(M.pose_stamped(mission.goal, np.array([1.0, 0, 0, 0]), stamp))
            if mission.cmd_vel is not None:
                v = mission.cmd_vel
                self.pub_cmd_vel.publish(M.twist(np.array([v[0], v[1], 0.0]), np.array([0.0, 0.0, v[2]])))
            if course is not None:  # a new episode's course: the planner plans again
                self.pub_course.publish(String(data=course))
        if mission.episodes > self._episodes:
            self._episodes = mission.episodes
            self.pub_episode.publish(String(data=json.dumps({"episodes": mission.episodes,
                                                             "successes": mission.successes})))
