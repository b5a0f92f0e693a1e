"""Push: slide a 5 cm cube across the table onto a goal marker."""

from __future__ import annotations

from typing import Any, ClassVar

import mujoco
import numpy as np

from sim2real.sim.arm.base import ArmTask
from sim2real.sim.arm.rotations import quat_to_rot6d
from sim2real.sim.core.task import PhysicsBatch, StepResult

CUBE_HALF = 0.025
CUBE_MASS = 0.15
"""A 5 cm wooden/plastic block (kg)."""
CUBE_LOW = np.array([0.42, -0.15])
CUBE_HIGH = np.array([0.58, 0.15])
GOAL_DISTANCE = (0.10, 0.20)
"""Goal distance from the cube's start (m)."""
GOAL_LOW = np.array([0.35, -0.30])
GOAL_HIGH = np.array([0.70, 0.30])
SUCCESS_RADIUS = 0.03
"""Cube centre within 3 cm of the goal (horizontal)."""
FALL_HEIGHT = -0.05
"""Cube centre below this (m): it fell off the table."""


class ArmPush(ArmTask):
    """Reward ``-(|cube - fingertip| + 2 |goal - cube|)`` plus 1 on success; ends on
    success or when the cube falls off the table."""

    name: ClassVar[str] = "push"
    episode_seconds: ClassVar[float] = 10.0

    def __init__(self, num_envs: int, action_mode: str | None = None, **options: Any) -> None:
        super().__init__(num_envs, action_mode, **options)
        self.goals = np.zeros((num_envs, 2))

    def add_scene(self, spec: mujoco.MjSpec) -> None:
        cube = spec.worldbody.add_body(name="cube", pos=[0.5, 0.0, CUBE_HALF])
        cube.add_freejoint(name="cube")
        cube.add_geom(
            name="cube",
            type=mujoco.mjtGeom.mjGEOM_BOX,
            size=[CUBE_HALF] * 3,
            mass=CUBE_MASS,
            contype=4,
            conaffinity=7,
            friction=[0.6, 0.005, 0.0001],
            rgba=[0.85, 0.25, 0.2, 1],
        )
        goal = spec.worldbody.add_body(name="goal", mocap=True, pos=[0.6, 0.0, 0.001])
        goal.add_geom(
            name="goal",
            type=mujoco.mjtGeom.mjGEOM_CYLINDER,
            size=[SUCCESS_RADIUS, 0.001, 0],
            contype=0,
            conaffinity=0,
            rgba=[0.1, 0.8, 0.2, 0.6],
        )

    def on_model(self, model: mujoco.MjModel) -> None:
        self.cube_qpos = int(model.jnt_qposadr[model.joint("cube").id])
        self.cube_dof = int(model.jnt_dofadr[model.joint("cube").id])

    def task_observation_layout(self) -> list[tuple[str, int]]:
        return [("cube_pos", 3), ("cube_rot6d", 6), ("cube_rel_ee", 3), ("goal_rel_cube", 2)]

    def task_observation_noise(self) -> dict[str, float]:
        return {"cube_pos": 0.003, "cube_rot6d": 0.01, "cube_rel_ee": 0.003, "goal_rel_cube": 0.003}

    def cube_pos(self, phys: PhysicsBatch) -> np.ndarray:
        return phys.qpos[:, self.cube_qpos : self.cube_qpos + 3]

    def task_observe(self, phys: PhysicsBatch) -> np.ndarray:
        cube = self.cube_pos(phys)
        quat = phys.qpos[:, self.cube_qpos + 3 : self.cube_qpos + 7]
        return np.concatenate(
            [cube, quat_to_rot6d(quat), cube - self.ee_pos(phys), phys.mocap_pos[:, 0, :2] - cube[:, :2]], axis=1
        )

    def task_privileged_layout(self) -> list[tuple[str, int]]:
        return [("cube_vel", 6)]

    def task_privileged(self, phys: PhysicsBatch) -> np.ndarray:
        return phys.qvel[:, self.cube_dof : self.cube_dof + 6]

    def reset_task(self, env_id: int, model: mujoco.MjModel, data: mujoco.MjData, rng: np.random.Generator) -> None:
        self.place_arm(data, rng, finger=0.0)
        cube = rng.uniform(CUBE_LOW, CUBE_HIGH)
        for _ in range(100):  # a goal at the requested distance that stays on the reachable table
            angle = rng.uniform(-np.pi, np.pi)
            goal = cube + rng.uniform(*GOAL_DISTANCE) * np.array([np.cos(angle), np.sin(angle)])
            if np.all(goal >= GOAL_LOW) and np.all(goal <= GOAL_HIGH):
                break
        yaw = rng.uniform(-np.pi / 4, np.pi / 4)
        q = self.cube_qpos
        data.qpos[q : q + 3] = [cube[0], cube[1], CUBE_HALF]
        data.qpos[q + 3 : q + 7] = [np.cos(yaw / 2), 0.0, 0.0, np.sin(yaw / 2)]
        data.mocap_pos[0, :2] = goal
        self.goals[env_id] = goal

    def evaluate_task(self, phys: PhysicsBatch, action: np.ndarray) -> StepResult:
        cube = self.cube_pos(phys)
        ee_dist = np.linalg.norm(cube - self.ee_pos(phys), axis=1)
        goal_dist = np.linalg.norm(phys.mocap_pos[:, 0, :2] - cube[:, :2], axis=1)
        success = goal_dist < SUCCESS_RADIUS
        fell = cube[:, 2] < FALL_HEIGHT
        reward = -(ee_dist + 2.0 * goal_dist) + 1.0 * success
        return StepResult(
            reward=reward,
            terminated=success | fell,
            success=success,
            metrics={"ee_distance": ee_dist, "goal_distance": goal_dist},
        )

    def task_state(self, env_id: int) -> dict[str, Any]:
        return {"goal": self.goals[env_id].round(4).tolist()}
