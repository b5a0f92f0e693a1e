"""The drone as a deployment sees it: odometry (and an IMU) only; the position target
comes on ``goal``, and for a waypoint mission (``DroneWaypoints``) the whole sequence on
``plan``: the goal is the current waypoint, the plan tells which one and what follows.
A gate course (``DroneGates``) comes on ``course`` (the gates and the way each faces) and
the gate planner's path on ``plan``: the policy node tracks the gates passed and the
carrot along the path itself, as the task does in training."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import mujoco
import numpy as np

from sim2real.sim.core.commands import CommandLayout
from sim2real.sim.core.deployment import (
    ClearanceGrid,
    Measurements,
    OperatorAxis,
    OperatorSpace,
    RobotDeployment,
    StateWriter,
)
from sim2real.sim.core.task import PhysicsBatch, Task
from sim2real.sim.drone import constants as C
from sim2real.sim.drone import gate_path
from sim2real.sim.drone.airframe import CRAZYFLIE, Airframe
from sim2real.sim.drone.base import DroneTask
from sim2real.sim.drone.gates import Gates, parse_gate_course
from sim2real.sim.drone.waypoints import Waypoints


class DroneDeployment(RobotDeployment[DroneTask]):
    name = "drone"
    task = "DroneHover"
    action_mode = "ctbr"
    task_class = DroneTask
    real_backend = "crazyflie"
    other_backends = ("px4",)  # a Crazyflie-scale vehicle under PX4 (its SITL, a small custom build)
    airframe: ClassVar[Airframe] = CRAZYFLIE
    """The vehicle: its thrust scales the command space, the safety filter's limits and
    fallback, and the classical controller (:mod:`.airframe`)."""
    floating_base = True
    measured = ("base_pos", "base_quat", "base_lin_vel", "base_ang_vel")
    observable = frozenset({"pos_error", "lin_vel", "rot_mat", "body_rates", "last_action",
                            "next_waypoint_offset", "waypoints_left", "gate_normal", "next_gate_offset",
                            "gates_left"})
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
    command_modes = ("ctbr", "ctbr_residual", "velocity")

    def command_layout(self, action_mode: str, action_scale: float | None = None) -> CommandLayout | None:
        """Collective thrust (N) and body rates (rad/s); ``ctbr_residual`` is commanded as
        ``ctbr`` (the PID's output plus the policy's residual); ``velocity``: a world-frame
        (ENU) velocity setpoint in m/s, which the vehicle's own controller flies."""
        if action_mode not in self.command_modes:
            return None
        if action_mode == "velocity":
            return CommandLayout(("vx", "vy", "vz"), ("m/s", "m/s", "m/s"), offset=np.zeros(3),
                                 scale=self.airframe.speed_scale, control_dt=C.CONTROL_DT)
        half = self.airframe.max_collective_thrust / 2
        return CommandLayout(("thrust", "roll_rate", "pitch_rate", "yaw_rate"), ("N", "rad/s", "rad/s", "rad/s"),
                             offset=np.r_[half, 0.0, 0.0, 0.0], scale=np.r_[half, C.MAX_BODY_RATE],
                             control_dt=C.CONTROL_DT)
    motors_off_without_command = True
    """In ``ctbr``, zero thrust. In ``velocity`` the zero command is zero velocity: a
    hover in the air, motors idle on the ground (the land detector, as PX4's)."""

    def inputs(self, task: Task) -> Mapping[str, str]:
        if isinstance(task, Gates):  # the gates and the path replace the goal
            return {"gate_normal": "course", "next_gate_offset": "course", "gates_left": "course",
                    "pos_error": "path" if task.guidance == "path" else "course"}
        return self.block_inputs

    def plan(self, start: np.ndarray, goal: np.ndarray | None, spacing: float, course: Mapping[str, Any] | None = None,
             grid: ClearanceGrid | None = None) -> np.ndarray:
        """A gate course's path is the gate planner's, from the course's start (its
        height above the pad) through each gate along its normal; a waypoint mission's
        path is its waypoints (open air: nothing to plan around)."""
        if course is not None and "gates" in course:
            centres, normals, begin = parse_gate_course(course)
            begin[:2] = np.asarray(start, dtype=float).reshape(-1)[:2]
            return gate_path.plan_through_gates(begin, centres, normals)
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
        if isinstance(task, Gates):
            out.course = task.course(0)
            if task.guidance == "path":
                out.path = task.path[0, : task.path_count[0]].copy()

    def state_writer(self, task: Task, model: mujoco.MjModel) -> StateWriter:
        task = self.robot_task(task)

        def write(p: PhysicsBatch, m: Measurements) -> None:
            p.qpos[0, 0:3], p.qpos[0, 3:7] = m.base_pos, m.base_quat
            p.qvel[0, 0:3], p.qvel[0, 3:6] = m.base_lin_vel, m.base_ang_vel
            if m.goal is not None:
                task.target[0] = m.goal
                if isinstance(task, Waypoints) and m.path is not None:
                    task.follow_mission(m.path, m.goal)
            if isinstance(task, Gates) and m.course is not None and m.base_pos is not None:
                task.follow_course(m.course, m.path, m.base_pos)

        return write
