"""A small family of square grid mazes (perfect mazes: exactly one path between cells).

Cells are indexed ``(row, col)``: rows run along world +x (away from the robot), columns
along world +y. Interior wall segments are numbered: first the ``n * (n - 1)`` walls
between horizontally adjacent cells ``(r, c) | (r, c + 1)`` (index ``r * (n - 1) + c``),
then the walls between ``(r, c)`` and ``(r + 1, c)`` (index ``n * (n - 1) + r * n + c``).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class MazeLayout:
    """One maze: which interior walls stand and the path structure toward the exit."""

    size: int
    walls: np.ndarray
    """``[n_walls]`` bool, True where the wall segment stands."""
    start: tuple[int, int]
    exit: tuple[int, int]
    distance: np.ndarray
    """``[size, size]`` number of cell moves from each cell to the exit."""
    next_cell: np.ndarray
    """``[size, size, 2]`` the neighbour one move closer to the exit (the exit points to itself)."""

    def path(self) -> list[tuple[int, int]]:
        """Cells from start to exit."""
        cell, out = self.start, [self.start]
        while cell != self.exit:
            row, col = (int(x) for x in self.next_cell[cell])
            cell = (row, col)
            out.append(cell)
        return out


def num_walls(size: int) -> int:
    return 2 * size * (size - 1)


def wall_between(size: int, a: tuple[int, int], b: tuple[int, int]) -> int:
    """Index of the interior wall between two adjacent cells."""
    (r0, c0), (r1, c1) = sorted([a, b])
    if r0 == r1 and c1 == c0 + 1:
        return r0 * (size - 1) + c0
    if c0 == c1 and r1 == r0 + 1:
        return size * (size - 1) + r0 * size + c0
    raise ValueError(f"cells {a} and {b} are not adjacent")


def _neighbours(size: int, cell: tuple[int, int]) -> list[tuple[int, int]]:
    r, c = cell
    out = [(r + dr, c + dc) for dr, dc in ((1, 0), (-1, 0), (0, 1), (0, -1))]
    return [(a, b) for a, b in out if 0 <= a < size and 0 <= b < size]


def generate(size: int, seed: int, start: tuple[int, int] = (0, 0), exit: tuple[int, int] | None = None) -> MazeLayout:
    """A perfect maze by randomized depth-first search (recursive backtracker)."""
    exit = exit or (size - 1, size - 1)
    rng = np.random.default_rng(seed)
    walls = np.ones(num_walls(size), dtype=bool)
    visited = {start}
    stack = [start]
    while stack:
        cell = stack[-1]
        options = [n for n in _neighbours(size, cell) if n not in visited]
        if not options:
            stack.pop()
            continue
        nxt = options[rng.integers(len(options))]
        walls[wall_between(size, cell, nxt)] = False
        visited.add(nxt)
        stack.append(nxt)
    distance, next_cell = _paths_to(size, walls, exit)
    return MazeLayout(size, walls, start, exit, distance, next_cell)


def _paths_to(size: int, walls: np.ndarray, exit: tuple[int, int]) -> tuple[np.ndarray, np.ndarray]:
    """Breadth-first search from the exit through open walls."""
    distance = np.full((size, size), -1, dtype=int)
    next_cell = np.zeros((size, size, 2), dtype=int)
    distance[exit] = 0
    next_cell[exit] = exit
    queue = deque([exit])
    while queue:
        cell = queue.popleft()
        for n in _neighbours(size, cell):
            if distance[n] < 0 and not walls[wall_between(size, cell, n)]:
                distance[n] = distance[cell] + 1
                next_cell[n] = cell
                queue.append(n)
    return distance, next_cell


def family(size: int = 4, count: int = 8) -> list[MazeLayout]:
    """The fixed family of ``count`` layouts (seeds 0..count-1) with the start in the corner
    nearest the robot and the exit in the opposite one; layouts whose path is shorter than
    the grid's Manhattan distance + 2 are skipped so each layout has at least one detour, and
    duplicates are skipped."""
    out: list[MazeLayout] = []
    seen: set[bytes] = set()
    seed = 0
    while len(out) < count:
        layout = generate(size, seed)
        key = layout.walls.tobytes()
        if layout.distance[layout.start] >= 2 * (size - 1) + 2 and key not in seen:
            out.append(layout)
            seen.add(key)
        seed += 1
    return out
