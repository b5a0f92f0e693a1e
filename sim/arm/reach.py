"""Reach: bring the fingertip within 2 cm of a random target in the workspace."""

from __future__ import annotations

from typing import Any, ClassVar

import mujoco
import numpy as np

from sim2real.sim.arm.base import ArmTask
from sim2real.sim.core.task import PhysicsBatch, StepResult

TARGET_LOW = np.array([0.35, -0.30, 0.10])
TARGET_HIGH = np.array([0.70, 0.30, 0.50])
"""Target sampling box (m, world frame), inside the clipping workspace."""
SUCCESS_RADIUS = 0.02


class ArmReach(ArmTask):
    """Dense reward ``-distance``; the episode ends when the fingertip is within
    ``SUCCESS_RADIUS`` of the target (a green sphere, a mocap marker)."""

    name: ClassVar[str] = "reach"
    episode_seconds: ClassVar[float] = 5.0

    def __init__(self, num_envs: int, action_mode: str | None = None, **options: Any) -> None:
        super().__init__(num_envs, action_mode, **options)
        self.targets = np.zeros((num_envs, 3))

    def add_scene(self, spec: mujoco.MjSpec) -> None:
        body = spec.worldbody.add_body(name="target", mocap=True, pos=[0.5, 0.0, 0.3])
        body.add_geom(
            name="target",
            type=mujoco.mjtGeom.mjGEOM_SPHERE,
            size=[SUCCESS_RADIUS, 0, 0],
            contype=0,
            conaffinity=0,
            rgba=[0.1, 0.8, 0.2, 0.5],
        )

    def task_observation_layout(self) -> list[tuple[str, int]]:
        return [("target_rel_ee", 3)]

    def task_observation_noise(self) -> dict[str, float]:
        return {"target_rel_ee": 0.002}

    def target_rel_ee(self, phys: PhysicsBatch) -> np.ndarray:
        return phys.mocap_pos[:, 0] - self.ee_pos(phys)

    def task_observe(self, phys: PhysicsBatch) -> np.ndarray:
        return self.target_rel_ee(phys)

    def reset_task(self, env_id: int, model: mujoco.MjModel, data: mujoco.MjData, rng: np.random.Generator) -> None:
        self.place_arm(data, rng)
        self.targets[env_id] = rng.uniform(TARGET_LOW, TARGET_HIGH)
        data.mocap_pos[0] = self.targets[env_id]

    def evaluate_task(self, phys: PhysicsBatch, action: np.ndarray) -> StepResult:
        dist = np.linalg.norm(self.target_rel_ee(phys), axis=1)
        success = dist < SUCCESS_RADIUS
        reward = -dist + 1.0 * success
        return StepResult(reward=reward, terminated=success, success=success, metrics={"ee_distance": dist})

    def task_state(self, env_id: int) -> dict[str, Any]:
        return {"target": self.targets[env_id].round(4).tolist()}
