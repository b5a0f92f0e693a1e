"""Seeded confined-space courses for the waypoints task.

A course runs along +x inside a 1.6 m wide corridor (two fixed side walls). After
a free spawn area come ``num_sections`` obstacle sections separated by open gaps:

* ``tunnel``:      blocks on both sides leaving a 0.40-0.55 m passage, shifted sideways
* ``low_ceiling``: a ceiling 0.21-0.25 m above the floor, below the trunk of a walking
                   robot (:data:`WALKING_TRUNK_TOP`) and above a crouched trot's
* ``low_tunnel``:  both at once
* ``slalom``:      two blocks from alternating sides 1 m apart, each leaving a 0.7 m gap

Obstacles are fixed-size boxes on mocap bodies (a pool built once into the model);
blocks are 0.9 m deep so a tunnel's sides reach the corridor walls wherever the
passage lies (no way around). A new layout
only moves mocap poses: no recompilation, and the batched backend
carries them as state. Unused pieces are parked under the floor.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import mujoco
import numpy as np

from sim2real.sim.quadruped.scene import world_geom

SECTION_KINDS: tuple[str, ...] = ("tunnel", "low_ceiling", "low_tunnel", "slalom")
CORRIDOR_HALF_WIDTH = 0.8
PIECE_LENGTH = 0.5  # every wall and ceiling piece is 0.5 m long
BLOCK_HALF = (PIECE_LENGTH / 2, 0.45, 0.3)  # 0.9 m deep, 0.6 m tall
SIDE_WALL_HALF_THICKNESS = 0.05
CEILING_HALF = (PIECE_LENGTH / 2, CORRIDOR_HALF_WIDTH, 0.05)
MAX_SECTIONS = 4
MAX_SECTION_PIECES = 3  # tunnels and ceilings are 1.0-1.5 m long
SLALOM_LENGTH = 2.0  # blocks at both ends leave 1 m between them for the 0.7 m robot to turn
BLOCK_POOL = 2 * MAX_SECTION_PIECES * MAX_SECTIONS
CEILING_POOL = MAX_SECTION_PIECES * MAX_SECTIONS
TUNNEL_WIDTH = (0.40, 0.55)
CEILING_HEIGHT = (0.21, 0.25)
"""Range of the low ceilings' undersides (m). Ceilings of 0.27-0.31 m (before) confined
nothing: the walking robot's trunk passed under them untouched."""
WALKING_TRUNK_TOP = 0.257
"""Top of the trunk (m) of the robot walking on open ground, measured: the shipped
QuadrupedVelocity policy walks with its trunk centre at 0.20 m (box half height 0.057)."""
CRAWLING_TRUNK_TOP = 0.186
"""Top of the trunk (m) trotting crouched: the trot reference with its hips 0.12 m low
keeps the trunk centre at 0.13 m."""
SLALOM_GAP = 2 * CORRIDOR_HALF_WIDTH - 2 * BLOCK_HALF[1]  # 0.7 m
MARKER_POOL = 40  # flat discs on the floor showing the planned waypoints (visual only)


@dataclass
class Section:
    kind: str
    x0: float  # start along the course (m)
    length: float
    width: float = np.inf  # passage width of tunnels
    center: float = 0.0  # passage centre (y) of tunnels
    ceiling: float = np.inf  # height of the ceiling's underside


