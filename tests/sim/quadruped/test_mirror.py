"""The quadruped's left-right mirror (sim/quadruped/mirror.py) against the simulator: the
observation of a reflected state is the reflected observation, and reflected actions keep
the two robots reflected. Signs guessed wrong would teach a student a wrong symmetry."""

from __future__ import annotations

from typing import Any

import mujoco
import numpy as np
import pytest

from sim2real.policies.studies.tracking import held_command
from sim2real.sim.core.engine import Engine
from sim2real.sim.core.errors import ConfigError
from sim2real.sim.quadruped.mirror import JOINTS, block_mirror, layout_mirror
from sim2real.sim.quadruped.velocity import Velocity

COMMAND = (0.4, 0.2, 0.5)


def reflect_state(data: mujoco.MjData) -> None:
    """``data``'s robot reflected through the world x-z plane (it starts in it, facing +x)."""
    data.qpos[1] *= -1.0
    data.qpos[4] *= -1.0  # (w, x, y, z) -> (w, -x, y, -z)
    data.qpos[6] *= -1.0
    data.qpos[7:19] = JOINTS(data.qpos[7:19].copy())
    data.qvel[1] *= -1.0
    data.qvel[3] *= -1.0  # body-frame angular velocity, a pseudovector: roll and yaw flip
    data.qvel[5] *= -1.0
    data.qvel[6:18] = JOINTS(data.qvel[6:18].copy())


def mirrored_pair(history_steps: int = 0) -> tuple[Engine, Any, Any]:
    """Two environments: 1 starts as 0 reflected, with the reflected command and clock."""
    task = Velocity(num_envs=2, action_mode="gait_residual", history_steps=history_steps,
                             **held_command(COMMAND, 100.0))
    reset = task.reset_env

    def reset_env(i: int, model: mujoco.MjModel, data: mujoco.MjData, rng: np.random.Generator) -> None:
        reset(i, model, data, np.random.default_rng(5))  # the same draw for both
        if i == 1:
            reflect_state(data)
            task.command[1] = task.command[1] * np.array([1.0, -1.0, -1.0])
            assert task.gait is not None
            task.gait.phase[1] = (task.gait.phase[1] + 0.5) % 1.0

    task.reset_env = reset_env
    eng = Engine(task, seed=0)
    eng.reset()
    obs_mirror, action_mirror = task.mirror()
    return eng, obs_mirror, action_mirror


def test_the_observation_of_a_reflected_state_is_the_reflected_observation() -> None:
    eng, obs_mirror, _ = mirrored_pair(history_steps=3)
    obs = eng.observe()
    assert not np.allclose(obs[0], obs[1])  # a state that is not its own mirror
    np.testing.assert_allclose(obs[1], obs_mirror(obs[0]), atol=1e-9)


def test_reflected_actions_keep_the_robots_reflected() -> None:
    """The model, the trot reference and the joint order are left-right symmetric: two
    robots started reflected and driven by reflected actions stay reflected."""
    eng, obs_mirror, action_mirror = mirrored_pair()
    rng = np.random.default_rng(1)
    obs = eng.observe()
    for _ in range(20):  # 0.4 s of a random trot (contacts make two runs part chaotically later)
        a = rng.uniform(-0.5, 0.5, 12)
        out = eng.step(np.stack([a, action_mirror(a)]))
        assert not out.result.terminated.any()
        obs = out.obs
    np.testing.assert_allclose(obs[1], obs_mirror(obs[0]), atol=5e-3)
    assert abs(obs[0][1]) > 0.01  # it moves sideways: the check is not on zeros


def test_the_mirror_is_its_own_inverse_and_refuses_an_unknown_block() -> None:
    mirror = layout_mirror([("base_lin_vel", 3), ("joint_pos", 12), ("gait_clock", 2), ("history", 72)],
                           ("joint_pos", "joint_pos"), 3)
    x = np.random.default_rng(0).normal(size=(4, len(mirror)))
    np.testing.assert_array_equal(mirror(mirror(x)), x)
    with pytest.raises(ConfigError, match="no left-right mirror known for the block 'height_scan'"):
        block_mirror("height_scan", 187)
    with pytest.raises(ConfigError, match="history of 70 values is not 3 x 24"):
        layout_mirror([("joint_pos", 12), ("history", 70)], ("joint_pos", "joint_pos"), 3)


def test_a_task_without_a_mirror_refuses_to_give_one() -> None:
    from sim2real.sim.core.registry import REGISTRY

    with pytest.raises(ConfigError, match="arm/reach has no left-right mirror"):
        REGISTRY.get("ArmReach")(num_envs=1).mirror()
