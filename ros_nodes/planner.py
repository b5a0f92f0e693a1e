"""``planner``: the hierarchy's upper level on ROS 2. It plans a path from the robot to
its goal and publishes it on ``plan`` (``nav_msgs/Path`` in the odometry frame, each
pose's z the height the robot may have there), where the policy node of a path-following
policy (``QuadrupedWaypoints``; a drone's waypoint mission, ``DroneWaypoints``, whose
path is its waypoints) takes its waypoints.

Inputs:

* ``map`` (``nav_msgs/OccupancyGrid``, as map_server or a SLAM node publishes it): cells
  at or above ``occupied_threshold`` and unknown cells are obstacles; the robot's planner
  keeps its half width from them; no ceilings are known, so every waypoint is at walking
  height;
* or ``course`` (``std_msgs/String``, JSON): a simulated course's description, with its
  ceilings and goal, published by the sim bridge;
* ``goal_pose`` (``geometry_msgs/PoseStamped``, the odometry frame): where to go (a
  course has its own goal; a goal pose overrides it);
* ``odom``: where the robot is when it plans.

It re-plans when the map, the course or the goal changes. A malformed input, or a goal
no passage reaches, is logged with its reason and publishes nothing new; the policy keeps
the last valid path, and with none it does not act (the safety filter holds the robot).
"""

from __future__ import annotations

import json
from typing import Any

import cv2
import numpy as np
from geometry_msgs.msg import PoseStamped
from nav_msgs.msg import OccupancyGrid, Odometry, Path
from std_msgs.msg import String

from sim2real.ros_nodes import messages as M
from sim2real.ros_nodes import path_messages as P
from sim2real.ros_nodes.base import ManagedNode, run_node
from sim2real.ros_nodes.qos import mission_qos, sensor_qos
from sim2real.ros_nodes.settings import PlannerSettings
from sim2real.sim import robot_deployment
from sim2real.sim.core.deployment import ClearanceGrid

MAX_MAP_CELLS = 4_000_000
"""A larger map is refused (2 km x 2 km at 1 m, 100 m x 100 m at 5 cm)."""


def clearance_grid(msg: OccupancyGrid, occupied: int) -> ClearanceGrid | str:
    """The map's cells as the planner reads them (distance to the nearest obstacle), or
    why the map is refused. Only maps aligned with their frame's axes are read."""
    info = msg.info
    w, h, res = int(info.width), int(info.height), float(info.resolution)
    if w < 2 or h < 2 or w * h > MAX_MAP_CELLS or not np.isfinite(res) or res <= 0:
        return f"map of {w} x {h} cells at {res} m"
    if len(msg.data) != w * h:
        return f"map data has {len(msg.data)} cells, not {w} x {h}"
    q = info.origin.orientation
    if abs(q.x) > 1e-6 or abs(q.y) > 1e-6 or abs(q.z) > 1e-6:
        return "rotated map origin (only axis-aligned maps are read)"
    cells = np.asarray(msg.data, dtype=np.int16).reshape(h, w).T  # [x, y]
    free = ((cells >= 0) & (cells < occupied)).astype(np.uint8)
    # Distance (cells) from each free cell to the nearest obstacle cell; obstacles read 0.
    distance = cv2.distanceTransform(free, cv2.DIST_L2, cv2.DIST_MASK_PRECISE)
    xs = info.origin.position.x + res * (np.arange(w) + 0.5)
    ys = info.origin.position.y + res * (np.arange(h) + 0.5)
    return ClearanceGrid(xs=xs, ys=ys, clearance=distance.astype(float) * res)


class PlannerNode(ManagedNode):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__("planner", PlannerSettings, **kwargs)
        self.plans = self.refused = 0
        self.last_error = ""
        self._course: dict[str, Any] | None = None
        self._grid: ClearanceGrid | None = None
        self._goal: np.ndarray | None = None
        self._start: np.ndarray | None = None
        self._pending = False

    def load(self) -> None:
        p = self.params()
        self.info = robot_deployment(p["robot"])
        self.spacing, self.occupied = float(p["spacing"]), int(p["occupied_threshold"])
        self.pub = self.create_publisher(Path, "plan", mission_qos())
        self.create_subscription(String, "course", self._on_course, mission_qos())
        self.create_subscription(OccupancyGrid, "map", self._on_map, mission_qos())
        self.create_subscription(PoseStamped, "goal_pose", self._on_goal, mission_qos())
        self.create_subscription(Odometry, "odom", self._on_odom, sensor_qos())

    def start(self) -> None:
        self._pending = True  # a course or map that arrived while inactive is planned now

    # -- inputs ----------------------------------------------------------------------------
    def _on_course(self, msg: String) -> None:
        try:
            course = json.loads(msg.data)
        except ValueError as exc:
            return self._refuse(f"course is not JSON ({exc})")
        if not isinstance(course, dict):
            return self._refuse("course is not a JSON object")
        start = course.get("start")  # a new episode's course: its path starts at the spawn
        if isinstance(start, list) and len(start) == 2 and all(isinstance(v, (int, float)) for v in start):
            self._start = np.array(start, dtype=float)
        self._course, self._grid = course, None
        self._replan()

    def _on_map(self, msg: OccupancyGrid) -> None:
        grid = clearance_grid(msg, self.occupied)
        if isinstance(grid, str):
            return self._refuse(f"map refused: {grid}")
        self._grid, self._course = grid, None
        self._replan()

    def _on_goal(self, msg: PoseStamped) -> None:
        pos, _ = M.pose_arrays(msg.pose)
        if not np.all(np.isfinite(pos)):
            return self._refuse("non-finite goal")
        self._goal = pos[:2]
        self._replan()

    def _on_odom(self, msg: Odometry) -> None:
        parsed = M.parse_odometry(msg)
        if isinstance(parsed, str):
            return
        self._start = parsed[0][:2]
        if self._pending:
            self._replan()

    # -- planning --------------------------------------------------------------------------
    def _replan(self) -> None:
        """Plan from where the robot is now, once it is known and the node is active."""
        if (self._course is None and self._grid is None) or self._start is None or not self.active:
            self._pending = True
            return
        self._pending = False
        try:
            path = self.info.plan(self._start, self._goal, self.spacing, course=self._course, grid=self._grid)
        except ValueError as exc:
            return self._refuse(f"no path: {exc}")
        self.pub.publish(P.path(path, self.get_clock().now().to_msg()))
        self.plans += 1
        self.get_logger().info(f"path of {len(path)} waypoints to ({path[-1, 0]:.2f}, {path[-1, 1]:.2f}) m")

    def _refuse(self, reason: str) -> None:
        self.refused += 1
        self.last_error = reason
        self.log_throttled("refused", reason, level="error")

    def summary(self) -> dict[str, Any]:
        return {"plans": self.plans, "refused": self.refused, "last_error": self.last_error}

    def report(self) -> None:
        self.publish_status(1 if self.plans == 0 else 0, f"{self.plans} paths", self.summary())


def main(args: list[str] | None = None) -> int:
    return run_node(PlannerNode, args)


if __name__ == "__main__":
    raise SystemExit(main())
