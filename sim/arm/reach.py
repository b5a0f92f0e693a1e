"""Reach: bring the fingertip within 2 cm of a random target in the workspace."""

from __future__ import annotations

from typing import Any, ClassVar

import mujoco
import numpy as np

from sim2real.sim.arm.base import ArmTask
from sim2real.sim.core.errors import ConfigError
from sim2real.sim.core.task import PhysicsBatch, StepResult

TARGET_LOW = np.array([0.35, -0.30, 0.10])
TARGET_HIGH = np.array([0.70, 0.30, 0.50])
"""Target sampling box (m, world frame), inside the clipping workspace."""
SUCCESS_RADIUS = 0.02
REACH_VIEW = {"pos": [1.1, -0.55, 0.8], "xyaxes": [0.675, 0.737, 0.0, -0.375, 0.344, 0.861], "fovy": 32.0}
"""A fixed camera framing the target box from the front right, above it (looking at
(0.5, 0, 0.32)): both the target and the gripper are in view wherever the target is,
which the wrist camera cannot promise. CLIP rewards of this task render it."""
TARGET_COLORS: dict[str, tuple[float, float, float]] = {
    "green": (0.1, 0.8, 0.2),
    "red": (0.85, 0.1, 0.1),
    "blue": (0.1, 0.3, 0.9),
    "yellow": (0.9, 0.8, 0.1),
}
"""The target's colours by name (RGB; drawn half transparent). Vision-language rewards
name the colour, so a reward model can be trained on some colour-distance sentences and
a policy trained from one it never saw (``target_colors``)."""
REACH_SIDE = {"pos": [0.50, 1.05, 0.38], "xyaxes": [-1.0, 0.0, 0.0, 0.0, 0.0, 1.0], "fovy": 36.0}
"""A level camera on the arm's left, looking across the target box (along -y). From
``reach_view`` alone a gripper anywhere on the camera ray through the target looks like
it touches it; seen from the side as well, its height and reach are unambiguous."""


class ArmReach(ArmTask):
    """Dense reward ``-distance``; the episode ends when the fingertip is within
    ``SUCCESS_RADIUS`` of the target (a green sphere, a mocap marker).

    Options (besides :class:`ArmTask`'s):
        action_cost: Weight of the squared excess of each action element over
            ``action_soft_limit``, summed and subtracted every step (0: off). Without
            it PPO learns a bang-bang policy that always asks for the full action range
            (1 m/s, 3 rad/s in ``ee_delta``), which the deployment safety filter
            (0.8 m/s, 2 rad/s) then clips on every step.
        action_soft_limit: Action magnitude in [0, 1) that costs nothing; 0.6 keeps
            ``ee_delta`` at 0.6 m/s and 1.8 rad/s, inside the filter's limits.
        target_colors: Names from ``TARGET_COLORS``; each episode's target takes one at
            random (one colour: always that one, and no random draw).
        success_bonus: Reward added on the step that reaches the target (1). A learned
            reward has no such bonus; 0 gives the task reward the same shape, to tell
            what a run on a learned reward misses because of the reward's shape and what
            because of its errors.
    """

    name: ClassVar[str] = "reach"
    episode_seconds: ClassVar[float] = 5.0

    def __init__(self, num_envs: int, action_mode: str | None = None, action_cost: float = 0.0,
                 action_soft_limit: float = 0.0, target_colors: list[str] | tuple[str, ...] = ("green",),
                 success_bonus: float = 1.0, **options: Any) -> None:
        super().__init__(num_envs, action_mode, **options)
        if not np.isfinite(action_cost) or action_cost < 0:
            raise ConfigError("action_cost", f"must be a finite number >= 0, got {action_cost}")
        if not 0.0 <= action_soft_limit < 1.0:
            raise ConfigError("action_soft_limit", f"must be in [0, 1), got {action_soft_limit}")
        if not np.isfinite(success_bonus):
            raise ConfigError("success_bonus", f"must be a finite number, got {success_bonus}")
        self.success_bonus = float(success_bonus)
        self.action_cost = float(action_cost)
        self.action_soft_limit = float(action_soft_limit)
        self.targets = np.zeros((num_envs, 3))
        unknown = [c for c in target_colors if c not in TARGET_COLORS]
        if not target_colors or unknown or len(set(target_colors)) != len(target_colors):
            raise ConfigError(
                "target_colors", f"{list(target_colors)}: distinct names from {list(TARGET_COLORS)}, at least one"
            )
        self.target_colors = [str(c) for c in target_colors]
        self.color_index = np.zeros(num_envs, dtype=int)
        self._target_geom = -1

    def add_scene(self, spec: mujoco.MjSpec) -> None:
        body = spec.worldbody.add_body(name="target", mocap=True, pos=[0.5, 0.0, 0.3])
        body.add_geom(
            name="target",
            type=mujoco.mjtGeom.mjGEOM_SPHERE,
            size=[SUCCESS_RADIUS, 0, 0],
            contype=0,
            conaffinity=0,
            rgba=[*TARGET_COLORS[self.target_colors[0]], 0.5],
        )
        spec.worldbody.add_camera(name="reach_view", **REACH_VIEW)
        spec.worldbody.add_camera(name="reach_side", **REACH_SIDE)

    def on_model(self, model: mujoco.MjModel) -> None:
        self._target_geom = model.geom("target").id

    def target_color(self, env_id: int) -> str:
        """The colour name of env ``env_id``'s target this episode."""
        return self.target_colors[int(self.color_index[env_id])]

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
        if len(self.target_colors) > 1:  # one colour draws nothing: seeded runs stay as they were
            self.color_index[env_id] = rng.integers(len(self.target_colors))
            model.geom_rgba[self._target_geom, :3] = TARGET_COLORS[self.target_color(env_id)]

    def evaluate_task(self, phys: PhysicsBatch, action: np.ndarray) -> StepResult:
        dist = np.linalg.norm(self.target_rel_ee(phys), axis=1)
        success = dist < SUCCESS_RADIUS
        excess = np.maximum(np.abs(action) - self.action_soft_limit, 0.0)
        effort = (excess * excess).sum(axis=1)
        reward = -dist + self.success_bonus * success - self.action_cost * effort
        return StepResult(reward=reward, terminated=success, success=success,
                          metrics={"ee_distance": dist, "action_excess_sq": effort})

    def task_state(self, env_id: int) -> dict[str, Any]:
        return {"target": self.targets[env_id].round(4).tolist(), "target_color": self.target_color(env_id)}
