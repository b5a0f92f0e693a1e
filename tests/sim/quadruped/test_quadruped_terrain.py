"""Rough terrain: seeded and reproducible, scaled by difficulty, written into each
env's own model, matching what MuJoCo collides with, and a working curriculum."""

from __future__ import annotations

import mujoco
import numpy as np
import pytest

import sim2real.sim as S
from sim2real.sim.quadruped import terrain

GRID = terrain.TerrainGrid()


@pytest.mark.parametrize("kind", terrain.KINDS)
def test_generation_is_seeded(kind: str) -> None:
    a = terrain.generate(np.random.default_rng(3), GRID, kind, 0.7)
    b = terrain.generate(np.random.default_rng(3), GRID, kind, 0.7)
    c = terrain.generate(np.random.default_rng(4), GRID, kind, 0.7)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)
    assert a.shape == (GRID.n, GRID.n)
    assert np.abs(a).max() < GRID.height_range / 2


@pytest.mark.parametrize("kind", terrain.KINDS)
def test_difficulty_scales_roughness(kind: str) -> None:
    easy = terrain.generate(np.random.default_rng(0), GRID, kind, 0.0)
    hard = terrain.generate(np.random.default_rng(0), GRID, kind, 1.0)
    assert np.ptp(hard) > 2.5 * np.ptp(easy) > 0


def test_spawn_is_flat_and_edges_meet_the_border() -> None:
    h = terrain.generate(np.random.default_rng(0), GRID, "blocks", 1.0)
    ax = GRID.axis()
    x, y = np.meshgrid(ax, ax)
    assert np.abs(h[np.hypot(x, y) < GRID.spawn_radius]).max() == 0.0
    edge = np.maximum(np.abs(x), np.abs(y)) >= GRID.half_size - 1e-9
    assert np.abs(h[edge]).max() == 0.0


def test_reset_writes_reproducible_terrain_per_env() -> None:
    vec = S.make_vec("QuadrupedVelocityRough", num_envs=2, seed=11, nthread=1, difficulty=1.0)
    vec.reset()
    first = [m.hfield_data.copy() for m in vec.engine.models]
    assert not np.array_equal(first[0], first[1])  # each env has its own terrain
    again = S.make_vec("QuadrupedVelocityRough", num_envs=2, seed=11, nthread=1, difficulty=1.0)
    again.reset()
    for a, b in zip(first, (m.hfield_data for m in again.engine.models)):
        np.testing.assert_array_equal(a, b)
    vec.engine.reset([0])  # a new episode draws new terrain
    assert not np.array_equal(first[0], vec.engine.models[0].hfield_data)


def test_height_scan_matches_raycasts() -> None:
    env = S.make("QuadrupedVelocityRough", seed=2, difficulty=1.0, terrain_kinds=["bumps"])
    env.reset(seed=2)
    m, d = env.model, env.data
    d.qpos[:3] = [2.0, -1.5, 0.6]
    mujoco.mj_forward(m, d)
    scan = env.task.height_scan(env.engine.phys)[0]
    st = env.task.base_state(env.engine.phys)
    cos, sin = np.cos(st.yaw[0]), np.sin(st.yaw[0])
    from sim2real.sim.quadruped.velocity_rough import SCAN_POINTS

    geomid = np.zeros(1, np.int32)
    for (px, py), value in zip(SCAN_POINTS[::7], scan[::7]):
        wx, wy = 2.0 + cos * px - sin * py, -1.5 + sin * px + cos * py
        hit = mujoco.mj_ray(m, d, np.array([wx, wy, 2.0]), np.array([0, 0, -1.0]), None, 1, -1, geomid)
        assert value == pytest.approx(0.6 - (2.0 - hit), abs=0.02)


def test_curriculum_moves_levels() -> None:
    env = S.make("QuadrupedVelocityRough", seed=0, difficulty="curriculum")
    env.reset(seed=0)
    task = env.task
    assert task.difficulty[0] == 0.0
    task._walked[0], task._commanded[0] = 4.5, 5.0  # walked far: up
    env.reset()
    assert task.level[0] == 1
    task._walked[0], task._commanded[0] = 0.5, 5.0  # covered under half the command: down
    env.reset()
    assert task.level[0] == 0
