"""Hover: take off (or recover) and hold a random point about 1 m above the pad.

Success: within 10 cm of the target for the last 5 s of the 10 s episode.
"""

from __future__ import annotations

from typing import ClassVar

import mujoco
import numpy as np

from sim2real.sim.core.task import PhysicsBatch, StepResult
from sim2real.sim.drone.base import DroneTask, add_marker


class Hover(DroneTask):
    """Hold a target position sampled in ``[-0.5, 0.5]^2 x [0.8, 1.2]`` m.

    Reward per control step: ``exp(-2 d) + 0.5 [d < 0.1 m]`` minus the
    smoothness costs, and ``-10`` on a crash (which ends the episode).
    """

    name: ClassVar[str] = "hover"
    episode_seconds: ClassVar[float] = 10.0

    def add_task_bodies(self, spec: mujoco.MjSpec) -> None:
        add_marker(spec, "target", (0.1, 0.85, 0.2, 0.6))

    def build_model(self) -> mujoco.MjModel:
        model = super().build_model()
        self._marker = self.mocap_index(model, "target")
        return model

    def sample_task(self, env_id: int, data: mujoco.MjData, rng: np.random.Generator) -> None:
        self.target[env_id] = [rng.uniform(-0.5, 0.5), rng.uniform(-0.5, 0.5), rng.uniform(0.8, 1.2)]
        data.mocap_pos[self._marker] = self.target[env_id]

    def evaluate(self, phys: PhysicsBatch, action: np.ndarray) -> StepResult:
        error = np.linalg.norm(self.target - phys.qpos[:, :3], axis=1)
        crashed = self.detect_crash(phys)
        held = self.update_tolerance(error)
        reward = np.exp(-2.0 * error) + 0.5 * (error < self.tolerance) - self.smoothness_penalty(phys)
        reward = np.where(crashed, -self.crash_penalty, reward)
        return StepResult(
            reward=reward,
            terminated=crashed,
            success=(held >= self.success_hold_seconds - 1e-9) & ~crashed,
            metrics={"position_error": error, "time_in_tolerance": held.copy(), "crashed": crashed.astype(np.float64)},
        )
