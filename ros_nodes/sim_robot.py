"""The simulated robot behind the sim bridge: a sim2real ``SimEnv`` driven by physical
commands, read out as the measurements a real robot's driver would publish.

No ROS here, so the bridge node stays thin and this is testable on its own.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import mujoco
import numpy as np

from sim2real.policies.safety.spaces import CommandSpace, command_space
from sim2real.ros_nodes.robots import Measurements, driver_mode, robot_info
from sim2real.sim.arm.base import ArmTask
from sim2real.sim.core.env import SimEnv
from sim2real.sim.core.frames import specific_force
from sim2real.sim.core.registry import REGISTRY
from sim2real.sim.quadruped.velocity import Velocity


@dataclass
class EpisodeRecord:
    index: int
    success: bool
    steps: int
    seconds: float
    metrics: dict[str, float]
    task: dict[str, Any]


class SimRobot:
    """One robot in MuJoCo, commanded in physical units (see ``policies/safety/spaces.py``).

    Args:
        robot: ``arm``, ``quadruped`` or ``drone``.
        task: Registry name of the task (default: the robot's deployment task).
        action_mode: Default: the robot's deployment mode.
        dr: Domain-randomization preset (``none``, ``train``, ``heldout``).
        seed: Seed of resets (targets, commands, randomization).
        task_options: Keyword options of the task.
    """

    def __init__(self, robot: str, task: str = "", action_mode: str = "", dr: str = "none", seed: int = 0,
                 task_options: dict[str, Any] | None = None, render_size: tuple[int, int] = (0, 0)) -> None:
        info = robot_info(robot)
        self.robot = robot
        self.info = info
        self.task_name = task or info.task
        mode, options = driver_mode(robot, action_mode or info.action_mode, task_options or {})
        kwargs: dict[str, Any] = {}
        if render_size[0] > 0:
            kwargs = {"render_mode": "rgb_array", "width": render_size[0], "height": render_size[1]}
        self.env = SimEnv(REGISTRY.get(self.task_name), action_mode=mode, dr=dr, seed=seed, **kwargs, **options)
        self.task = self.env.task
        self.space: CommandSpace = command_space(robot, mode, options.get("action_scale"))
        self.control_dt = float(self.task.control_dt)
        self.seed = seed
        self.episodes: list[EpisodeRecord] = []
        self._steps = 0
        self._metric_sums: dict[str, float] = {}
        self.metric_totals: dict[str, float] = {}
        """Each task metric summed over every step of the run (all episodes)."""
        self._last_info: dict[str, Any] = {}
        self._previous_base_vel: np.ndarray | None = None
        self._jnt = [mujoco.mj_name2id(self.env.model, mujoco.mjtObj.mjOBJ_JOINT, n) for n in info.joints]
        self._qadr = np.array([self.env.model.jnt_qposadr[j] for j in self._jnt], dtype=int)
        self._vadr = np.array([self.env.model.jnt_dofadr[j] for j in self._jnt], dtype=int)
        _, reset_info = self.env.reset(seed=seed)
        self.task_state: dict[str, Any] = reset_info.get("task", {})

    # -- stepping --------------------------------------------------------------------
    def hold_command(self) -> np.ndarray:
        """What the driver applies with no (fresh) command: zero motion for the arm and the
        quadruped (hold setpoint / default pose), motors off for the drone."""
        if self.robot == "drone":
            return np.zeros(self.space.size)
        return self.space.hold.copy()

    def step(self, command: np.ndarray) -> EpisodeRecord | None:
        """One control period under ``command``; returns the episode's record when it ended
        (the robot is then reset with a new target or velocity command)."""
        action = self.space.command_to_action(command)
        self._previous_base_vel = self.env.data.qvel[0:3].copy() if self.info.floating_base else None
        _, _, terminated, truncated, info = self.env.step(action)
        self._steps += 1
        self._last_info = info
        for k, v in info["metrics"].items():
            self._metric_sums[k] = self._metric_sums.get(k, 0.0) + float(v)
            self.metric_totals[k] = self.metric_totals.get(k, 0.0) + float(v)
        if terminated or truncated:
            rec = EpisodeRecord(
                index=len(self.episodes), success=bool(info.get("is_success", False)), steps=self._steps,
                seconds=self._steps * self.control_dt,
                metrics={k: v / self._steps for k, v in self._metric_sums.items()}, task=info.get("task", {}),
            )
            self.episodes.append(rec)
            self._steps, self._metric_sums = 0, {}
            _, reset_info = self.env.reset()
            self._previous_base_vel = None  # no velocity change across a reset
            self.task_state = reset_info.get("task", {})
            return rec
        return None

    @property
    def sim_time(self) -> float:
        return float(self.env.data.time)

    @property
    def metrics(self) -> dict[str, float]:
        return dict(self._last_info.get("metrics", {}))

    # -- read-out ----------------------------------------------------------------------
    def measure(self) -> Measurements:
        """What the robot's driver publishes now."""
        d = self.env.data
        out = Measurements()
        if self.info.joints:
            out.joint_pos = d.qpos[self._qadr].copy()
            out.joint_vel = d.qvel[self._vadr].copy()
            out.joint_effort = d.qfrc_actuator[self._vadr].copy()
        if self.info.floating_base:
            out.base_pos = d.qpos[0:3].copy()
            out.base_quat = d.qpos[3:7].copy()
            out.base_lin_vel = d.qvel[0:3].copy()
            out.base_ang_vel = d.qvel[3:6].copy()
        if self.info.has_ee:
            arm, phys = self._arm(), self.env.engine.phys
            out.ee_pos = np.asarray(arm.ee_pos(phys)[0]).copy()
            out.ee_quat = np.asarray(arm.ee_quat(phys)[0]).copy()
            mapper = arm.mapper
            out.ee_pos_desired = mapper.setpoint_pos[0].copy()
            out.ee_quat_desired = mapper.setpoint_quat[0].copy()
        goal = getattr(self.task, "target", getattr(self.task, "targets", None))  # drone / arm reach
        if goal is not None:
            out.goal = np.asarray(goal[0], dtype=np.float64).copy()
        command = getattr(self.task, "command", None)  # tasks commanded by a velocity
        if command is not None:
            out.cmd_vel = np.asarray(command[0], dtype=np.float64).copy()
        return out

    def _arm(self) -> ArmTask:
        """The task as an arm task (the robot's description says it has an end effector)."""
        if not isinstance(self.task, ArmTask):
            raise TypeError(f"{self.robot} declares an end effector but {type(self.task).__name__} is no arm task")
        return self.task

    def set_velocity_command(self, cmd: np.ndarray) -> None:
        """Operator velocity command (quadruped tasks with a ``command`` block)."""
        if isinstance(self.task, Velocity):
            self.task.set_command(0, cmd)

    def linear_acceleration(self) -> np.ndarray:
        """Body-frame specific force over the last control period, as an IMU's
        delta-velocity output gives it (gusts included)."""
        d = self.env.data
        previous = self._previous_base_vel
        return specific_force(d.qpos[3:7], d.qvel[0:3], d.qvel[0:3] if previous is None else previous,
                              self.control_dt)

    def render(self) -> np.ndarray | None:
        return self.env.render()
