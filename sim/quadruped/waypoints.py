"""Hierarchical locomotion in confined 3D spaces (after "Dexterous Legged Locomotion
in Confined 3D Spaces"): a classical planner turns a seeded course of tunnels,
low ceilings and barriers into local waypoints; the policy follows them end to
end with joint targets, crouching where a waypoint's height asks for it. Success
is reaching the last waypoint (the goal).
"""

from __future__ import annotations

from typing import Any, ClassVar

import mujoco
import numpy as np

from sim2real.sim.core.errors import ConfigError
from sim2real.sim.core.layout import layout_slices
from sim2real.sim.core.padding import store_padded
from sim2real.sim.core.task import BatchRng, PhysicsBatch, StepResult
from sim2real.sim.quadruped import frames, layouts, planner, steering
from sim2real.sim.quadruped.base import BaseState, QuadrupedTask
from sim2real.sim.quadruped.scene import add_flat_floor

# name: (position in the trunk frame, ray direction)
RANGEFINDERS: dict[str, tuple[tuple[float, float, float], tuple[float, float, float]]] = {
    "front": ((0.34, 0.0, 0.0), (1.0, 0.0, 0.0)),
    "front_up": ((0.30, 0.0, 0.04), (0.866, 0.0, 0.5)),
    "front_left": ((0.30, 0.03, 0.0), (0.766, 0.643, 0.0)),
    "front_right": ((0.30, -0.03, 0.0), (0.766, -0.643, 0.0)),
    "left": ((0.0, 0.05, 0.03), (0.0, 1.0, 0.0)),
    "right": ((0.0, -0.05, 0.03), (0.0, -1.0, 0.0)),
    "up": ((0.0, 0.0, 0.06), (0.0, 0.0, 1.0)),
    "up_front": ((0.25, 0.0, 0.06), (0.0, 0.0, 1.0)),
    "down": ((0.0, 0.0, -0.06), (0.0, 0.0, -1.0)),
}
MAX_RANGE = 2.0  # m; no hit or farther reads as this
NUM_WAYPOINTS_OBSERVED = 3
REACH_RADIUS = 0.25  # m (xy) at which the current waypoint counts as reached
FALLEN_HEIGHT = 0.1  # m; a trunk this low is lying on the floor

WAYPOINT_WEIGHTS: dict[str, float] = {
    "waypoint_velocity": 2.0,  # speed towards the current waypoint, capped at target_speed
    "heading": 0.3,  # cos of the angle between heading and the waypoint direction
    "over_height": -20.0,  # metres the trunk is above the height the waypoint allows
    "waypoint_reached": 50.0,  # x control_dt: 1.0 per waypoint
    "goal_reached": 250.0,  # x control_dt: 5.0 at the goal
    "trunk_collision": -5.0,
    "feet_air_time": 0.5,
    "lin_vel_z": -0.5,  # crouching needs vertical motion; penalise it less than on open ground
    "ang_vel_xy": -0.05,
    "orientation": -1.0,
    "torques": -2e-4,
    "dof_acc": -2.5e-7,
    "action_rate": -0.01,
    "dof_pos_limits": -10.0,
    "dof_vel_limits": -1.0,
    "feet_slip": -0.1,
    "termination": -50.0,
}


