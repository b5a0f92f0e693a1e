"""Maze: guide a stylus tip through a walled maze on the table, sliding along the walls.

The contact-rich maze exploration of the passivity-constrained RL paper (Zhang, Solak,
Hjorth, Ajoudani): a stylus mounted in the closed gripper (its tip is the controlled
site) starts in the maze corner nearest the robot and must reach the opposite corner.
Layouts come from a fixed family of 4x4 perfect mazes (``maze_layouts.family``); each
interior wall segment is a mocap body moved into place, or under the table, at reset.
The setpoint is clipped below the wall tops, so the tip cannot be lifted over walls.
Wall friction and contact stiffness are randomized by ``ArmRandomization``.
"""

from __future__ import annotations

from typing import Any, ClassVar

import mujoco
import numpy as np

from sim2real.sim.arm import constants as C
from sim2real.sim.arm.base import ArmTask, add_net_contact_sensor
from sim2real.sim.arm.control import REF_QUAT
from sim2real.sim.arm.ik import solve_ik
from sim2real.sim.arm.maze_layouts import MazeLayout, family, num_walls
from sim2real.sim.core.errors import ConfigError
from sim2real.sim.core.task import PhysicsBatch, StepResult

SIZE = 4
CELL = 0.06
WALL_HEIGHT = 0.03
WALL_THICKNESS = 0.008
CENTER = np.array([0.5, 0.0])
ORIGIN = CENTER - SIZE * CELL / 2
"""Corner of cell (0, 0) nearest the robot (m, world xy)."""
STYLUS_LENGTH = 0.06
"""How far the stylus sticks out beyond the fingertips (m)."""
STYLUS_RADIUS = 0.005
TIP_RADIUS = 0.006
TIP_HEIGHT = 0.012
"""Start height of the tip centre above the table (m)."""
WALL_SOLREF = 0.01
"""Nominal contact time constant of the walls (s)."""
HIDDEN_Z = -0.4
"""Height of unused wall segments (inside the table's base, out of sight and contact)."""
ESCAPE_HEIGHT = WALL_HEIGHT + 0.015
"""Tip above this: it left the maze over a wall; the episode ends as a failure."""


SUCCESS_BONUS = 5.0
ESCAPE_PENALTY = 5.0


