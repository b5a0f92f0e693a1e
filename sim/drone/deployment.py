"""The drone as a deployment sees it: odometry (and an IMU) only; the position target
comes on ``goal``, and for a waypoint mission (``DroneWaypoints``) the whole sequence on
``plan``: the goal is the current waypoint, the plan tells which one and what follows."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import mujoco
import numpy as np

from sim2real.sim.core.deployment import (
    ClearanceGrid,
    Measurements,
    OperatorAxis,
    OperatorSpace,
    RobotDeployment,
    StateWriter,
)
from sim2real.sim.core.task import PhysicsBatch, Task
from sim2real.sim.drone.base import DroneTask
from sim2real.sim.drone.waypoints import Waypoints


class DroneDeployment(RobotDeployment[DroneTask]):
    name = "drone"
    task = "DroneHover"
    action_mode = "ctbr"
    task_class = DroneTask
    real_backend = "crazyflie"
    floating_base = True
    measured = ("base_pos", "base_quat", "base_lin_vel", "base_ang_vel")
    observable = frozenset({"pos_error", "lin_vel", "rot_mat", "body_rates", "last_action",
                            "next_waypoint_offset", "waypoints_left"})
    block_inputs: ClassVar = {"pos_error": "goal", "next_waypoint_offset": "path", "waypoints_left": "path"}
    # A person flies the setpoint; the policy (or PID) holds it, through the filter.
    live_cameras = ("chase", "follow")
    operator = OperatorSpace(
        channel="goal",
        axes=(OperatorAxis("vx", "m/s", 0.5, ("KeyW", "KeyS")), OperatorAxis("vy", "m/s", 0.5, ("KeyA", "KeyD")),
              OperatorAxis("vz", "m/s", 0.3, ("KeyR", "KeyF"))),
        hold=(0.0, 0.0, 0.0),
    )
    # The policy node publishes CTBR commands with the position PID already added.
    driver_modes: ClassVar = {"ctbr_residual": "ctbr"}
    motors_off_without_command = True

    def plan(self, start: np.ndarray, goal: np.ndarray | None, spacing: float, course: Mapping[str, Any] | None = None,
             grid: ClearanceGrid | None = None) -> np.ndarray:
        """A waypoint mission's path is its waypoints (open air: nothing to plan around)."""
        try:
            waypoints = np.asarray((course or {})["waypoints"], dtype=float).reshape(-1, 3)
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"the drone plans only a waypoint mission's course ({exc!r})") from None
        if not len(waypoints) or not np.all(np.isfinite(waypoints)):
            raise ValueError("a waypoint mission needs one or more finite waypoints")
        return waypoints

    def read_task(self, task: DroneTask, p: PhysicsBatch, out: Measurements) -> None:
        out.goal = np.asarray(task.target[0], dtype=np.float64).copy()
        if isinstance(task, Waypoints):
            out.path = task.waypoints[0].copy()

    def state_writer(self, task: Task, model: mujoco.MjModel) -> StateWriter:
        task = self.robot_task(task)

        def write(p: PhysicsBatch, m: Measurements) -> None:
            p.qpos[0, 0:3], p.qpos[0, 3:7] = m.base_pos, m.base_quat
            p.qvel[0, 0:3], p.qvel[0, 3:6] = m.base_lin_vel, m.base_ang_vel
            if m.goal is not None:
                task.target[0] = m.goal
                if isinstance(task, Waypoints) and m.path is not None:
                    task.follow_mission(m.path, m.goal)

        return write
