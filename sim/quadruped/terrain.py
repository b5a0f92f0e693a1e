"""Procedural, seeded rough terrain on one MuJoCo heightfield.

Each episode writes a fresh height grid into the env's own model (``hfield_data``),
so terrain changes on reset without recompiling. Four kinds in the legged_gym
spirit, all scaled by a difficulty in [0, 1]:

* ``bumps``:  smooth random bumps (coarse uniform noise, bilinearly upsampled)
* ``waves``:  slopes, crossing triangular ridges up to 0.35 rise/run
* ``blocks``: discrete raised/sunken rectangles up to 13 cm
* ``stairs``: concentric flights of 3 steps up and down around the spawn, steps up to 13 cm

The spawn patch (centre) is flat, and heights taper to 0 at the edges where flat
border boxes continue the ground.
"""

from __future__ import annotations

from dataclasses import dataclass

import mujoco
import numpy as np

from sim2real.sim.quadruped.scene import ground_material, world_geom

KINDS: tuple[str, ...] = ("bumps", "waves", "blocks", "stairs")
HFIELD_NAME = "terrain"


@dataclass(frozen=True)
class TerrainGrid:
    """Size and resolution of the heightfield."""

    half_size: float = 5.0  # m, the field spans [-half_size, half_size] in x and y
    resolution: float = 0.05  # m between samples
    height_range: float = 1.0  # m, heights lie in [-range/2, range/2]
    spawn_radius: float = 0.6  # m, flat disc at the centre
    edge_taper: float = 0.5  # m over which heights fade to 0 at the border

    @property
    def n(self) -> int:
        return int(round(2 * self.half_size / self.resolution)) + 1

    def axis(self) -> np.ndarray:
        return np.linspace(-self.half_size, self.half_size, self.n)


def add_heightfield(spec: mujoco.MjSpec, grid: TerrainGrid) -> None:
    """The heightfield (flat until the first reset) and flat ground around it."""
    n = grid.n
    hfield = spec.add_hfield(
        name=HFIELD_NAME, nrow=n, ncol=n, size=[grid.half_size, grid.half_size, grid.height_range, 0.1]
    )
    hfield.userdata = [0.5] * (n * n)  # 0.5 of the range is z = 0
    ground = ground_material(spec)
    mat = ground_material(spec, "terrain", rgb1=(0.32, 0.3, 0.27), rgb2=(0.4, 0.37, 0.33))
    world_geom(
        spec.worldbody,
        name="terrain",
        type=mujoco.mjtGeom.mjGEOM_HFIELD,
        hfieldname=HFIELD_NAME,
        pos=[0, 0, -grid.height_range / 2],
        material=mat,
    )
    # Four slabs with their tops at z = 0 continue the ground past the field's edges.
    outer, h = grid.half_size + 20.0, grid.half_size
    for i, (x, y, sx, sy) in enumerate(
        [(0, h + 10, outer, 10), (0, -h - 10, outer, 10), (h + 10, 0, 10, h), (-h - 10, 0, 10, h)]
    ):
        world_geom(
            spec.worldbody,
            name=f"border{i}",
            type=mujoco.mjtGeom.mjGEOM_BOX,
            size=[sx, sy, 0.5],
            pos=[x, y, -0.5],
            material=ground,
        )


def generate(rng: np.random.Generator, grid: TerrainGrid, kind: str, difficulty: float) -> np.ndarray:
    """Heights in metres, ``[n, n]`` (row index = y, column = x, as MuJoCo stores them)."""
    if kind not in KINDS:
        raise ValueError(f"unknown terrain kind {kind!r}; choose from {KINDS}")
    d = float(np.clip(difficulty, 0.0, 1.0))
    ax = grid.axis()
    x, y = np.meshgrid(ax, ax)  # y varies along rows
    if kind == "bumps":
        heights = _bumps(rng, grid, amplitude=0.02 + 0.08 * d)
    elif kind == "waves":
        heights = _waves(rng, x, y, slope=0.05 + 0.30 * d)
    elif kind == "blocks":
        heights = _blocks(rng, grid, height=0.03 + 0.10 * d)
    else:
        heights = _stairs(rng, x, y, step=0.03 + 0.10 * d)
    return _finish(heights, grid, x, y)


