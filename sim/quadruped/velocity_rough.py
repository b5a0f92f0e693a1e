"""Velocity tracking on procedurally generated rough terrain (blind policy; the
critic gets a height scan). Terrain is regenerated, seeded, at every reset."""

from __future__ import annotations

from typing import Any, ClassVar

import mujoco
import numpy as np

from sim2real.sim.core.errors import ConfigError
from sim2real.sim.core.task import PhysicsBatch, StepResult
from sim2real.sim.quadruped import terrain
from sim2real.sim.quadruped.velocity import Velocity

CURRICULUM_LEVELS = 10
# Height scan for the critic: 11 x 7 points, 10 cm apart, around the trunk in the heading frame.
_SCAN_X, _SCAN_Y = np.meshgrid(np.linspace(-0.5, 0.5, 11), np.linspace(-0.3, 0.3, 7), indexing="ij")
SCAN_POINTS = np.stack([_SCAN_X.ravel(), _SCAN_Y.ravel()], axis=1)  # [77, 2]


class VelocityRough(Velocity):
    """Track a velocity command on rough terrain.

    Options (besides :class:`Velocity`'s):
        difficulty: A number in [0, 1] (fixed), or ``"curriculum"``: each env starts
            at the easiest of 10 levels, moves up after walking over 4 m from its
            spawn and down when it covered less than half the commanded distance
            (legged_gym's terrain curriculum).
        terrain_kinds: Which of ``bumps``, ``waves``, ``blocks``, ``stairs`` to draw from.
    """

    name: ClassVar[str] = "velocity_rough"
    GRID: ClassVar[terrain.TerrainGrid] = terrain.TerrainGrid()

    def __init__(
        self,
        num_envs: int,
        action_mode: str | None = None,
        difficulty: float | str = 0.5,
        terrain_kinds: tuple[str, ...] | list[str] = terrain.KINDS,
        **options: Any,
    ) -> None:
        super().__init__(num_envs, action_mode, **options)
        if self.weights.get("base_height"):  # legged_gym measures it against the terrain scan: not built
            raise ConfigError("reward_weights.base_height", "the trunk's height above z = 0 means nothing on rough "
                              "terrain")
        self.curriculum = difficulty == "curriculum"
        if not self.curriculum:
            try:
                value = float(difficulty)
            except (TypeError, ValueError):
                raise ConfigError(
                    "difficulty", f"must be a number in [0, 1] or 'curriculum', got {difficulty!r}"
                ) from None
            if not 0.0 <= value <= 1.0:
                raise ConfigError("difficulty", f"must be in [0, 1], got {value}")
        kinds = tuple(terrain_kinds)
        unknown = [k for k in kinds if k not in terrain.KINDS]
        if not kinds or unknown:
            raise ConfigError("terrain_kinds", f"choose one or more of {terrain.KINDS}, got {list(kinds)}")
        self.terrain_kinds = kinds
        self.difficulty = np.full(num_envs, 0.0 if self.curriculum else float(difficulty))
        self.level = np.zeros(num_envs, dtype=int)
        self.kind = ["bumps"] * num_envs
        # Normalised heights of every env's terrain, for the critic's scan (one gather for the batch).
        self._fields = np.full((num_envs, self.GRID.n, self.GRID.n), 0.5, dtype=np.float32)
        self._spawn_xy = np.zeros((num_envs, 2))
        self._walked = np.zeros(num_envs)
        self._commanded = np.zeros(num_envs)

    def build_world(self, spec: mujoco.MjSpec) -> None:
        terrain.add_heightfield(spec, self.GRID)

    def privileged_layout(self) -> list[tuple[str, int]]:
        return [*super().privileged_layout(), ("height_scan", len(SCAN_POINTS))]

    # -- episode -----------------------------------------------------------------------
    def reset_task(self, env_id: int, model: mujoco.MjModel, data: mujoco.MjData, rng: np.random.Generator) -> None:
        if self.curriculum:
            self._update_level(env_id)
        super().reset_task(env_id, model, data, rng)
        kind = self.terrain_kinds[int(rng.integers(len(self.terrain_kinds)))]
        heights = terrain.generate(rng, self.GRID, kind, self.difficulty[env_id])
        hid = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_HFIELD, terrain.HFIELD_NAME)
        start, n = model.hfield_adr[hid], self.GRID.n
        field = terrain.to_hfield(heights, self.GRID)
        model.hfield_data[start : start + n * n] = field
        self._fields[env_id] = field.reshape(n, n)
        self.kind[env_id] = kind
        self._walked[env_id] = 0.0
        self._commanded[env_id] = 0.0

    def _update_level(self, env_id: int) -> None:
        """legged_gym's rule, applied when the previous episode of this env ended."""
        if self._walked[env_id] > 0.8 * self.GRID.half_size:
            self.level[env_id] = min(self.level[env_id] + 1, CURRICULUM_LEVELS - 1)
        elif self._commanded[env_id] > 0 and self._walked[env_id] < 0.5 * self._commanded[env_id]:
            self.level[env_id] = max(self.level[env_id] - 1, 0)
        self.difficulty[env_id] = self.level[env_id] / (CURRICULUM_LEVELS - 1)

    def spawn(self, env_id: int, rng: np.random.Generator) -> tuple[np.ndarray, float]:
        position, heading = super().spawn(env_id, rng)  # the spawn disc is flat at z = 0
        self._spawn_xy[env_id] = position[:2]
        return position, heading

    # -- observation and reward -------------------------------------------------------
    def height_scan(self, phys: PhysicsBatch) -> np.ndarray:
        """Trunk height above the terrain at :data:`SCAN_POINTS`, ``[B, 77]``."""
        st = self.base_state(phys)
        cos, sin = np.cos(st.yaw)[:, None], np.sin(st.yaw)[:, None]
        px = st.pos[:, :1] + cos * SCAN_POINTS[:, 0] - sin * SCAN_POINTS[:, 1]
        py = st.pos[:, 1:2] + sin * SCAN_POINTS[:, 0] + cos * SCAN_POINTS[:, 1]
        ground = terrain.sample_heights(self._fields, self.GRID, np.stack([px, py], axis=-1))
        return st.pos[:, 2:3] - ground

    def privileged_blocks(self, phys: PhysicsBatch) -> dict[str, np.ndarray]:
        return {**super().privileged_blocks(phys), "height_scan": self.height_scan(phys)}

    def evaluate(self, phys: PhysicsBatch, action: np.ndarray) -> StepResult:
        result = super().evaluate(phys, action)
        pos = phys.qpos[:, :2]
        self._walked = np.linalg.norm(pos - self._spawn_xy, axis=1)
        self._commanded += np.linalg.norm(self.command[:, :2], axis=1) * self.control_dt
        result.metrics["terrain_difficulty"] = self.difficulty.copy()
        return result

    def task_state(self, env_id: int) -> dict[str, Any]:
        return {
            **super().task_state(env_id),
            "terrain": self.kind[env_id],
            "difficulty": round(float(self.difficulty[env_id]), 3),
        }
