"""The planner node (the hierarchy's upper level on ROS 2): occupancy maps read as the
planner reads them, a simulated course planned exactly as the task plans it, re-planning
when the goal changes, and malformed inputs refused without a new path."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest
from nav_msgs.msg import OccupancyGrid
from ros_harness import Harness, wait_for

from sim2real.ros_nodes import messages as M
from sim2real.ros_nodes import path_messages as P
from sim2real.ros_nodes.planner import clearance_grid
from sim2real.sim import robot_deployment
from sim2real.sim.quadruped import layouts, planner


def _grid(cells: np.ndarray, resolution: float = 0.05, origin: tuple[float, float] = (0.0, 0.0)) -> OccupancyGrid:
    """``cells [x, y]`` as an OccupancyGrid (row-major by y, as ROS stores it)."""
    msg = OccupancyGrid()
    msg.info.resolution = resolution
    msg.info.width, msg.info.height = cells.shape
    msg.info.origin.position.x, msg.info.origin.position.y = origin
    msg.info.origin.orientation.w = 1.0
    msg.data = [int(v) for v in cells.T.reshape(-1)]
    return msg


def test_an_occupancy_map_becomes_clearance_and_a_path_keeps_the_robots_half_width_from_walls() -> None:
    cells = np.zeros((80, 40), dtype=int)  # 4 m x 2 m
    cells[38:42, :30] = 100  # a wall across most of the room, open at the top (y > 1.5 m)
    cells[60:64, 25:] = -1  # an unknown patch: an obstacle too
    grid = clearance_grid(_grid(cells, origin=(-1.0, -1.0)), occupied=50)
    assert not isinstance(grid, str)
    assert grid.xs[0] == pytest.approx(-0.975) and grid.ys[-1] == pytest.approx(0.975)
    assert grid.clearance[40, 10] == 0.0 and grid.clearance[62, 30] == 0.0
    assert grid.clearance[20, 10] == pytest.approx(0.9, abs=0.03)  # 18 cells from the wall
    path = robot_deployment("quadruped").plan(np.array([-0.8, -0.5]), np.array([1.5, -0.5]), 0.4, grid=grid)
    np.testing.assert_allclose(path[-1, :2], [1.5, -0.5])
    assert np.all(path[:, 2] == planner.WALK_HEIGHT)  # a map has no ceilings
    dense = np.concatenate([np.linspace(a, b, 10) for a, b in zip(path[:-1, :2], path[1:, :2], strict=True)])
    wall = (dense[:, 0] > 0.85) & (dense[:, 0] < 1.15)
    assert wall.any() and np.all(dense[wall, 1] > 0.5 - 1.0 + planner.ROBOT_HALF_WIDTH - 0.05)  # round the wall's end


@pytest.mark.parametrize(("change", "reason"), [
    (lambda m: setattr(m, "data", m.data[:-1]), "cells"),
    (lambda m: setattr(m.info.origin.orientation, "z", 0.38), "rotated"),
    (lambda m: setattr(m.info, "resolution", float("nan")), "nan"),
])
def test_malformed_maps_are_refused_with_their_reason(change: Any, reason: str) -> None:
    msg = _grid(np.zeros((10, 10), dtype=int))
    change(msg)
    assert reason in str(clearance_grid(msg, occupied=50))


def test_no_passage_is_a_clear_error() -> None:
    cells = np.zeros((40, 40), dtype=int)
    cells[18:22, :] = 100  # a wall with no way round
    grid = clearance_grid(_grid(cells), occupied=50)
    assert not isinstance(grid, str)
    with pytest.raises(ValueError, match="no collision-free passage"):
        robot_deployment("quadruped").plan(np.array([0.2, 1.0]), np.array([1.8, 1.0]), 0.4, grid=grid)


def test_the_planner_node_plans_the_course_replans_for_a_new_goal_and_refuses_garbage() -> None:
    import rclpy
    from geometry_msgs.msg import PoseStamped
    from nav_msgs.msg import Odometry, Path
    from rclpy.parameter import Parameter
    from std_msgs.msg import String

    from sim2real.ros_nodes.planner import PlannerNode
    from sim2real.ros_nodes.qos import mission_qos, sensor_qos

    layout = layouts.generate(np.random.default_rng(4), num_sections=2)
    with Harness() as h:
        node = h.add(PlannerNode(context=h.context, parameter_overrides=[Parameter("robot", value="quadruped")]))
        node.trigger_configure()
        node.trigger_activate()
        probe = h.add(rclpy.create_node("probe", context=h.context))
        paths: list[np.ndarray] = []
        probe.create_subscription(Path, "plan", lambda m: paths.append(P.parse_path(m)), mission_qos())
        course = probe.create_publisher(String, "course", mission_qos())
        goal = probe.create_publisher(PoseStamped, "goal_pose", mission_qos())
        odom = probe.create_publisher(Odometry, "odom", sensor_qos())
        h.spin()
        stamp = M.sec_to_stamp(0.0)
        assert wait_for(lambda: course.get_subscription_count() > 0 and odom.get_subscription_count() > 0, 5.0)
        course.publish(String(data=json.dumps({**layout.to_dict(), "start": [0.0, 0.0]})))
        assert wait_for(lambda: len(paths) == 1, 5.0)
        np.testing.assert_allclose(paths[0], planner.plan(layout, np.zeros(2)), atol=1e-9)  # the task's own plan
        # The robot moved; a new goal is planned from where it is now.
        here = np.array([1.0, 0.1, 0.27])
        for _ in range(5):
            odom.publish(M.odometry(here, np.array([1.0, 0, 0, 0]), np.zeros(3), np.zeros(3), stamp))
        assert wait_for(lambda: node._start is not None and np.allclose(node._start, here[:2]), 5.0)
        target = np.array([layout.goal[0] - 0.5, 0.0, 0.0])
        goal.publish(M.pose_stamped(target, np.array([1.0, 0, 0, 0]), stamp, "odom"))
        assert wait_for(lambda: len(paths) == 2, 5.0)
        np.testing.assert_allclose(paths[1], planner.plan(layout, here[:2], goal=target[:2]), atol=1e-9)
        # Garbage: refused with a reason, and no new path.
        course.publish(String(data="{not json"))
        assert wait_for(lambda: node.refused == 1, 5.0)  # (the mission QoS keeps only the latest)
        course.publish(String(data=json.dumps({"goal": [1.0], "blocks": [], "ceilings": []})))
        assert wait_for(lambda: node.refused == 2, 5.0)
        assert len(paths) == 2 and "no path" in node.last_error and "malformed" in node.last_error


@pytest.mark.slow
def test_the_graph_walks_the_shipped_follower_along_the_planned_path_to_the_goal() -> None:
    """``sim2real deploy`` of the hierarchy's follower: the sim bridge publishes the course
    and the rangefinders, the planner plans, the policy node follows ``plan`` through
    the safety filter, and the simulated robot reaches the course's goal."""
    from pathlib import Path

    from ros_harness import deploy_json

    follower = Path(__file__).resolve().parents[2] / "policies" / "baselines" / "QuadrupedWaypoints"
    summary, log = deploy_json("--robot", "quadruped", "--policy", str(follower), "--duration", "25")
    assert summary["task"] == "QuadrupedWaypoints"
    assert summary["task_success"]["successes"] >= 1, (summary["task_success"], log[-3000:])
    assert "planner]: path of" in log


def test_a_drones_waypoint_mission_is_its_own_path() -> None:
    drone = robot_deployment("drone")
    waypoints = [[0.0, 0.0, 1.0], [0.8, 0.2, 1.2], [1.5, -0.3, 0.9]]
    np.testing.assert_array_equal(drone.plan(np.zeros(3), None, 0.4, course={"waypoints": waypoints}), waypoints)
    for bad in ({}, {"waypoints": []}, {"waypoints": [[0.0, float("nan"), 1.0]]}, {"waypoints": "up"}):
        with pytest.raises(ValueError):
            drone.plan(np.zeros(3), None, 0.4, course=bad)
    with pytest.raises(ValueError, match="no path planner"):
        robot_deployment("arm").plan(np.zeros(3), None, 0.4, course={})