class Waypoints(QuadrupedTask):
    """Follow planner waypoints through a confined course to its goal.

    Options (besides :class:`QuadrupedTask`'s):
        num_sections: Obstacle sections per course (1-4).
        section_kinds: Which of ``tunnel``, ``low_ceiling``, ``low_tunnel``, ``slalom`` to use.
        waypoint_spacing: Metres between waypoints along the planned path.
        target_speed: Speed (m/s) above which moving to a waypoint earns nothing more.
        show_waypoints: Draw the waypoints as discs on the floor (for pictures and
            videos; off by default because they slow the rangefinders down).
        guidance: ``planner``: the planner's waypoints (the hierarchy); ``goal``: no
            planner, the goal alone at walking height (the end-to-end comparison: the
            policy finds its way with the rangefinders).
        reference_crouch: Whether the gait reference crouches for low waypoints
            (``gait_residual``; off for a velocity policy steered along the path).

    In ``gait_residual`` mode the trot reference steps for the twist and crouch that
    pure pursuit of the observed waypoints asks for (:mod:`.steering`), and the policy
    sees them (observation block ``reference``): the hierarchy's follower learns the
    corrections (balance, foot placement, clearing walls and ceilings).
    """

    name: ClassVar[str] = "waypoints"
    action_modes: ClassVar[tuple[str, ...]] = ("joint_pos", "gait_residual")
    render_camera: ClassVar[str | None] = "chase"
    REWARD_WEIGHTS: ClassVar[dict[str, float]] = WAYPOINT_WEIGHTS
    TRUNK_CONTACT_ENDS_EPISODE: ClassVar[bool] = False
    episode_seconds: ClassVar[float] = 30.0  # three sections are 8-10 m of path: 16 s at 0.6 m/s

    def __init__(
        self,
        num_envs: int,
        action_mode: str | None = None,
        num_sections: int = 3,
        section_kinds: tuple[str, ...] | list[str] = layouts.SECTION_KINDS,
        waypoint_spacing: float = 0.4,
        target_speed: float = 0.6,
        show_waypoints: bool = False,
        guidance: str = "planner",
        reference_crouch: bool = True,
        **options: Any,
    ) -> None:
        super().__init__(num_envs, action_mode, **options)
        if int(num_sections) != num_sections or not 1 <= num_sections <= layouts.MAX_SECTIONS:
            raise ConfigError(
                "num_sections", f"must be a whole number in [1, {layouts.MAX_SECTIONS}], got {num_sections}"
            )
        kinds = tuple(section_kinds)
        if not kinds or any(k not in layouts.SECTION_KINDS for k in kinds):
            raise ConfigError("section_kinds", f"choose one or more of {layouts.SECTION_KINDS}, got {list(kinds)}")
        if not np.isfinite(waypoint_spacing) or not 0.1 <= waypoint_spacing <= 2.0:
            raise ConfigError("waypoint_spacing", f"must be in [0.1, 2.0] m, got {waypoint_spacing}")
        if not np.isfinite(target_speed) or not 0.05 <= target_speed <= 2.0:
            raise ConfigError("target_speed", f"must be in [0.05, 2.0] m/s, got {target_speed}")
        if guidance not in ("planner", "goal"):
            raise ConfigError("guidance", f"must be planner or goal, got {guidance!r}")
        if not isinstance(reference_crouch, bool):
            raise ConfigError("reference_crouch", f"must be true or false, got {reference_crouch!r}")
        self.guidance = guidance
        self.reference_crouches = reference_crouch
        self.show_waypoints = bool(show_waypoints)
        self.num_sections = int(num_sections)
        self.section_kinds = kinds
        self.spacing = float(waypoint_spacing)
        self.target_speed = float(target_speed)
        self.pursuit = steering.PursuitGains(speed=self.target_speed, crouched_speed=0.6 * self.target_speed)
        self.layouts: list[layouts.Layout | None] = [None] * num_envs
        self.waypoints: list[np.ndarray] = [np.zeros((1, 3))] * num_envs
        # The same waypoints padded into one array (by repeating the last) for batched lookups.
        self._padded = np.zeros((num_envs, 1, 3))
        self._count = np.ones(num_envs, dtype=int)
        self._goal = np.zeros((num_envs, 2))
        self._rows = np.arange(num_envs)[:, None]
        self.index = np.zeros(num_envs, dtype=int)
        self._prev_index = np.zeros(num_envs, dtype=int)
        self.command = np.zeros((num_envs, 3))
        """The pure-pursuit twist the gait reference steps for (gait_residual mode)."""
        self.crouch = np.zeros(num_envs)
        """The pure-pursuit crouch (m) of the gait reference (gait_residual mode)."""

    # -- model ---------------------------------------------------------------------------
    def build_world(self, spec: mujoco.MjSpec) -> None:
        add_flat_floor(spec)
        layouts.add_course(spec, markers=self.show_waypoints)
        trunk = spec.body("trunk")
        # Behind and above, looking down the course: the side camera would look through a wall.
        trunk.add_camera(
            name="chase",
            mode=mujoco.mjtCamLight.mjCAMLIGHT_TRACKCOM,
            pos=[-1.1, -0.35, 0.75],
            xyaxes=[0.3, -0.954, 0.0, 0.53, 0.166, 0.831],
        )
        for name, (pos, direction) in RANGEFINDERS.items():
            quat = np.zeros(4)
            mujoco.mju_quatZ2Vec(quat, np.asarray(direction, dtype=float))
            trunk.add_site(name=f"range_{name}", pos=list(pos), quat=list(quat), group=4)
            sensor = spec.add_sensor(
                name=f"range_{name}",
                type=mujoco.mjtSensor.mjSENS_RANGEFINDER,
                objtype=mujoco.mjtObj.mjOBJ_SITE,
                objname=f"range_{name}",
            )
            sensor.intprm[0] = 1  # report the distance only

    def _index(self, model: mujoco.MjModel) -> None:
        super()._index(model)
        self.range_idx = self._sensor_index([f"range_{n}" for n in RANGEFINDERS])

    # -- layouts -------------------------------------------------------------------------
    def present_layout(self) -> list[tuple[str, int]]:
        return [
            ("base_lin_vel", 3),
            ("base_ang_vel", 3),
            ("projected_gravity", 3),
            ("joint_pos", 12),
            ("joint_vel", 12),
            ("last_action", 12),
            ("waypoints", 3 * NUM_WAYPOINTS_OBSERVED),
            ("ranges", len(RANGEFINDERS)),
            *([("reference", 4), ("gait_clock", 2)] if self.gait is not None else []),
        ]

    def privileged_layout(self) -> list[tuple[str, int]]:
        return [*super().privileged_layout(), ("trunk_height", 1), ("trunk_contact", 1)]

    def observation_noise(self) -> np.ndarray:
        noise = super().observation_noise()
        noise[layout_slices(self.present_layout())["ranges"]] = 0.02  # rangefinder noise (m)
        return noise

    # -- episode -----------------------------------------------------------------------
    def reset_task(self, env_id: int, model: mujoco.MjModel, data: mujoco.MjData, rng: np.random.Generator) -> None:
        layout = layouts.generate(rng, self.num_sections, self.section_kinds)
        self.layouts[env_id] = layout
        if self.guidance == "planner":
            wps = planner.plan(layout, np.zeros(2), self.spacing)
        else:
            wps = np.array([[*layout.goal, planner.WALK_HEIGHT]])
        self.set_path(env_id, wps)
        layouts.place(layout, model, data, wps)

    def set_path(self, env_id: int, waypoints: np.ndarray) -> None:
        """Follow ``waypoints [K, 3]`` (x, y, allowed trunk height; the last is the goal)
        from the first: a new episode's plan, or a deployed robot's new path."""
        wps = np.asarray(waypoints, dtype=float).reshape(-1, 3)
        self.waypoints[env_id] = wps
        self._padded = store_padded(self._padded, env_id, wps)
        self._count[env_id] = len(wps)
        self._goal[env_id] = wps[-1, :2]
        self.index[env_id] = 0
        self._prev_index[env_id] = 0
        self.command[env_id] = 0.0
        self.crouch[env_id] = 0.0

    def pass_reached(self, pos_xy: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Advance past the waypoints within :data:`REACH_RADIUS` of ``pos_xy [B, 2]``
        (a fast robot may pass two in one step; at most three per call). Returns the
        current target ``[B, 3]`` and the xy vector to it."""
        counts, rows = self._count, self._rows[:, 0]
        passed = 0
        while True:
            target = self._padded[rows, np.minimum(self.index, counts - 1)]
            to_target = target[:, :2] - pos_xy
            reached = ((to_target * to_target).sum(axis=1) < REACH_RADIUS**2) & (self.index < counts)
            if passed == 3 or not reached.any():
                return target, to_target  # both belong to the final index
            self.index += reached
            passed += 1

    def spawn(self, env_id: int, rng: np.random.Generator) -> tuple[np.ndarray, float]:
        # Roughly facing down the course: finding the way is the planner's job.
        return np.array([0.0, 0.0, 0.297]), float(rng.uniform(-0.5, 0.5))

    # -- observation ---------------------------------------------------------------------
    def current_targets(self, k: int = NUM_WAYPOINTS_OBSERVED) -> np.ndarray:
        """``[B, k, 3]`` the current and next waypoints (the last repeats at the end)."""
        idx = np.minimum(self.index[:, None] + np.arange(k), self._count[:, None] - 1)
        return self._padded[self._rows, idx]

    def reference_twist(self) -> np.ndarray:
        return self.command

    def reference_crouch(self) -> np.ndarray | None:
        return self.crouch if self.gait is not None else None

    def after_step(self, phys: PhysicsBatch, rng: BatchRng) -> None:
        self.advance_reference()  # with the twist that was just acted on

    def ranges(self, phys: PhysicsBatch) -> np.ndarray:
        r = phys.sensordata[:, self.range_idx]
        return np.where((r < 0) | (r > MAX_RANGE), MAX_RANGE, r)

    def observation_blocks(self, phys: PhysicsBatch) -> dict[str, np.ndarray]:
        st = self.base_state(phys)
        targets = self.current_targets()
        rel_xy = frames.world_to_heading(st.yaw, targets[:, :, :2] - st.pos[:, None, :2])
        rel_z = targets[:, :, 2:] - st.pos[:, None, 2:]
        blocks = {
            **self.proprioception(st),
            "waypoints": np.concatenate([rel_xy, rel_z], axis=2),
            "ranges": self.ranges(phys),
        }
        if self.gait is not None:  # the next control period's reference, from what is observed
            self.command, crouch = steering.pursue(rel_xy, targets[:, :, 2], self.index >= self._count,
                                                         self.pursuit)
            self.crouch = crouch if self.reference_crouches else np.zeros_like(crouch)
            blocks["reference"] = np.concatenate([self.command, self.crouch[:, None]], axis=1)
        return blocks

    def privileged_blocks(self, phys: PhysicsBatch) -> dict[str, np.ndarray]:
        st = self.base_state(phys)
        return {
            **super().privileged_blocks(phys),
            "trunk_height": st.pos[:, 2],
            "trunk_contact": self.trunk_contact(phys).astype(float),
        }

    # -- reward --------------------------------------------------------------------------
    def fallen(self, st: BaseState, phys: PhysicsBatch) -> np.ndarray:
        return super().fallen(st, phys) | (st.pos[:, 2] < FALLEN_HEIGHT)

    def evaluate(self, phys: PhysicsBatch, action: np.ndarray) -> StepResult:
        st = self.base_state(phys)
        fell = self.fallen(st, phys)
        # Advance past reached waypoints first, so the reward looks at the next one.
        counts = self._count
        target, to_target = self.pass_reached(st.pos[:, :2])
        at_goal = self.index >= counts
        direction = to_target / np.maximum(np.sqrt((to_target * to_target).sum(axis=1)), 1e-6)[:, None]
        world_vel = phys.qvel[:, 0:2]  # the free joint's linear velocity is in the world frame
        terms = self.locomotion_terms(st, phys, action, fell, moving=~at_goal)
        terms["waypoint_velocity"] = np.where(
            at_goal, 0.0, np.minimum((world_vel * direction).sum(1), self.target_speed)
        )
        heading_cos = np.cos(st.yaw) * direction[:, 0] + np.sin(st.yaw) * direction[:, 1]
        terms["heading"] = np.where(at_goal, 0.0, heading_cos)
        terms["over_height"] = np.clip(st.pos[:, 2] - target[:, 2], 0.0, None)
        terms["waypoint_reached"] = (self.index - self._prev_index).astype(float)
        terms["goal_reached"] = at_goal.astype(float)
        terms["trunk_collision"] = self.trunk_contact(phys).astype(float)
        self._prev_index = self.index.copy()
        return StepResult(
            reward=self.weighted_sum(terms),
            terminated=fell | at_goal,
            success=at_goal & ~fell,
            metrics={
                "waypoints_reached": np.minimum(self.index, counts).astype(float),
                "waypoint_fraction": np.minimum(self.index, counts) / counts,
                "distance_to_goal": np.linalg.norm(self._goal - st.pos[:, :2], axis=1),
                "trunk_collision": terms["trunk_collision"],
                "fell": fell.astype(float),
            },
        )

    def course(self, env_id: int) -> dict[str, Any] | None:
        layout = self.layouts[env_id]
        # The spawn (spawn()) is where a new course's path starts.
        return None if layout is None else {**layout.to_dict(), "start": [0.0, 0.0]}

    def task_state(self, env_id: int) -> dict[str, Any]:
        layout = self.layouts[env_id]
        sections = (
            []
            if layout is None
            else [
                {
                    "kind": s.kind,
                    "x0": round(s.x0, 3),
                    "length": s.length,
                    **({"width": round(s.width, 3), "center": round(s.center, 3)} if np.isfinite(s.width) else {}),
                    **({"ceiling": round(s.ceiling, 3)} if np.isfinite(s.ceiling) else {}),
                }
                for s in layout.sections
            ]
        )
        return {
            "sections": sections,
            "waypoints": self.waypoints[env_id].round(3).tolist(),
            "next_waypoint": int(self.index[env_id]),
        }
