"""Every arm task in every action mode through the registry, plus task geometry:
peg clearance, maze layouts, walls that block the stylus."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import sim2real.sim as sim
from sim2real.sim.arm import TASKS, maze_layouts, peg_insert
from sim2real.sim.arm import maze as maze_task
from sim2real.sim.arm.model import ACTION_MODES
from sim2real.sim.core.errors import ActionError, ConfigError

TASK_IDS = [f"sim2real/Arm{''.join(p.capitalize() for p in t.name.split('_'))}-v0" for t in TASKS]


def test_registry_lists_every_arm_task() -> None:
    assert set(TASK_IDS) <= set(sim.REGISTRY.ids())
    assert {t.name for t in TASKS} == {"reach", "push", "peg_insert", "maze"}


@pytest.mark.parametrize("mode", ACTION_MODES)
@pytest.mark.parametrize("task_id", TASK_IDS)
def test_task_resets_and_steps_in_every_mode(task_id: str, mode: str) -> None:
    env = sim.make(task_id, action_mode=mode, dr="train", seed=0)
    obs, info = env.reset(seed=0)
    layout = env.task.observation_layout()
    assert obs.shape == (sum(n for _, n in layout),)
    assert env.action_space.shape == (sum(n for _, n in env.task.action_layout()),)
    assert len(info["privileged"]) == sum(n for _, n in env.task.privileged_layout())
    rng = np.random.default_rng(0)
    for _ in range(10):
        obs, reward, terminated, truncated, info = env.step(rng.uniform(-0.3, 0.3, env.action_space.shape))
        assert np.all(np.isfinite(obs)) and np.isfinite(reward)
        assert "ee_distance" in info["metrics"]
        if terminated or truncated:
            obs, info = env.reset()


def test_zero_action_holds_the_pose_in_setpoint_modes() -> None:
    for mode in ("ee_delta", "ee_impedance", "joint_position"):
        env = sim.make("ArmReach", action_mode=mode, seed=1)
        env.reset(seed=1)
        start = env.data.site("ee").xpos.copy()
        for _ in range(40):  # 2 s
            env.step(np.zeros(env.action_space.shape))
        assert np.linalg.norm(env.data.site("ee").xpos - start) < 0.002, mode


def test_batched_env_matches_single_env() -> None:
    single = sim.make("ArmPush", action_mode="ee_delta", seed=4)
    batch = sim.make_vec("ArmPush", 3, action_mode="ee_delta", seed=4, nthread=2)
    obs_s, _ = single.reset()
    obs_b = batch.reset()
    np.testing.assert_allclose(obs_s, obs_b[0], atol=1e-6)
    actions = np.random.default_rng(1).uniform(-0.5, 0.5, (8, 7))
    for a in actions:
        obs_s, *_ = single.step(a)
        obs_b, *_ = batch.step(np.tile(a, (3, 1)))
    np.testing.assert_allclose(obs_s, obs_b[0], atol=1e-5)


def test_bad_actions_and_options_give_named_errors() -> None:
    env = sim.make("ArmReach", action_mode="ee_delta")
    env.reset(seed=0)
    with pytest.raises(ActionError, match="shape"):
        env.step(np.zeros(3))
    with pytest.raises(ActionError, match="non-finite"):
        env.step(np.full(7, np.nan))
    with pytest.raises(ConfigError, match="action_mode"):
        sim.make("ArmReach", action_mode="ee_velocity")
    with pytest.raises(ConfigError, match="num_layouts"):
        sim.make("ArmMaze", num_layouts=0)
    with pytest.raises(ConfigError, match="target_radius"):
        sim.make("ArmReach", target_radius=0.05)


def test_peg_clearance_is_a_few_millimetres() -> None:
    env = sim.make("ArmPegInsert")
    model = env.model
    hole_width = model.geom("hole_wall_px").pos[0] - model.geom("hole_wall_px").size[0]
    hole_width -= model.geom("hole_wall_nx").pos[0] + model.geom("hole_wall_nx").size[0]
    peg_width = 2 * model.geom("peg").size[0]
    assert hole_width - peg_width == pytest.approx(peg_insert.CLEARANCE)
    assert 0.002 <= hole_width - peg_width <= 0.005
    assert model.geom("peg").size[2] * 2 > peg_insert.HOLE_DEPTH  # the peg can reach the bottom


def test_peg_starts_in_a_firm_grasp() -> None:
    env = sim.make("ArmPegInsert", action_mode="joint_position", seed=3)
    env.reset(seed=3)
    for _ in range(20):
        _, _, terminated, _, info = env.step(np.zeros(env.action_space.shape))
        assert not terminated
    offset = env.task.sensor(env.engine.phys, "peg_tip_pos") - env.task.ee_pos(env.engine.phys)
    assert offset[0, 2] == pytest.approx(-peg_insert.PEG_TIP_BELOW_EE, abs=0.003)
    assert info["privileged"][6:8].min() > 0.8 * 70.0  # both pads squeeze with ~70 N


def test_maze_family_is_perfect_and_solvable() -> None:
    family = maze_layouts.family(4, 8)
    assert len({tuple(lay.walls) for lay in family}) == 8
    for lay in family:
        # A perfect maze on 16 cells has 15 open passages and every cell reaches the exit.
        assert (~lay.walls).sum() == 15
        assert (lay.distance >= 0).all()
        path = lay.path()
        assert path[0] == lay.start and path[-1] == lay.exit
        for a, b in itertools.pairwise(path):
            assert not lay.walls[maze_layouts.wall_between(4, a, b)]


def test_maze_walls_block_the_stylus() -> None:
    """Drive the tip straight into the first standing wall: it stops at the wall, pressing."""
    env = sim.make("ArmMaze", action_mode="ee_delta", seed=0)
    env.reset(seed=0)
    task = env.task
    layout = task.layouts[task.layout_id[0]]
    # From the start cell (0, 0) one of the two neighbours is walled off.
    walled = [
        (n, d)
        for n, d in (((0, 1), np.array([0, 1.0, 0])), ((1, 0), np.array([1.0, 0, 0])))
        if layout.walls[maze_layouts.wall_between(4, (0, 0), n)]
    ]
    assert walled, "a perfect maze from a corner has at least one of two corner passages closed"
    _, direction = walled[0]
    action = np.zeros(6)
    action[:3] = direction * 0.3
    for _ in range(40):
        _, _, terminated, _, info = env.step(action)
        assert not terminated
    tip = env.data.site("ee").xpos
    wall_plane = maze_task.ORIGIN + maze_task.CELL  # the wall between cell 0 and 1 along that axis
    axis = int(np.argmax(direction))
    assert tip[axis] < wall_plane[axis] - maze_task.WALL_THICKNESS / 2
    assert info["metrics"]["in_contact"] == 1.0
    assert 10.0 < info["metrics"]["contact_force"] < 120.0


def follow_maze_path(num_envs: int, dr: str | None, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Drive the stylus through cell centres along each layout's solution path; returns
    success flags and contact-force peaks."""
    env = sim.make_vec("ArmMaze", num_envs, action_mode="ee_delta", dr=dr, seed=seed, nthread=2)
    obs = env.reset()
    task = env.task
    index, start = {}, 0
    for name, size in task.observation_layout():
        index[name] = slice(start, start + size)
        start += size
    paths = [task.layouts[task.layout_id[i]].path() for i in range(num_envs)]
    waypoint = np.ones(num_envs, dtype=int)
    finished = np.zeros(num_envs, dtype=bool)
    success = np.zeros(num_envs, dtype=bool)
    peak = np.zeros(num_envs)
    for _ in range(env.engine.episode_steps):
        tip = obs[:, index["tip_rel_maze"]] + np.r_[maze_task.ORIGIN, 0.0]
        offset = obs[:, index["setpoint_offset"]][:, :3]
        cells = np.array([paths[i][min(waypoint[i], len(paths[i]) - 1)] for i in range(num_envs)])
        goal = np.column_stack(
            [maze_task.ORIGIN + (cells + 0.5) * maze_task.CELL, np.full(num_envs, maze_task.TIP_HEIGHT)]
        )
        waypoint += np.linalg.norm(goal[:, :2] - tip[:, :2], axis=1) < 0.015
        step = 0.5 * (goal - tip - offset)
        step *= np.minimum(1.0, 0.015 / np.maximum(np.linalg.norm(step, axis=1, keepdims=True), 1e-9))
        action = np.zeros((num_envs, 6))
        action[:, :3] = step / 0.05
        obs, _, done, infos = env.step(action)
        for i in np.flatnonzero(done & ~finished):
            success[i] = infos[i]["is_success"]
            peak[i] = infos[i]["metrics"]["contact_force_peak"]
        finished |= done
        if finished.all():
            break
    return success, peak


