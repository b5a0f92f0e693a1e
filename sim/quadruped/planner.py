"""The classical planner of the waypoints task (the hierarchy's upper level).

The cheapest path (Dijkstra) on a 5 cm occupancy grid of the course, with walls
inflated by the robot's half width and a cost that rises near walls so paths keep to
the middle of passages. The path is cut into waypoints every ``spacing`` metres; each waypoint
carries the highest trunk height the ceilings around it allow (the crouch
command of the hierarchy), capped at the normal walking height.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from sim2real.sim.quadruped import constants as c
from sim2real.sim.quadruped.layouts import CORRIDOR_HALF_WIDTH, Layout

RESOLUTION = 0.05
ROBOT_HALF_WIDTH = 0.17  # feet at +-0.164 m with the hips straight
CLEARANCE_COST = 4.0  # extra cost per cell at the inflated wall, fading over 0.15 m
WALK_HEIGHT = 0.27  # trunk height target in the open (the servo sags below the 0.287 m kinematic pose)
CEILING_MARGIN = 0.025  # m between the trunk top and a ceiling
HALF_BODY_LENGTH = 0.34  # trunk + head reach from the trunk centre along x


class NoPathError(ValueError):
    """The course has no passage wide enough for the robot."""


def plan(layout: Layout, start: np.ndarray, spacing: float = 0.4, goal: np.ndarray | None = None) -> np.ndarray:
    """Waypoints ``[K, 3]`` (x, y, allowed trunk height) from ``start`` to ``goal`` (None:
    the course's)."""
    goal = layout.goal if goal is None else np.asarray(goal, dtype=float)[:2]
    x_lo, x_hi = min(start[0], goal[0], 0.0) - 0.5, max(start[0], goal[0], layout.goal[0]) + 0.5
    xs = np.arange(x_lo, x_hi + RESOLUTION / 2, RESOLUTION)
    ys = np.arange(-CORRIDOR_HALF_WIDTH, CORRIDOR_HALF_WIDTH + RESOLUTION / 2, RESOLUTION)
    gx, gy = np.meshgrid(xs, ys, indexing="ij")
    clearance = np.full(gx.shape, np.inf)  # distance to the nearest wall footprint
    for xmin, xmax, ymin, ymax in layout.wall_boxes():
        dx = np.maximum(np.maximum(xmin - gx, gx - xmax), 0.0)
        dy = np.maximum(np.maximum(ymin - gy, gy - ymax), 0.0)
        clearance = np.minimum(clearance, np.hypot(dx, dy))
    return plan_on_grid(xs, ys, clearance, start, goal, spacing, layout.ceiling_at)


def plan_on_grid(xs: np.ndarray, ys: np.ndarray, clearance: np.ndarray, start: np.ndarray, goal: np.ndarray,
                 spacing: float = 0.4, ceiling_at: Callable[[np.ndarray], np.ndarray] | None = None) -> np.ndarray:
    """Waypoints ``[K, 3]`` from ``start`` to ``goal`` on a grid (cell centres ``xs`` by
    ``ys``, m) whose ``clearance [len(xs), len(ys)]`` is each cell's distance (m) to the
    nearest obstacle. ``ceiling_at(x [N, M]) -> heights`` gives the ceilings' undersides
    (None: open sky, every waypoint at walking height).

    Raises:
        NoPathError: no passage wide enough for the robot.
    """
    free = clearance > ROBOT_HALF_WIDTH
    cost = 1.0 + CLEARANCE_COST * np.clip(1.0 - (clearance - ROBOT_HALF_WIDTH) / 0.15, 0.0, 1.0)

    def cell(p: np.ndarray) -> tuple[int, int]:
        i = int(np.clip(round((p[0] - xs[0]) / (xs[1] - xs[0])), 0, len(xs) - 1))
        j = int(np.clip(round((p[1] - ys[0]) / (ys[1] - ys[0])), 0, len(ys) - 1))
        return i, j

    cells = _shortest_path(free, cost, cell(start), cell(goal))
    path = np.array([(xs[i], ys[j]) for i, j in cells])
    path[0], path[-1] = start[:2], goal[:2]
    return _waypoints(path, spacing, ceiling_at)


STEPS = ((1, 0, 1.0), (-1, 0, 1.0), (0, 1, 1.0), (0, -1, 1.0),
         (1, 1, math.sqrt(2.0)), (1, -1, math.sqrt(2.0)), (-1, 1, math.sqrt(2.0)), (-1, -1, math.sqrt(2.0)))
"""The grid's moves (di, dj, length in cells): 8-connected."""


def _shortest_path(free: np.ndarray, cost: np.ndarray, start: tuple[int, int],
                   goal: tuple[int, int]) -> list[tuple[int, int]]:
    """The cheapest 8-connected path of free cells from ``start`` to ``goal``; a move
    costs its length times the mean of its two cells' costs.

    scipy's Dijkstra, in C over a graph built with numpy: the sim bridge plans each new
    course inside its control period, where a plan in Python (A*, 7 ms typical, 30-42 ms
    at worst) stalled the state stream past the filter's watchdog."""
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import dijkstra

    free = free.copy()
    free[start] = free[goal] = True  # the robot stands where it stands
    rows, cols = free.shape
    index = np.arange(rows * cols).reshape(rows, cols)
    sources, targets, weights = [], [], []
    for di, dj, length in STEPS:
        here = (slice(max(0, -di), rows - max(0, di)), slice(max(0, -dj), cols - max(0, dj)))
        there = (slice(here[0].start + di, here[0].stop + di), slice(here[1].start + dj, here[1].stop + dj))
        ok = free[here] & free[there]
        sources.append(index[here][ok])
        targets.append(index[there][ok])
        weights.append((length * 0.5 * (cost[here] + cost[there]))[ok])
    graph = csr_matrix((np.concatenate(weights), (np.concatenate(sources), np.concatenate(targets))),
                       shape=(rows * cols, rows * cols))
    first, last = int(index[start]), int(index[goal])
    distance, predecessor = dijkstra(graph, indices=first, return_predecessors=True)
    if not np.isfinite(distance[last]):
        raise NoPathError("no collision-free passage from the start to the goal")
    path = [last]
    while path[-1] != first:
        path.append(int(predecessor[path[-1]]))
    return [divmod(k, cols) for k in reversed(path)]


def _waypoints(path: np.ndarray, spacing: float, ceiling_at: Callable[[np.ndarray], np.ndarray] | None) -> np.ndarray:
    seg = np.linalg.norm(np.diff(path, axis=0), axis=1)
    arc = np.concatenate([[0.0], np.cumsum(seg)])
    stations = np.append(np.arange(spacing, arc[-1], spacing), arc[-1])
    if len(stations) > 1 and stations[-1] - stations[-2] < spacing / 2:
        stations = np.delete(stations, -2)  # no waypoint crowding the goal
    xy = np.stack([np.interp(stations, arc, path[:, 0]), np.interp(stations, arc, path[:, 1])], axis=1)
    if ceiling_at is None:
        return np.concatenate([xy, np.full((len(xy), 1), WALK_HEIGHT)], axis=1)
    # The whole body must fit under the ceiling: look half a body length either way.
    probe = xy[:, :1] + np.linspace(-HALF_BODY_LENGTH, HALF_BODY_LENGTH, 9)[None]
    ceiling = ceiling_at(probe).min(axis=1)
    height = np.minimum(WALK_HEIGHT, ceiling - c.TRUNK_HALF_HEIGHT - CEILING_MARGIN)
    return np.concatenate([xy, height[:, None]], axis=1)