def _bumps(rng: np.random.Generator, grid: TerrainGrid, amplitude: float) -> np.ndarray:
    coarse_step = 0.25  # m between random samples: bumps about a foot-length wide
    m = int(round(2 * grid.half_size / coarse_step)) + 1
    coarse = rng.uniform(-amplitude, amplitude, (m, m))
    fine = np.linspace(0, m - 1, grid.n)
    i0 = np.clip(np.floor(fine).astype(int), 0, m - 2)
    t = fine - i0
    rows = coarse[i0] * (1 - t)[:, None] + coarse[i0 + 1] * t[:, None]
    return rows[:, i0] * (1 - t)[None] + rows[:, i0 + 1] * t[None]


def _waves(rng: np.random.Generator, x: np.ndarray, y: np.ndarray, slope: float) -> np.ndarray:
    period = rng.uniform(1.5, 3.0)
    phase_x, phase_y = rng.uniform(0, period, 2)

    def tri(u: np.ndarray, phase: float) -> np.ndarray:  # triangle wave, slope +-1
        return np.abs(((u + phase) % period) - period / 2)

    ridge = tri(x, phase_x) + tri(y, phase_y)
    # The steepest direction (a diagonal) rises sqrt(2) per unit run of the sum.
    return slope * (ridge - ridge.mean()) / np.sqrt(2.0)


def _blocks(rng: np.random.Generator, grid: TerrainGrid, height: float) -> np.ndarray:
    heights = np.zeros((grid.n, grid.n))
    count = int((2 * grid.half_size) ** 2 / 0.8)  # ~one block per 0.8 m^2
    lo = rng.integers(0, grid.n, (count, 2))  # (row, col) corners
    extent = np.round(rng.uniform(0.3, 1.0, (count, 2)) / grid.resolution).astype(int)
    for (r, col), (dr, dc), h in zip(lo, extent, rng.uniform(-height, height, count), strict=True):
        heights[r : r + dr, col : col + dc] = h
    return heights


def _stairs(rng: np.random.Generator, x: np.ndarray, y: np.ndarray, step: float) -> np.ndarray:
    width = rng.uniform(0.28, 0.4)  # tread depth
    ring = np.floor(np.maximum(np.abs(x), np.abs(y)) / width)
    direction = rng.choice([-1.0, 1.0])
    flight = 3  # steps up, then as many down, repeating outwards
    phase = ring % (2 * flight)
    level = np.where(phase < flight, phase, 2 * flight - phase)
    return direction * step * level


def _finish(heights: np.ndarray, grid: TerrainGrid, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    r = np.hypot(x, y)
    # Flat spawn disc at height 0, blended over 0.3 m.
    spawn = np.clip((r - grid.spawn_radius) / 0.3, 0.0, 1.0)
    edge = np.clip((grid.half_size - np.maximum(np.abs(x), np.abs(y))) / grid.edge_taper, 0.0, 1.0)
    limit = grid.height_range / 2 - 1e-3
    return np.clip(heights * spawn * edge, -limit, limit)


def to_hfield(heights: np.ndarray, grid: TerrainGrid) -> np.ndarray:
    """Heights (m) to MuJoCo's normalised ``hfield_data`` (0.5 is z = 0)."""
    return (heights / grid.height_range + 0.5).astype(np.float32).ravel()


def sample_heights(fields: np.ndarray, grid: TerrainGrid, xy: np.ndarray) -> np.ndarray:
    """Bilinear terrain heights (m) at world points ``xy [B, P, 2]`` of each env's
    normalised field ``fields [B, n, n]``; outside the field the ground is at 0."""
    n = fields.shape[-1]
    u = (xy[..., 0] + grid.half_size) / grid.resolution
    v = (xy[..., 1] + grid.half_size) / grid.resolution
    inside = (u >= 0) & (u <= n - 1) & (v >= 0) & (v <= n - 1)
    u = np.clip(u, 0, n - 1.001)
    v = np.clip(v, 0, n - 1.001)
    c0, r0 = u.astype(int), v.astype(int)
    tu, tv = u - c0, v - r0
    env = np.arange(fields.shape[0])[:, None]
    h = (
        fields[env, r0, c0] * (1 - tu) * (1 - tv)
        + fields[env, r0, c0 + 1] * tu * (1 - tv)
        + fields[env, r0 + 1, c0] * (1 - tu) * tv
        + fields[env, r0 + 1, c0 + 1] * tu * tv
    )
    return np.where(inside, (h - 0.5) * grid.height_range, 0.0)
