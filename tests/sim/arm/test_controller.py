"""The scripted Cartesian controller reaches targets and inserts pegs."""

from __future__ import annotations

import numpy as np
import pytest

import sim2real.sim as sim
from sim2real.policies.classical.arm import ArmCartesianController
from sim2real.sim.core.errors import ConfigError


def run_episodes(
    task: str, num_envs: int, mode: str = "ee_delta", dr: str | None = None, seed: int = 1, **controller_options: float
) -> tuple[np.ndarray, list[dict]]:
    """One episode per env with the controller; success flags and the final infos."""
    env = sim.make_vec(task, num_envs, action_mode=mode, dr=dr, seed=seed, nthread=2)
    controller = ArmCartesianController.for_task(env.task, **controller_options)
    obs = env.reset()
    controller.reset()
    finished = np.zeros(num_envs, dtype=bool)
    success = np.zeros(num_envs, dtype=bool)
    final: list[dict] = [{} for _ in range(num_envs)]
    for _ in range(env.engine.episode_steps):
        obs, _, done, infos = env.step(controller.act(obs))
        for i in np.flatnonzero(done & ~finished):
            success[i] = infos[i]["is_success"]
            final[i] = infos[i]
        finished |= done
        if finished.all():
            break
    return success, final


@pytest.mark.parametrize(("mode", "dr"), [("ee_delta", None), ("ee_delta", "train"), ("ee_impedance", None)])
def test_reaches_at_least_95_percent_of_random_targets(mode: str, dr: str | None) -> None:
    success, final = run_episodes("ArmReach", 40, mode=mode, dr=dr)
    assert success.mean() >= 0.95
    # Success means within 2 cm, reported at the episode's last step.
    assert all(f["metrics"]["ee_distance"] < 0.02 for f, s in zip(final, success) if s)


def test_inserts_the_peg_with_bounded_force() -> None:
    success, final = run_episodes("ArmPegInsert", 20, seed=2)
    assert success.mean() >= 0.9
    assert max(f["metrics"]["contact_force_peak"] for f in final) < 100.0


def test_descending_without_alignment_costs_contact_force() -> None:
    """Negative control: descending straight away (up to 2.5 cm off-centre) hits the rim;
    the compliant impedance still slides many pegs in, but only with large contact forces."""
    _, aligned = run_episodes("ArmPegInsert", 8, seed=2)
    _, blind = run_episodes("ArmPegInsert", 8, seed=2, align_tolerance=0.05, hover_height=-0.01)
    peak = [np.mean([f["metrics"]["contact_force_peak"] for f in finals]) for finals in (aligned, blind)]
    assert peak[1] > 20.0 and peak[1] > 3 * peak[0] + 10.0


def test_rejects_layouts_it_cannot_drive() -> None:
    reach = sim.make("ArmReach", action_mode="joint_torque").task
    with pytest.raises(ConfigError, match="action_mode"):
        ArmCartesianController.for_task(reach)
    maze_task = sim.make("ArmMaze", action_mode="ee_delta").task
    with pytest.raises(ConfigError, match="observation_layout"):
        ArmCartesianController.for_task(maze_task)


def test_tilt_limit_keeps_the_gripper_pointing_down_whatever_the_rotation_actions():
    """A task option: 0 holds the setpoint at gripper-down about x and y (yaw stays free)."""
    import pytest

    from sim2real.policies.rewards.captions import arm_reach
    from sim2real.sim import make_vec
    from sim2real.sim.core.errors import ConfigError

    tilts = {}
    for limit in (None, 0.0, 0.3):
        venv = make_vec("ArmReach", 2, seed=0, **({} if limit is None else {"tilt_limit": limit}))
        try:
            venv.reset()
            action = np.zeros((2, 7))
            action[:, 3:5] = 1.0  # full roll and pitch rate, every step
            for _ in range(30):
                venv.step_async(action)
                venv.step_wait()
            tilts[limit] = arm_reach(venv.task, venv.engine.phys).state["ee_tilt_deg"]
        finally:
            venv.close()
    assert np.all(tilts[None] > 40.0)  # the default 0.8 rad limit lets the wrist tip over
    assert np.all(tilts[0.0] < 1.0)
    assert np.all(tilts[0.3] < np.degrees(0.3 * np.sqrt(2)) + 2.0) and np.all(tilts[0.3] > 10.0)
    for bad in (-0.1, 2.0, "down"):
        with pytest.raises(ConfigError, match="tilt_limit"):
            make_vec("ArmReach", 1, tilt_limit=bad)
    with pytest.raises(ConfigError, match="Cartesian"):
        make_vec("ArmReach", 1, action_mode="joint_position", tilt_limit=0.0)


def test_init_joint_noise_widens_the_start_postures_and_is_checked():
    """A task option: the half-width of the uniform noise on each initial joint angle."""
    import pytest

    from sim2real.sim import make_vec
    from sim2real.sim.arm import constants as C
    from sim2real.sim.core.errors import ConfigError

    spread = {}
    for noise in (None, 0.5):
        venv = make_vec("ArmReach", 64, seed=0, **({} if noise is None else {"init_joint_noise": noise}))
        try:
            venv.reset()
            offset = venv.engine.phys.qpos[:, :7] - C.HOME_QPOS
        finally:
            venv.close()
        spread[noise] = np.abs(offset).max()
    assert spread[None] <= 0.05 + 1e-9
    assert 0.4 < spread[0.5] <= 0.5 + 1e-9
    for bad in (-0.1, 4.0, "wide"):
        with pytest.raises(ConfigError, match="init_joint_noise"):
            make_vec("ArmReach", 1, init_joint_noise=bad)
