"""The quadruped as a deployment sees it: joint states in Unitree's FR/FL/RR/RL order and
the base's odometry; the velocity command comes on ``cmd_vel``, the planner's path on
``plan`` and the rangefinders on ``ranges`` (the waypoints task)."""

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
from sim2real.sim.quadruped import constants as C
from sim2real.sim.quadruped import layouts, planner
from sim2real.sim.quadruped.base import QuadrupedTask
from sim2real.sim.quadruped.velocity import Velocity
from sim2real.sim.quadruped.waypoints import MAX_RANGE, RANGEFINDERS, Waypoints

DRIVER_ACTION_SCALE = 2.0
"""Rad of servo target per unit action in the simulated quadruped driver: the largest
scale the task allows, so any target within +-2 rad of the default pose (then the joint
limits) passes unchanged, as a real driver accepts any target within its limits."""


class QuadrupedDeployment(RobotDeployment[QuadrupedTask]):
    name = "quadruped"
    task = "QuadrupedVelocity"
    action_mode = "joint_pos"
    task_class = QuadrupedTask
    real_backend = "unitree_go2"
    joints = C.JOINT_NAMES
    floating_base = True
    rangefinders = tuple(RANGEFINDERS)
    range_max = MAX_RANGE
    measured = ("joint_pos", "joint_vel", "base_pos", "base_quat", "base_lin_vel", "base_ang_vel")
    observable = frozenset({"base_lin_vel", "base_ang_vel", "projected_gravity", "command", "joint_pos",
                            "joint_vel", "last_action", "gait_clock", "history", "waypoints", "ranges",
                            "reference"})
    block_inputs: ClassVar = {"command": "cmd_vel", "waypoints": "path", "ranges": "ranges"}
    # A person steers the base; the policy keeps walking (its joint targets pass the filter).
    # Standing (sport mode's stance, the emulator's start), lying (Unitree's stand-down
    # pose), lying in damping (released lying: hips splaying outwards, thighs sliding,
    # measured on the simulated Go2 1-8 s after the hand-over) or collapsed in damping
    # (released standing or damped after a fault: calves at their stop, hips splayed).
    rest_poses: ClassVar = {"standing": tuple(C.DEFAULT_POSE), "lying": (0.0, 1.36, -2.65) * 4,
                            "lying in damping": (-0.45, 1.1, -2.72, 0.45, 1.1, -2.72) * 2,
                            "damping": (-0.25, 0.6, -2.72, 0.25, 0.6, -2.72) * 2}
    live_cameras = ("tracking", "head")
    operator = OperatorSpace(
        channel="cmd_vel",
        axes=(OperatorAxis("vx", "m/s", 1.0, ("KeyW", "KeyS")), OperatorAxis("vy", "m/s", 0.5, ("KeyA", "KeyD")),
              OperatorAxis("yaw_rate", "rad/s", 1.0, ("KeyQ", "KeyE"))),
        hold=(0.0, 0.0, 0.0),
    )
    # The policy node publishes joint targets with the trot reference already added.
    driver_modes: ClassVar = {"gait_residual": "joint_pos"}
    driver_options: ClassVar = {"action_scale": DRIVER_ACTION_SCALE}
    command_modes = ("joint_pos", "gait_residual")

    def command_layout(self, action_mode: str, action_scale: float | None = None) -> CommandLayout | None:
        """12 joint position targets (rad) about the default pose, FR FL RR RL x hip thigh
        calf; ``gait_residual`` commands are joint targets too (the policy node adds the
        task's gait reference, ``Task.deploy_command``, before publishing)."""
        if action_mode not in self.command_modes:
            return None
        scale = C.ACTION_SCALE if action_scale is None else float(action_scale)
        return CommandLayout(C.JOINT_NAMES, ("rad",) * 12, offset=C.DEFAULT_POSE.copy(), scale=np.full(12, scale),
                             control_dt=C.CONTROL_DT)

    def backend_options(self, task_options: Mapping[str, Any]) -> dict[str, Any]:
        """A policy's own servo gains (``servo_kp``/``servo_kd``, an imported policy's) go to
        the Go2's LowCmd kp/kd under the policy, as Unitree's deploy code sends them; the
        backend takes one value for all joints."""
        out = {}
        for option, backend in (("servo_kp", "policy_kp"), ("servo_kd", "policy_kd")):
            if task_options.get(option) is None:
                continue
            gains = np.broadcast_to(np.asarray(task_options[option], dtype=float), (C.NUM_JOINTS,))
            if not np.allclose(gains, gains[0]):
                raise ValueError(f"{option} differs between joints ({gains.tolist()}); the Go2 backend takes one value")
            out[backend] = float(gains[0])
        return out

    def plan(self, start: np.ndarray, goal: np.ndarray | None, spacing: float, course: Mapping[str, Any] | None = None,
             grid: ClearanceGrid | None = None) -> np.ndarray:
        if course is not None:
            return planner.plan(layouts.Layout.from_dict(course), np.asarray(start, dtype=float)[:2], spacing, goal)
        if grid is None or goal is None:
            raise ValueError("a path needs a course, or a map and a goal")
        return planner.plan_on_grid(grid.xs, grid.ys, grid.clearance, np.asarray(start, dtype=float)[:2],
                                    np.asarray(goal, dtype=float)[:2], spacing)

    def read_task(self, task: QuadrupedTask, p: PhysicsBatch, out: Measurements) -> None:
        if isinstance(task, Velocity):  # the tasks that follow a velocity command
            out.cmd_vel = np.asarray(task.command[0], dtype=np.float64).copy()
        if isinstance(task, Waypoints):  # the planner's path and what the rangefinders read
            out.path = task.waypoints[0].copy()
            out.ranges = task.ranges(p)[0].copy()

    def state_writer(self, task: Task, model: mujoco.MjModel) -> StateWriter:
        task = self.robot_task(task)
        commanded = task if isinstance(task, Velocity) else None  # the tasks that follow a velocity command
        follower = task if isinstance(task, Waypoints) else None  # the tasks that follow a path

        def write(p: PhysicsBatch, m: Measurements) -> None:
            p.qpos[0, 0:3], p.qpos[0, 3:7], p.qpos[0, 7:19] = m.base_pos, m.base_quat, m.joint_pos
            p.qvel[0, 0:3], p.qvel[0, 3:6], p.qvel[0, 6:18] = m.base_lin_vel, m.base_ang_vel, m.joint_vel
            task.last_action[0] = p.last_action[0]
            if commanded is not None and m.cmd_vel is not None:
                commanded.command[0] = m.cmd_vel
            if follower is not None and m.path is not None and m.ranges is not None:
                if not np.array_equal(m.path, follower.waypoints[0]):  # a new plan: follow it from its start
                    follower.set_path(0, m.path)
                follower.pass_reached(p.qpos[:1, 0:2])  # the base position just written
                p.sensordata[0, follower.range_idx] = m.ranges

        return write
