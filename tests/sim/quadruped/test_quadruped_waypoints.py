"""Confined-space courses: seeded layouts that really constrain the robot, a planner
whose path is collision-free, rangefinders that see the geometry, waypoint
bookkeeping and success."""

from __future__ import annotations

import mujoco
import numpy as np
import pytest

import sim2real.sim as S
from sim2real.sim.quadruped import constants as c
from sim2real.sim.quadruped import layouts, planner

STANDING_TOP = c.STANDING_HEIGHT + c.TRUNK_HALF_HEIGHT  # 0.344 m
_BEND = -c.CROUCH_POSE[2]  # knee bend of the lowest pose the actions can command
CROUCH_TOP = (
    2 * c.THIGH_LENGTH * np.cos(_BEND / 2) * np.cos(c.CROUCH_POSE[1] - _BEND / 2) + c.FOOT_RADIUS + c.TRUNK_HALF_HEIGHT
)  # 0.247 m


def test_layouts_are_seeded() -> None:
    a = layouts.generate(np.random.default_rng(5))
    b = layouts.generate(np.random.default_rng(5))
    c_ = layouts.generate(np.random.default_rng(6))
    assert a.blocks == b.blocks and a.ceilings == b.ceilings and np.array_equal(a.goal, b.goal)
    assert (a.blocks, a.ceilings) != (c_.blocks, c_.ceilings)


@pytest.mark.parametrize("seed", range(12))
def test_layouts_constrain_but_stay_passable(seed: int) -> None:
    layout = layouts.generate(np.random.default_rng(seed), num_sections=4)
    for sec in layout.sections:
        if sec.kind in ("low_ceiling", "low_tunnel"):
            # Lower than the walking robot's trunk, higher than a crouched trot's.
            assert layouts.CRAWLING_TRUNK_TOP < sec.ceiling < layouts.WALKING_TRUNK_TOP < STANDING_TOP
        if sec.kind in ("tunnel", "low_tunnel"):
            assert 2 * planner.ROBOT_HALF_WIDTH < sec.width < 0.6
            # The sides reach the corridor walls: the passage is the only way through.
            inside = [y for x, y in layout.blocks if sec.x0 < x < sec.x0 + sec.length]
            for y in inside:
                assert abs(y) - layouts.BLOCK_HALF[1] < sec.width / 2 + abs(sec.center) + 1e-9
                assert abs(y) + layouts.BLOCK_HALF[1] >= layouts.CORRIDOR_HALF_WIDTH
    assert len(layout.blocks) <= layouts.BLOCK_POOL and len(layout.ceilings) <= layouts.CEILING_POOL


@pytest.mark.parametrize("seed", range(8))
def test_planned_path_is_collision_free_and_crouches(seed: int) -> None:
    layout = layouts.generate(np.random.default_rng(seed), num_sections=4)
    wps = planner.plan(layout, np.zeros(2))
    np.testing.assert_allclose(wps[-1, :2], layout.goal)
    assert (
        np.linalg.norm(np.diff(wps[:, :2], axis=0), axis=1).max() <= 1.5 * 0.4 + 1e-9
    )  # spacing 0.4 (the goal may stretch the last)
    dense = np.concatenate([np.linspace(a, b, 10) for a, b in zip(wps[:-1, :2], wps[1:, :2])])
    for xmin, xmax, ymin, ymax in layout.wall_boxes():
        dx = np.maximum(np.maximum(xmin - dense[:, 0], dense[:, 0] - xmax), 0)
        dy = np.maximum(np.maximum(ymin - dense[:, 1], dense[:, 1] - ymax), 0)
        assert np.hypot(dx, dy).min() > 0.1  # the trunk (half width 0.047) and feet stay clear
    for sec in layout.sections:
        under = (wps[:, 0] > sec.x0 + 0.1) & (wps[:, 0] < sec.x0 + sec.length - 0.1)
        if np.isfinite(sec.ceiling) and under.any():
            assert (wps[under, 2] + c.TRUNK_HALF_HEIGHT < sec.ceiling).all()
    open_ground = layout.ceiling_at(wps[:, 0] - 0.5) == np.inf
    assert (wps[open_ground & (layout.ceiling_at(wps[:, 0] + 0.5) == np.inf), 2] == planner.WALK_HEIGHT).all()


def test_no_path_is_reported() -> None:
    layout = layouts.generate(np.random.default_rng(0), num_sections=1, kinds=("tunnel",))
    x = layout.sections[0].x0 + 0.25
    layout.blocks.append((x, layout.sections[0].center))  # block the passage
    with pytest.raises(planner.NoPathError):
        planner.plan(layout, np.zeros(2))