@dataclass
class Layout:
    """One course: its sections, obstacle boxes and goal."""

    sections: list[Section]
    goal: np.ndarray  # [2]
    blocks: list[tuple[float, float]] = field(default_factory=list)  # (x, y) centres
    ceilings: list[tuple[float, float]] = field(default_factory=list)  # (x, z of the underside)

    def wall_boxes(self) -> np.ndarray:
        """``[n, 4]`` footprints ``(xmin, xmax, ymin, ymax)`` of the blocks and side walls."""
        hx, hy = BLOCK_HALF[0], BLOCK_HALF[1]
        out = [(x - hx, x + hx, y - hy, y + hy) for x, y in self.blocks]
        w = CORRIDOR_HALF_WIDTH
        out += [(-100.0, 100.0, w, w + 1.0), (-100.0, 100.0, -w - 1.0, -w)]
        return np.array(out)

    def to_dict(self) -> dict[str, Any]:
        """The course as a planner needs it (JSON-ready): goal, blocks, ceilings."""
        return {"goal": [float(v) for v in self.goal], "blocks": [[float(x), float(y)] for x, y in self.blocks],
                "ceilings": [[float(x), float(z)] for x, z in self.ceilings]}

    @classmethod
    def from_dict(cls, data: Any) -> Layout:
        """The course of :meth:`to_dict`.

        Raises:
            ValueError: a malformed description (missing keys, wrong shapes, non-finite).
        """
        try:
            goal = np.asarray(data["goal"], dtype=float)
            blocks = np.asarray(data["blocks"], dtype=float).reshape(-1, 2)
            ceilings = np.asarray(data["ceilings"], dtype=float).reshape(-1, 2)
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"malformed course description: {exc!r}") from None
        if goal.shape != (2,) or not all(np.all(np.isfinite(a)) for a in (goal, blocks, ceilings)):
            raise ValueError("malformed course description: goal must be 2 numbers, every value finite")
        return cls(sections=[], goal=goal, blocks=[(x, y) for x, y in blocks], ceilings=[(x, z) for x, z in ceilings])

    def ceiling_at(self, x: np.ndarray) -> np.ndarray:
        """Height of the ceiling's underside above ``x`` (inf where open)."""
        out = np.full(np.shape(x), np.inf)
        for cx, z in self.ceilings:
            out = np.where(np.abs(np.asarray(x) - cx) <= PIECE_LENGTH / 2, np.minimum(out, z), out)
        return out


def generate(rng: np.random.Generator, num_sections: int = 3, kinds: tuple[str, ...] = SECTION_KINDS) -> Layout:
    """A random course; the same generator state gives the same course."""
    x = rng.uniform(0.8, 1.2)  # free space around the spawn at x = 0
    sections: list[Section] = []
    layout = Layout(sections=sections, goal=np.zeros(2))
    for _ in range(num_sections):
        kind = kinds[int(rng.integers(len(kinds)))]
        pieces = int(rng.integers(2, MAX_SECTION_PIECES + 1))
        sec = Section(kind=kind, x0=x, length=SLALOM_LENGTH if kind == "slalom" else pieces * PIECE_LENGTH)
        centres = x + PIECE_LENGTH * (np.arange(pieces) + 0.5)
        if kind in ("tunnel", "low_tunnel"):
            sec.width = rng.uniform(*TUNNEL_WIDTH) if kind == "tunnel" else rng.uniform(0.45, TUNNEL_WIDTH[1])
            sec.center = rng.uniform(-0.3, 0.3)
            for cx in centres:
                for side in (-1, 1):
                    layout.blocks.append((cx, sec.center + side * (sec.width / 2 + BLOCK_HALF[1])))
        if kind in ("low_ceiling", "low_tunnel"):
            sec.ceiling = rng.uniform(*CEILING_HEIGHT)
            layout.ceilings += [(cx, sec.ceiling) for cx in centres]
        if kind == "slalom":
            first = rng.choice([-1.0, 1.0])
            for j, bx in enumerate((x + BLOCK_HALF[0], x + sec.length - BLOCK_HALF[0])):
                layout.blocks.append((bx, first * (-1) ** j * (CORRIDOR_HALF_WIDTH - BLOCK_HALF[1])))
        sections.append(sec)
        x += sec.length + rng.uniform(0.6, 1.0)
    layout.goal = np.array([x + 0.3, 0.0])
    return layout


