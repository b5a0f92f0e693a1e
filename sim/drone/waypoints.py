"""Waypoints: fly a random sequence of waypoints, holding each one briefly.

A waypoint counts as reached after ``hold_seconds`` continuously within 10 cm;
the next one then becomes the target. Success: within 10 cm of the final
waypoint for the last 5 s of the episode.
"""

from __future__ import annotations

from typing import Any, ClassVar

import mujoco
import numpy as np

from sim2real.sim.core.errors import ConfigError
from sim2real.sim.core.task import PhysicsBatch, StepResult
from sim2real.sim.drone.base import DroneTask, add_marker

WAYPOINT_BOX = (np.array([-2.0, -2.0, 0.5]), np.array([2.0, 2.0, 1.8]))
"""m, lower and upper corners of the region waypoints are drawn in."""


class Waypoints(DroneTask):
    """Follow ``n_waypoints`` waypoints; legs are 0.6-1.2 m long in random directions.

    Reward per control step: ``1.5 * reached + exp(-2 d) + 0.5 [d < 0.1 m]`` minus
    the smoothness costs (``reached``: waypoints done so far, so switching to a
    far waypoint never lowers the reward), and ``-10`` on a crash.

    Options:
        n_waypoints: Number of waypoints including the final one (>= 1).
        hold_seconds: How long each intermediate waypoint must be held.
    """

    name: ClassVar[str] = "waypoints"
    episode_seconds: ClassVar[float] = 15.0
    render_camera: ClassVar[str | None] = "follow"
    progress_reward: ClassVar[float] = 1.5

    def __init__(
        self,
        num_envs: int,
        action_mode: str | None = None,
        start: str = "ground",
        n_waypoints: int = 4,
        hold_seconds: float = 0.5,
        **options: Any,
    ) -> None:
        super().__init__(num_envs, action_mode, start, **options)
        if int(n_waypoints) != n_waypoints or not 1 <= n_waypoints <= 10:
            raise ConfigError("n_waypoints", f"must be a whole number in [1, 10], got {n_waypoints}")
        if not np.isfinite(hold_seconds) or not 0.0 <= hold_seconds <= 5.0:
            raise ConfigError("hold_seconds", f"must be in [0, 5] seconds, got {hold_seconds}")
        self.n_waypoints = int(n_waypoints)
        self.hold_seconds = float(hold_seconds)
        self.waypoints = np.zeros((num_envs, self.n_waypoints, 3))
        self.index = np.zeros(num_envs, dtype=np.int64)

    def add_task_bodies(self, spec: mujoco.MjSpec) -> None:
        for k in range(self.n_waypoints):
            final = k == self.n_waypoints - 1
            add_marker(spec, f"waypoint{k}", (0.1, 0.85, 0.2, 0.6) if final else (1.0, 0.55, 0.1, 0.6))

    def build_model(self) -> mujoco.MjModel:
        model = super().build_model()
        self._markers = [self.mocap_index(model, f"waypoint{k}") for k in range(self.n_waypoints)]
        return model

    def task_observation_layout(self) -> list[tuple[str, int]]:
        return [("next_waypoint_offset", 3), ("waypoints_left", 1)]

    def sample_task(self, env_id: int, data: mujoco.MjData, rng: np.random.Generator) -> None:
        low, high = WAYPOINT_BOX
        point = np.array([rng.uniform(-0.5, 0.5), rng.uniform(-0.5, 0.5), rng.uniform(0.8, 1.2)])
        for k in range(self.n_waypoints):
            self.waypoints[env_id, k] = point
            data.mocap_pos[self._markers[k]] = point
            direction = rng.normal(size=3) * np.array([1.0, 1.0, 0.5])
            point = np.clip(point + rng.uniform(0.6, 1.2) * direction / np.linalg.norm(direction), low, high)
        self.index[env_id] = 0
        self.target[env_id] = self.waypoints[env_id, 0]

    def task_observation(self, phys: PhysicsBatch) -> list[np.ndarray]:
        rows = np.arange(phys.batch_size)
        following = self.waypoints[rows, np.minimum(self.index + 1, self.n_waypoints - 1)]
        left = (self.n_waypoints - 1 - self.index) / max(self.n_waypoints - 1, 1)
        return [following - self.target, left[:, None].astype(np.float64)]

    def evaluate(self, phys: PhysicsBatch, action: np.ndarray) -> StepResult:
        error = np.linalg.norm(self.target - phys.qpos[:, :3], axis=1)
        crashed = self.detect_crash(phys)
        held = self.update_tolerance(error)
        final = self.index == self.n_waypoints - 1
        reward = self.progress_reward * self.index + np.exp(-2.0 * error) + 0.5 * (error < self.tolerance)
        reward = np.where(crashed, -self.crash_penalty, reward - self.smoothness_penalty(phys))
        success = final & (held >= self.success_hold_seconds - 1e-9) & ~crashed
        # Advance after scoring this step: the next observation already points at the new target.
        advance = ~final & (held >= self.hold_seconds - 1e-9) & ~crashed
        metrics = {
            "position_error": error,
            "time_in_tolerance": held.copy(),
            "crashed": crashed.astype(np.float64),
            "waypoints_reached": (self.index + advance + (final & (held >= self.hold_seconds))).astype(np.float64),
        }
        if advance.any():
            self.index[advance] += 1
            self.target[advance] = self.waypoints[advance, self.index[advance]]
            self.time_in_tolerance[advance] = 0.0
        return StepResult(reward=reward, terminated=crashed, success=success, metrics=metrics)

    def follow_mission(self, waypoints: np.ndarray, goal: np.ndarray) -> None:
        """A deployed drone's mission (env 0): the sequence ``waypoints [K, 3]`` and the
        current one, ``goal`` (the waypoint nearest it; among equals, the one nearest
        the current index). The sequence may differ in length from training's."""
        wps = np.asarray(waypoints, dtype=float).reshape(-1, 3)
        if wps.shape != self.waypoints.shape[1:] or not np.array_equal(wps, self.waypoints[0]):
            self.n_waypoints = len(wps)
            self.waypoints = np.repeat(wps[None], self.num_envs, axis=0)
        distance = np.linalg.norm(wps - goal, axis=1)
        nearest = np.flatnonzero(distance <= distance.min() + 1e-9)
        self.index[0] = nearest[np.argmin(np.abs(nearest - self.index[0]))]

    def course(self, env_id: int) -> dict[str, Any] | None:
        return {"waypoints": self.waypoints[env_id].tolist()}

    def task_state(self, env_id: int) -> dict[str, Any]:
        return {"waypoints": np.round(self.waypoints[env_id], 4).tolist(), "index": int(self.index[env_id])}