def test_obstacles_are_placed_and_sensed() -> None:
    env = S.make("QuadrupedWaypoints", seed=1, section_kinds=["low_ceiling"], num_sections=1)
    env.reset(seed=1)
    sec = env.task.layouts[0].sections[0]
    m, d = env.model, env.data
    # Put the trunk under the ceiling: the upward rangefinder sees it.
    d.qpos[:3] = [sec.x0 + sec.length / 2, 0.0, 0.14]
    d.qpos[3:7] = [1, 0, 0, 0]
    mujoco.mj_forward(m, d)
    up = env.task.observation_layout()
    obs = env.engine.observe()[0]
    start = sum(n for name, n in up[: [name for name, _ in up].index("ranges")])
    from sim2real.sim.quadruped.waypoints import RANGEFINDERS

    ranges = dict(zip(RANGEFINDERS, obs[start:]))
    assert ranges["up"] == pytest.approx(sec.ceiling - 0.14 - 0.06, abs=1e-3)
    assert ranges["down"] == pytest.approx(0.14 - 0.06, abs=1e-3)
    assert ranges["left"] == pytest.approx(layouts.CORRIDOR_HALF_WIDTH - 0.05, abs=1e-3)
    # Standing up under it is a trunk collision.
    d.qpos[2] = sec.ceiling - c.TRUNK_HALF_HEIGHT + 0.01
    mujoco.mj_forward(m, d)
    assert any(
        {m.geom(con.geom[0]).name, m.geom(con.geom[1]).name} & {"trunk_collision"}
        and m.body(m.geom_bodyid[con.geom[1]]).name.startswith("ceiling")
        for con in d.contact[: d.ncon]
    )


def test_waypoints_advance_and_goal_is_success() -> None:
    env = S.make("QuadrupedWaypoints", seed=0, num_sections=1)
    env.reset(seed=0)
    wps = env.task.waypoints[0]
    obs = env.engine.observe()[0]
    start = sum(n for name, n in env.task.observation_layout()[:6])
    heading = env.task.base_state(env.engine.phys).yaw[0]
    rel = wps[0, :2] - env.data.qpos[:2]
    expected = [
        np.cos(heading) * rel[0] + np.sin(heading) * rel[1],
        -np.sin(heading) * rel[0] + np.cos(heading) * rel[1],
    ]
    np.testing.assert_allclose(obs[start : start + 2], expected, atol=1e-5)
    # Carry the robot along the plan: each waypoint is reached in turn, the goal ends it.
    for k, (x, y, z) in enumerate(wps):
        env.data.qpos[:3] = [x, y, min(z, 0.27)]
        env.data.qvel[:] = 0
        mujoco.mj_forward(env.model, env.data)
        _, _, terminated, truncated, info = env.step(np.zeros(12))
        assert info["metrics"]["waypoints_reached"] == k + 1
        if k < len(wps) - 1:
            assert not terminated
    assert terminated and not truncated and info["is_success"]
    assert info["metrics"]["waypoint_fraction"] == 1.0


def test_the_gait_residual_follower_steps_for_pure_pursuit_of_the_observed_waypoints() -> None:
    """In ``gait_residual`` mode the reference's twist and crouch are pure pursuit of the
    waypoints the policy observes, shown to it as the ``reference`` block; a zero
    residual gives exactly the reference's servo targets."""
    from sim2real.sim.core.layout import layout_slices
    from sim2real.sim.quadruped.steering import pursue

    env = S.make("QuadrupedWaypoints", seed=0, num_sections=1, section_kinds=["low_ceiling"],
                 action_mode="gait_residual")
    obs, _ = env.reset(seed=0)
    task = env.task
    layout = task.observation_layout()
    assert [name for name, _ in layout][-2:] == ["reference", "gait_clock"]
    blocks = layout_slices(layout)

    def block(o: np.ndarray, name: str) -> np.ndarray:
        return o[blocks[name]]

    for _ in range(30):
        waypoints = block(obs, "waypoints").reshape(-1, 3)
        allowed = task.current_targets()[0, :, 2]
        twist, crouch = pursue(waypoints[None, :, :2], allowed[None], np.array([False]), task.pursuit)
        np.testing.assert_allclose(block(obs, "reference"), np.append(twist[0], crouch[0]), atol=1e-5)
        ctrl = task.action_to_ctrl(np.zeros((1, 12)), env.engine.phys)
        np.testing.assert_allclose(ctrl, np.clip(c.DEFAULT_POSE + task.gait.joint_offsets(twist, crouch),
                                                 task.ctrl_low, task.ctrl_high), atol=1e-5)
        obs, _, terminated, truncated, _ = env.step(np.zeros(12))
        if terminated or truncated:
            obs, _ = env.reset()
    # The observation noise stays on the rangefinders' block.
    noise = task.observation_noise()
    assert np.all(noise[blocks["ranges"]] == 0.02)
    assert np.all(noise[blocks["ranges"].stop :] != 0.02)