def test_maze_is_solvable_along_the_layout_path() -> None:
    success, _ = follow_maze_path(6, dr="train", seed=4)
    assert success.all()


def test_maze_geodesic_distance_falls_along_the_path() -> None:
    task = sim.make("ArmMaze").task
    task.layout_id[:] = 0
    path = task.layouts[0].path()
    centres = maze_task.ORIGIN + (np.array(path) + 0.5) * maze_task.CELL
    dist, at_exit = task.geodesic_distance(centres)
    assert np.all(np.diff(dist) < 0) and at_exit[-1] and not at_exit[:-1].any()
    assert dist[0] == pytest.approx((len(path) - 1) * maze_task.CELL)  # cell-centre to cell-centre moves


def test_reach_action_cost_charges_only_the_excess_over_the_soft_limit() -> None:
    from sim2real.sim.arm.reach import ArmReach

    plain = sim.make("sim2real/ArmReach-v0", seed=0)
    costly = sim.make("sim2real/ArmReach-v0", seed=0, action_cost=2.0, action_soft_limit=0.6)
    plain.reset(seed=0)
    costly.reset(seed=0)
    action = np.array([0.9, -0.5, 0.0, 0.0, 0.0, 0.7, 1.0])
    _, r_plain, *_ = plain.step(action)
    _, r_costly, _, _, info = costly.step(action)
    excess = 0.3**2 + 0.1**2 + 0.4**2
    assert r_plain - r_costly == pytest.approx(2.0 * excess, abs=1e-9)
    assert info["metrics"]["action_excess_sq"] == pytest.approx(excess)
    with pytest.raises(ConfigError, match="action_soft_limit"):
        ArmReach(num_envs=1, action_soft_limit=1.0)