class ArmMaze(ArmTask):
    """Reward: progress along the maze path, in cells (``(d_prev - d) / CELL``, a
    potential-based shaping of the geodesic distance ``d`` to the exit), plus
    ``SUCCESS_BONUS`` on reaching the exit cell and minus ``ESCAPE_PENALTY`` when the
    tip leaves over a wall. Ends on success or escape.

    Progress rather than ``-d`` per step: a per-step penalty makes ending the episode
    early (escaping, or tripping the arm's overspeed fault) the best policy.

    Options:
        num_layouts: How many layouts of the family to draw from (default 8).
    """

    name: ClassVar[str] = "maze"
    episode_seconds: ClassVar[float] = 15.0
    uses_gripper: ClassVar[bool] = False
    # The stylus is fixed to the hand (no finger contact), so the fingers just rest on it.
    fixed_gripper_width: ClassVar[float] = 2 * STYLUS_RADIUS
    fault_penalty: ClassVar[float] = ESCAPE_PENALTY
    workspace_low: ClassVar[np.ndarray] = np.array([ORIGIN[0], ORIGIN[1], 0.0])
    workspace_high: ClassVar[np.ndarray] = np.array(
        [ORIGIN[0] + SIZE * CELL, ORIGIN[1] + SIZE * CELL, WALL_HEIGHT - 0.01]
    )

    task_options: ClassVar[tuple[str, ...]] = ("num_layouts",)

    def __init__(self, num_envs: int, action_mode: str | None = None, **options: Any) -> None:
        count = options.get("num_layouts", 8)
        if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= 64:
            raise ConfigError("num_layouts", f"must be a whole number in [1, 64], got {count!r}")
        super().__init__(num_envs, action_mode, **options)
        self.layouts: list[MazeLayout] = family(SIZE, count)
        self.layout_id = np.zeros(num_envs, dtype=int)
        self.force_peak = np.zeros(num_envs)
        self._prev_distance = np.full(num_envs, np.nan)
        self._distance = np.stack([lay.distance for lay in self.layouts])
        self._next = np.stack([lay.next_cell for lay in self.layouts])
        self._walls = np.stack([lay.walls for lay in self.layouts]).astype(float)

    # -- model -------------------------------------------------------------------
    def add_scene(self, spec: mujoco.MjSpec) -> None:
        hand = spec.body("hand")
        stylus = hand.add_body(name="stylus", pos=[0, 0, 0.0584], gravcomp=1.0)
        tip_z = C.FINGERTIP_OFFSET - 0.0584 + STYLUS_LENGTH
        stylus.add_geom(
            name="stylus",
            type=mujoco.mjtGeom.mjGEOM_CAPSULE,
            fromto=[0, 0, 0.005, 0, 0, tip_z],
            size=[STYLUS_RADIUS, 0, 0],
            mass=0.02,
            contype=2,
            conaffinity=5,
            rgba=[0.15, 0.15, 0.15, 1],
        )
        stylus.add_geom(
            name="stylus_tip",
            type=mujoco.mjtGeom.mjGEOM_SPHERE,
            pos=[0, 0, tip_z],
            size=[TIP_RADIUS, 0, 0],
            mass=0.005,
            contype=2,
            conaffinity=5,
            friction=[0.3, 0.005, 0.0001],
            rgba=[0.9, 0.2, 0.2, 1],
        )
        # The controlled point becomes the stylus tip.
        spec.site("ee").pos = [0, 0, 0.0584 + tip_z]

        box = mujoco.mjtGeom.mjGEOM_BOX
        # Walls are softer than the rest of the scene (timeconst 10 ms) so the randomized
        # stiffness can go up by 6x before reaching MuJoCo's 2-physics-step floor.
        wall_style: dict[str, Any] = dict(
            type=box,
            contype=1,
            conaffinity=0,
            friction=[0.5, 0.005, 0.0001],
            solref=[WALL_SOLREF, 1.0],
            rgba=[0.55, 0.6, 0.68, 1],
        )
        half, t, h = SIZE * CELL / 2, WALL_THICKNESS, WALL_HEIGHT
        for name, pos, size in (
            ("wall_boundary_nx", [CENTER[0] - half, CENTER[1], h / 2], [t / 2, half + t / 2, h / 2]),
            ("wall_boundary_px", [CENTER[0] + half, CENTER[1], h / 2], [t / 2, half + t / 2, h / 2]),
            ("wall_boundary_ny", [CENTER[0], CENTER[1] - half, h / 2], [half + t / 2, t / 2, h / 2]),
            ("wall_boundary_py", [CENTER[0], CENTER[1] + half, h / 2], [half + t / 2, t / 2, h / 2]),
        ):
            spec.worldbody.add_geom(name=name, pos=pos, size=size, **wall_style)
        for i in range(num_walls(SIZE)):
            along_x = i >= SIZE * (SIZE - 1)  # walls between rows are long along y
            size = [t / 2, CELL / 2 + t / 2, h / 2] if along_x else [CELL / 2 + t / 2, t / 2, h / 2]
            body = spec.worldbody.add_body(name=f"wall{i}", mocap=True, pos=[0, 0, HIDDEN_Z])
            body.add_geom(name=f"wall{i}", pos=[0, 0, 0], size=size, **wall_style)
        exit_center = ORIGIN + (np.array([SIZE - 1, SIZE - 1]) + 0.5) * CELL
        spec.worldbody.add_geom(
            name="exit_marker",
            type=box,
            pos=[*exit_center, 0.0005],
            size=[CELL / 2 - t, CELL / 2 - t, 0.0005],
            contype=0,
            conaffinity=0,
            rgba=[0.1, 0.8, 0.2, 0.6],
        )
        add_net_contact_sensor(spec, "stylus_contact", "stylus")  # walls, table, anything

    def on_model(self, model: mujoco.MjModel) -> None:
        self._wall_mocap = np.array([model.body_mocapid[model.body(f"wall{i}").id] for i in range(num_walls(SIZE))])

    @staticmethod
    def wall_position(index: int) -> np.ndarray:
        """Centre (m, world) of interior wall segment ``index`` when it stands."""
        n = SIZE
        if index < n * (n - 1):
            r, c = divmod(index, n - 1)
            xy = ORIGIN + np.array([(r + 0.5) * CELL, (c + 1) * CELL])
        else:
            r, c = divmod(index - n * (n - 1), n)
            xy = ORIGIN + np.array([(r + 1) * CELL, (c + 0.5) * CELL])
        return np.array([*xy, WALL_HEIGHT / 2])

    # -- observations ------------------------------------------------------------
    def task_observation_layout(self) -> list[tuple[str, int]]:
        return [("tip_rel_maze", 3), ("exit_rel_tip", 2), ("maze_walls", num_walls(SIZE))]

    def task_observation_noise(self) -> dict[str, float]:
        return {"tip_rel_maze": 0.001, "exit_rel_tip": 0.001}

    def _exit_center(self) -> np.ndarray:
        return ORIGIN + (np.array([SIZE - 1, SIZE - 1]) + 0.5) * CELL

    def task_observe(self, phys: PhysicsBatch) -> np.ndarray:
        tip = self.ee_pos(phys)
        rel = tip - np.array([*ORIGIN, 0.0])
        return np.concatenate([rel, self._exit_center() - tip[:, :2], self._walls[self.layout_id]], axis=1)

    def task_privileged_layout(self) -> list[tuple[str, int]]:
        return [("stylus_contact_count", 1), ("stylus_contact_force", 3)]

    def task_privileged(self, phys: PhysicsBatch) -> np.ndarray:
        return self.sensor(phys, "stylus_contact")

    # -- episode -----------------------------------------------------------------
    def reset_task(self, env_id: int, model: mujoco.MjModel, data: mujoco.MjData, rng: np.random.Generator) -> None:
        layout_id = int(rng.integers(len(self.layouts)))
        self.layout_id[env_id] = layout_id
        self.force_peak[env_id] = 0.0
        self._prev_distance[env_id] = np.nan  # the first step measures progress from its start
        walls = self.layouts[layout_id].walls
        for i, mocap in enumerate(self._wall_mocap):
            data.mocap_pos[mocap] = self.wall_position(i) if walls[i] else [*self.wall_position(i)[:2], HIDDEN_Z]
        start = ORIGIN + (np.array(self.layouts[layout_id].start) + 0.5) * CELL
        start = start + rng.uniform(-0.01, 0.01, 2)
        q = solve_ik(model, data, np.array([*start, TIP_HEIGHT]), REF_QUAT)
        # Exactly the IK solution: the tip must start inside the start cell, clear of walls.
        self.place_arm(data, rng, qpos=q, finger=STYLUS_RADIUS, noise=False)

    def geodesic_distance(self, tip_xy: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Path length (m) from the tip to the exit through the maze, and whether the
        tip is in the exit cell. Inside a cell: moves left times the cell size plus the
        straight distance to the centre of the next cell on the path."""
        cell = np.clip(np.floor((tip_xy - ORIGIN) / CELL).astype(int), 0, SIZE - 1)
        moves = self._distance[self.layout_id, cell[:, 0], cell[:, 1]]
        nxt = self._next[self.layout_id, cell[:, 0], cell[:, 1]]
        to_next = np.linalg.norm(tip_xy - (ORIGIN + (nxt + 0.5) * CELL), axis=1)
        at_exit = moves == 0
        dist = np.where(at_exit, 0.0, (moves - 1) * CELL + to_next)
        return dist, at_exit

    def evaluate_task(self, phys: PhysicsBatch, action: np.ndarray) -> StepResult:
        tip = self.ee_pos(phys)
        dist, at_exit = self.geodesic_distance(tip[:, :2])
        escaped = tip[:, 2] > ESCAPE_HEIGHT
        success = at_exit & ~escaped
        contact = self.sensor(phys, "stylus_contact")
        force = np.linalg.norm(contact[:, 1:4], axis=1)
        self.force_peak = np.maximum(self.force_peak, force)
        prev = np.where(np.isnan(self._prev_distance), dist, self._prev_distance)
        self._prev_distance = dist.copy()
        reward = (prev - dist) / CELL + SUCCESS_BONUS * success - ESCAPE_PENALTY * escaped
        return StepResult(
            reward=reward,
            terminated=success | escaped,
            success=success,
            metrics={
                "ee_distance": dist,
                "contact_force": force,
                "contact_force_peak": self.force_peak.copy(),
                "in_contact": (contact[:, 0] > 0).astype(float),
            },
        )

    def task_state(self, env_id: int) -> dict[str, Any]:
        return {"layout": int(self.layout_id[env_id])}
