"""Gates: fly through a course of square gates in order without touching them.

Gates are mocap bodies (square frames with a 0.4 m opening) placed per episode
along a winding course that starts at the landing pad. A gate is passed when the
drone's centre crosses the gate plane in the flight direction inside the
opening; crossing the plane through the frame, or any contact with a gate, is a
collision. The crossing test runs on the segment between consecutive control
steps, so a fast drone cannot skip a gate between two 20 ms samples.
Success: every gate passed in order without a collision (the episode then ends).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import mujoco
import numpy as np

from sim2real.sim.core.errors import ConfigError
from sim2real.sim.core.padding import store_padded
from sim2real.sim.core.task import PhysicsBatch, StepResult
from sim2real.sim.drone import constants as C
from sim2real.sim.drone import gate_path
from sim2real.sim.drone.base import DroneTask, yaw_quat

GATE_OPENING_HALF: float = 0.2
"""m, half the side of the square opening (0.4 m, about 4x the drone's span)."""
GATE_BAR_HALF: float = 0.015
"""m, half the thickness of the frame bars."""
TAKEOFF_HEIGHT: float = 0.3
"""m above the pad where the planned path starts."""


def add_gate(spec: mujoco.MjSpec, name: str) -> None:
    """A mocap gate: four bars around an opening in the body's y-z plane (normal: body x)."""
    body = spec.worldbody.add_body(name=name, mocap=True, pos=[0.0, 0.0, -2.0])
    outer = GATE_OPENING_HALF + GATE_BAR_HALF
    bars = {
        "top": ([0, 0, outer], [GATE_BAR_HALF, outer + GATE_BAR_HALF, GATE_BAR_HALF]),
        "bottom": ([0, 0, -outer], [GATE_BAR_HALF, outer + GATE_BAR_HALF, GATE_BAR_HALF]),
        "left": ([0, outer, 0], [GATE_BAR_HALF, GATE_BAR_HALF, GATE_OPENING_HALF]),
        "right": ([0, -outer, 0], [GATE_BAR_HALF, GATE_BAR_HALF, GATE_OPENING_HALF]),
    }
    for side, (pos, size) in bars.items():
        # conaffinity 1 only: gates touch the drone (contype 1) and nothing else.
        body.add_geom(name=f"{name}_{side}", type=mujoco.mjtGeom.mjGEOM_BOX, pos=pos, size=size,
                      rgba=[1.0, 0.45, 0.05, 1.0], contype=0, conaffinity=1, density=0)


def parse_gate_course(course: Mapping[str, Any]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A gate course's description (:meth:`Gates.course`): the gate centres ``[G, 3]``, their
    normals ``[G, 3]`` (the direction of flight, from ``gate_yaw``) and the planned path's
    start (x, y from ``start``, ``start_height``).

    Raises:
        ValueError: missing or malformed fields, non-finite values, 0 or over 8 gates.
    """
    try:
        centres = np.asarray(course["gates"], dtype=float).reshape(-1, 3)
        yaw = np.asarray(course["gate_yaw"], dtype=float).reshape(-1)
        start = np.array([*np.asarray(course.get("start", [0.0, 0.0]), dtype=float).reshape(2),
                          float(course.get("start_height", TAKEOFF_HEIGHT))])
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"malformed gate course ({exc!r})") from None
    if not 1 <= len(centres) <= 8 or len(yaw) != len(centres):
        raise ValueError(f"a gate course needs 1-8 gates, each with a yaw (got {len(centres)} and {len(yaw)})")
    if not (np.all(np.isfinite(centres)) and np.all(np.isfinite(yaw)) and np.all(np.isfinite(start))):
        raise ValueError("non-finite value in the gate course")
    return centres, np.stack([np.cos(yaw), np.sin(yaw), np.zeros_like(yaw)], axis=1), start


def _wrap(angle: float) -> float:
    return float(np.arctan2(np.sin(angle), np.cos(angle)))


def _next_gate(previous: np.ndarray, heading: float, first: bool, rng: np.random.Generator) -> tuple[np.ndarray, float]:
    """The next gate's centre and heading (the direction it is flown through).

    The first gate lies in any direction from the pad; later ones turn by at most
    45 degrees, biased toward the arena's middle the farther out the course is,
    so courses wind around the pad (all gates within ~6 m of it: 20k sampled
    8-gate courses reached 5.9 m at most) instead of running into the geofence.
    """
    if first:
        candidate = rng.uniform(-np.pi, np.pi)
        step = rng.uniform(1.5, 2.0)
    else:
        max_turn = np.pi / 4
        inward = _wrap(np.arctan2(-previous[1], -previous[0]) - heading)
        pull = np.clip((np.linalg.norm(previous[:2]) - 0.5) / 2.0, 0.0, 1.0)
        turn = pull * np.clip(inward, -max_turn, max_turn) + (1.0 - pull) * rng.uniform(-max_turn, max_turn)
        candidate = heading + turn
        step = rng.uniform(1.3, 2.0)
    xy = previous[:2] + step * np.array([np.cos(candidate), np.sin(candidate)])
    return np.array([xy[0], xy[1], rng.uniform(0.7, 1.4)]), _wrap(candidate)


class Gates(DroneTask):
    """Pass ``n_gates`` gates in order.

    Course: the first gate 1.5-2 m from the pad; each next one 1.3-2 m further,
    the heading turning by up to 45 degrees per gate, heights 0.7-1.4 m. Each gate
    faces the direction it is approached from.

    Reward per control step: ``5 * (progress toward the next gate centre, m)``,
    ``+5`` per gate passed, minus the smoothness costs; ``-10`` on a crash.

    Options:
        n_gates: Number of gates (1-8).
        guidance: ``path`` (default, the hierarchy's): the position controller's target
            (and the observed target offset) is a carrot ``lookahead`` metres along the
            gate planner's path (:mod:`~sim2real.sim.drone.gate_path`), which crosses
            each gate along its normal; ``gates``: the next gate's centre.
        lookahead: Carrot distance (m) along the path (``path`` guidance).
    """

    name: ClassVar[str] = "gates"
    episode_seconds: ClassVar[float] = 15.0
    render_camera: ClassVar[str | None] = "follow"
    gate_bonus: ClassVar[float] = 5.0
    progress_gain: ClassVar[float] = 5.0

    def __init__(
        self, num_envs: int, action_mode: str | None = None, start: str = "ground", n_gates: int = 4,
        guidance: str = "path", lookahead: float = 0.6, **options: Any
    ) -> None:
        super().__init__(num_envs, action_mode, start, **options)
        if int(n_gates) != n_gates or not 1 <= n_gates <= 8:
            raise ConfigError("n_gates", f"must be a whole number in [1, 8], got {n_gates}")
        if guidance not in ("gates", "path"):
            raise ConfigError("guidance", f"must be gates or path, got {guidance!r}")
        if not np.isfinite(lookahead) or not 0.1 <= lookahead <= 3.0:
            raise ConfigError("lookahead", f"must be in [0.1, 3] m, got {lookahead}")
        self.guidance, self.lookahead = guidance, float(lookahead)
        self.path = np.zeros((num_envs, 1, 3))
        """The planned path's samples per env (``path`` guidance), padded with its last."""
        self.path_count = np.ones(num_envs, dtype=np.int64)
        self.progress = np.zeros(num_envs, dtype=np.int64)
        """Index of the path sample nearest the drone (never decreases)."""
        self.n_gates = int(n_gates)
        self.gate_pos = np.zeros((num_envs, self.n_gates, 3))
        self.gate_normal = np.zeros((num_envs, self.n_gates, 3))
        self.index = np.zeros(num_envs, dtype=np.int64)
        self.prev_pos = np.zeros((num_envs, 3))
        self.prev_distance = np.zeros(num_envs)
        self._course_seen: Mapping[str, Any] | None = None
        self._course_parsed: tuple[np.ndarray, np.ndarray] = (self.gate_pos[0], self.gate_normal[0])

    def add_task_bodies(self, spec: mujoco.MjSpec) -> None:
        for k in range(self.n_gates):
            add_gate(spec, f"gate{k}")

    def build_model(self) -> mujoco.MjModel:
        model = super().build_model()
        self._gates = [self.mocap_index(model, f"gate{k}") for k in range(self.n_gates)]
        return model

    def task_observation_layout(self) -> list[tuple[str, int]]:
        return [("gate_normal", 3), ("next_gate_offset", 3), ("gates_left", 1)]

    def sample_task(self, env_id: int, data: mujoco.MjData, rng: np.random.Generator) -> None:
        heading = rng.uniform(-np.pi, np.pi)
        point = np.zeros(3)
        for k in range(self.n_gates):
            point, heading = _next_gate(point, heading, first=k == 0, rng=rng)
            self.gate_pos[env_id, k] = point
            self.gate_normal[env_id, k] = [np.cos(heading), np.sin(heading), 0.0]
            data.mocap_pos[self._gates[k]] = point
            data.mocap_quat[self._gates[k]] = yaw_quat(heading)
        self.index[env_id] = 0
        self.target[env_id] = self.gate_pos[env_id, 0]
        self.prev_distance[env_id] = np.nan  # marks the episode's first step: no segment to test yet
        if self.guidance == "path":
            self._plan(env_id)

    def _plan(self, env_id: int) -> None:
        """The gate planner's path from above the pad, the carrot at its start."""
        path = gate_path.plan_through_gates(np.array([0.0, 0.0, TAKEOFF_HEIGHT]), self.gate_pos[env_id],
                                            self.gate_normal[env_id])
        self.path = store_padded(self.path, env_id, path)
        self.path_count[env_id] = len(path)
        self.progress[env_id] = 0
        self.target[env_id] = gate_path.carrot(self.path[env_id : env_id + 1], self.path_count[env_id : env_id + 1],
                                               self.progress[env_id : env_id + 1], self.lookahead)[0]

    def task_observation(self, phys: PhysicsBatch) -> list[np.ndarray]:
        rows = np.arange(phys.batch_size)
        current = np.minimum(self.index, self.n_gates - 1)
        following = np.minimum(self.index + 1, self.n_gates - 1)
        offset = self.gate_pos[rows, following] - self.gate_pos[rows, current]
        left = (self.n_gates - self.index) / self.n_gates
        return [self.gate_normal[rows, current], offset, left[:, None].astype(np.float64)]

    def _crossing(self, pos: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """For the next gate: (crossed forward inside the opening, crossed its plane
        through the frame in either direction, distance to its centre)."""
        rows = np.arange(len(pos))
        k = np.minimum(self.index, self.n_gates - 1)
        centre, normal = self.gate_pos[rows, k], self.gate_normal[rows, k]
        x0 = np.einsum("bi,bi->b", self.prev_pos - centre, normal)
        x1 = np.einsum("bi,bi->b", pos - centre, normal)
        crossed = np.sign(x0) != np.sign(x1)
        frac = np.where(crossed, x0 / np.where(crossed, x0 - x1, 1.0), 0.0)
        point = self.prev_pos + frac[:, None] * (pos - self.prev_pos) - centre
        lateral = np.abs(point[:, 0] * -normal[:, 1] + point[:, 1] * normal[:, 0])
        vertical = np.abs(point[:, 2])
        inside = (lateral < GATE_OPENING_HALF) & (vertical < GATE_OPENING_HALF)
        # The frame plus the drone's half-span: crossing there means hitting a bar.
        reach = GATE_OPENING_HALF + 2 * GATE_BAR_HALF + C.COLLISION_HALF_SIZE[0]
        on_frame = crossed & ~inside & (lateral < reach) & (vertical < reach)
        passed = crossed & inside & (x0 < 0) & (self.index < self.n_gates)
        return passed, on_frame, np.linalg.norm(pos - centre, axis=1)

    def evaluate(self, phys: PhysicsBatch, action: np.ndarray) -> StepResult:
        pos = phys.qpos[:, :3]
        fresh = np.isnan(self.prev_distance)  # first step of an episode: no segment yet
        self.prev_pos[fresh] = pos[fresh]
        passed, on_frame, distance = self._crossing(pos)
        prev_distance = np.where(fresh, distance, self.prev_distance)
        crashed = self.detect_crash(phys) | on_frame
        progress = self.progress_gain * (prev_distance - distance) + self.gate_bonus * passed
        reward = np.where(crashed, -self.crash_penalty, progress - self.smoothness_penalty(phys))

        self.index = self.index + passed
        done = self.index >= self.n_gates
        rows = np.arange(len(pos))
        k = np.minimum(self.index, self.n_gates - 1)
        gate = self.gate_pos[rows, k]
        self.prev_pos = pos.copy()
        self.prev_distance = np.linalg.norm(pos - gate, axis=1)
        held = self.update_tolerance(self.prev_distance)
        if self.guidance == "path":  # the position controller follows the carrot
            self.progress = gate_path.advance_along(self.path, self.path_count, self.progress, pos)
            self.target = gate_path.carrot(self.path, self.path_count, self.progress, self.lookahead)
        else:
            self.target = gate
        return StepResult(
            reward=reward,
            terminated=crashed | done,
            success=done & ~crashed,
            metrics={
                "position_error": self.prev_distance.copy(),
                "time_in_tolerance": held.copy(),
                "crashed": crashed.astype(np.float64),
                "gates_passed": self.index.astype(np.float64),
            },
        )

    def course(self, env_id: int) -> dict[str, Any] | None:
        normal = self.gate_normal[env_id]
        return {"gates": self.gate_pos[env_id].tolist(), "gate_yaw": np.arctan2(normal[:, 1], normal[:, 0]).tolist(),
                "start": [0.0, 0.0], "start_height": TAKEOFF_HEIGHT}

    def follow_course(self, course: Mapping[str, Any], path: np.ndarray | None, pos: np.ndarray) -> None:
        """A deployed drone's course (env 0 of a one-env task), tracked as :meth:`evaluate`
        tracks it: the gates from ``course`` (a new course starts at its first gate), the
        planner's ``path`` (``path`` guidance; a new one is followed from its start),
        then, at position ``pos``: a gate crossed moves on to the next, and the target (the
        carrot, or the next gate's centre) follows.

        Raises:
            ValueError: a malformed course, or ``path`` guidance without a valid path.
        """
        if course is not self._course_seen:  # a new message: parse it once, not every tick
            self._course_parsed, self._course_seen = parse_gate_course(course)[:2], course
        centres, normals = self._course_parsed
        if centres.shape != self.gate_pos.shape[1:] or not (np.allclose(centres, self.gate_pos[0], atol=1e-9)
                                                            and np.allclose(normals, self.gate_normal[0], atol=1e-9)):
            self.n_gates = len(centres)
            self.gate_pos, self.gate_normal = centres[None].copy(), normals[None].copy()
            self.index[0], self.prev_distance[0] = 0, np.nan
        if self.guidance == "path":
            path = np.asarray(path if path is not None else np.zeros((0, 3)), dtype=float)
            if path.ndim != 2 or path.shape[1] != 3 or not len(path) or not np.all(np.isfinite(path)):
                raise ValueError("path guidance needs the planner's path: [K, 3] finite samples")
            if path.shape[0] != self.path_count[0] or not np.array_equal(path, self.path[0, : len(path)]):
                self.path = store_padded(self.path, 0, path)
                self.path_count[0], self.progress[0] = len(path), 0
        pos = np.asarray(pos, dtype=float).reshape(1, 3)
        if np.isnan(self.prev_distance[0]):
            self.prev_pos[0] = pos[0]
        passed, _, _ = self._crossing(pos)
        self.index = self.index + passed
        gate = self.gate_pos[0, min(int(self.index[0]), self.n_gates - 1)]
        self.prev_pos[0], self.prev_distance[0] = pos[0], np.linalg.norm(pos[0] - gate)
        if self.guidance == "path":
            self.progress = gate_path.advance_along(self.path, self.path_count, self.progress, pos)
            self.target = gate_path.carrot(self.path, self.path_count, self.progress, self.lookahead)
        else:
            self.target[0] = gate

    def task_state(self, env_id: int) -> dict[str, Any]:
        normal = self.gate_normal[env_id]
        return {
            "gates": np.round(self.gate_pos[env_id], 4).tolist(),
            "gate_yaw": np.round(np.arctan2(normal[:, 1], normal[:, 0]), 4).tolist(),
            "passed": int(self.index[env_id]),
        }
