"""An emulated robot's mission on ROS 2 (``ros_nodes/mission.py``): a waypoint task's
course goes out on ``course`` as the sim bridge publishes it, once per change, so the
planner gives a waypoint policy its path on a real backend too (before: no course, and
DroneWaypoints never acted through an emulator, "state missing ['path']")."""

from __future__ import annotations

import json
import threading
from dataclasses import replace
from typing import Any

import numpy as np
from rclpy.node import Node
from ros_harness import Harness, wait_for
from std_msgs.msg import String

from sim2real.hardware.emulator.simulated_drone import SimulatedDrone
from sim2real.ros_nodes.mission import MissionPublisher
from sim2real.ros_nodes.qos import mission_qos
from sim2real.sim.drone.waypoints import Waypoints


def test_a_waypoint_tasks_course_is_published_once_per_change() -> None:
    drone = SimulatedDrone("DroneWaypoints", 0.002, seed=3)
    h = Harness()
    try:
        publisher = h.add(MissionPublisher(context=h.context))
        probe = h.add(Node("course_probe", context=h.context))
        courses: list[dict[str, Any]] = []
        lock = threading.Lock()

        def on_course(msg: String) -> None:
            with lock:
                courses.append(json.loads(msg.data))

        probe.create_subscription(String, "course", on_course, mission_qos())
        h.spin()
        task = drone.task
        assert isinstance(task, Waypoints)
        mission = drone.mission()
        assert mission.course is not None and len(mission.course["waypoints"]) == task.n_waypoints
        assert wait_for(lambda: publisher.pub_course.get_subscription_count() > 0, 5.0)
        for _ in range(3):  # the same course again: nothing new to plan on
            publisher.publish(mission)
        assert wait_for(lambda: len(courses) == 1, 3.0)
        np.testing.assert_allclose(courses[0]["waypoints"], task.waypoints[0])
        moved = np.asarray(mission.course["waypoints"]) + 0.5  # the next episode's course
        publisher.publish(replace(mission, course={"waypoints": moved.tolist()}))
        assert wait_for(lambda: len(courses) == 2, 3.0)
        np.testing.assert_allclose(courses[1]["waypoints"], moved)
    finally:
        h.close()
        drone.close()


def test_a_task_without_a_course_publishes_none() -> None:
    drone = SimulatedDrone("DroneHover", 0.002)
    try:
        assert drone.mission().course is None
    finally:
        drone.close()