def add_course(spec: mujoco.MjSpec, markers: bool = False) -> None:
    """Side walls, the mocap pools of blocks and ceiling pieces and, with ``markers``,
    discs showing the waypoints (off by default: every rangefinder ray tests every
    geom, and 40 discs cost ~10 % of a physics step)."""
    wall_rgba, ceiling_rgba = [0.55, 0.42, 0.3, 1], [0.3, 0.45, 0.6, 0.85]
    t = SIDE_WALL_HALF_THICKNESS
    for side in (-1, 1):
        world_geom(
            spec.worldbody,
            name=f"side_wall{'L' if side > 0 else 'R'}",
            type=mujoco.mjtGeom.mjGEOM_BOX,
            size=[15.0, t, BLOCK_HALF[2]],
            pos=[10.0, side * (CORRIDOR_HALF_WIDTH + t), BLOCK_HALF[2]],
            rgba=[0.6, 0.6, 0.62, 0.35],
        )
    for i in range(BLOCK_POOL):
        body = spec.worldbody.add_body(name=f"block{i}", mocap=True, pos=_parking(i))
        world_geom(body, type=mujoco.mjtGeom.mjGEOM_BOX, size=list(BLOCK_HALF), rgba=wall_rgba)
    for i in range(CEILING_POOL):
        body = spec.worldbody.add_body(name=f"ceiling{i}", mocap=True, pos=_parking(BLOCK_POOL + i))
        world_geom(body, type=mujoco.mjtGeom.mjGEOM_BOX, size=list(CEILING_HALF), rgba=ceiling_rgba)
    for i in range(MARKER_POOL if markers else 0):
        # 2 mm thin so the downward rangefinder barely notices them.
        body = spec.worldbody.add_body(name=f"marker{i}", mocap=True, pos=_parking(BLOCK_POOL + CEILING_POOL + i))
        body.add_geom(
            type=mujoco.mjtGeom.mjGEOM_CYLINDER,
            size=[0.04, 0.001, 0],
            contype=0,
            conaffinity=0,
            rgba=[1.0, 0.75, 0.1, 1],
            group=1,
        )


def _parking(i: int) -> list[float]:
    # Under the floor, spread out so parked pieces never overlap in the broadphase.
    return [-2.0 + 1.0 * i, 0.0, -3.0]


def place(layout: Layout, model: mujoco.MjModel, data: mujoco.MjData, waypoints: np.ndarray | None = None) -> None:
    """Write the layout's pieces (and waypoint markers) into the mocap poses of ``data``."""
    if len(layout.blocks) > BLOCK_POOL or len(layout.ceilings) > CEILING_POOL:
        raise ValueError("layout needs more obstacle pieces than the model's pool holds")
    for i in range(BLOCK_POOL):
        mid = model.body_mocapid[model.body(f"block{i}").id]
        data.mocap_pos[mid] = (*layout.blocks[i], BLOCK_HALF[2]) if i < len(layout.blocks) else _parking(i)
        data.mocap_quat[mid] = (1.0, 0.0, 0.0, 0.0)
    for i in range(CEILING_POOL):
        mid = model.body_mocapid[model.body(f"ceiling{i}").id]
        if i < len(layout.ceilings):
            x, z = layout.ceilings[i]
            data.mocap_pos[mid] = (x, 0.0, z + CEILING_HALF[2])
        else:
            data.mocap_pos[mid] = _parking(BLOCK_POOL + i)
        data.mocap_quat[mid] = (1.0, 0.0, 0.0, 0.0)
    points = np.zeros((0, 3)) if waypoints is None else waypoints[:MARKER_POOL]
    for i in range(MARKER_POOL if _has_markers(model) else 0):
        mid = model.body_mocapid[model.body(f"marker{i}").id]
        data.mocap_pos[mid] = (
            (points[i, 0], points[i, 1], 0.001) if i < len(points) else _parking(BLOCK_POOL + CEILING_POOL + i)
        )
        data.mocap_quat[mid] = (1.0, 0.0, 0.0, 0.0)


def _has_markers(model: mujoco.MjModel) -> bool:
    return mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, "marker0") >= 0