def test_reach_success_bonus_is_paid_on_the_reaching_step_only() -> None:
    from sim2real.sim.arm.reach import ArmReach

    rewards = {}
    for bonus in (1.0, 0.0, 2.5):
        task = ArmReach(num_envs=2, success_bonus=bonus)
        venv = sim.make_vec("ArmReach", 2, seed=0, success_bonus=bonus)
        try:
            venv.reset()
            target = venv.engine.phys.mocap_pos[:, 0].copy()
            assert isinstance(venv.task, ArmReach)
            # Put env 0's target on the fingertip: that step succeeds; env 1's stays away.
            venv.task.targets[0] = venv.task.ee_pos(venv.engine.phys)[0]
            venv.engine.phys.mocap_pos[0, 0] = venv.task.targets[0]
            result = venv.task.evaluate(venv.engine.phys, np.zeros((2, 7)))
            rewards[bonus] = result.reward
            assert bool(result.success[0]) and not bool(result.success[1])
            venv.engine.phys.mocap_pos[:, 0] = target
        finally:
            venv.close()
        assert task.success_bonus == bonus
    assert rewards[1.0][0] - rewards[0.0][0] == pytest.approx(1.0)
    assert rewards[2.5][0] - rewards[0.0][0] == pytest.approx(2.5)
    assert rewards[1.0][1] == pytest.approx(rewards[0.0][1])
    with pytest.raises(ConfigError, match="success_bonus"):
        ArmReach(num_envs=1, success_bonus=float("nan"))
