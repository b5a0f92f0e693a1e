"""Every registered task, in every action mode: creates, resets, steps 1000
random steps without NaN, reproduces its trajectory from a seed, rejects bad
input with errors that name the problem."""

from __future__ import annotations

import numpy as np
import pytest

from sim2real.sim import REGISTRY, make, make_vec
from sim2real.sim.core.errors import ActionError, ConfigError, UnknownTaskError

CASES = [(cls.__name__, cls, mode) for cls in REGISTRY for mode in cls.action_modes]
IDS = [f"{cls.robot}-{cls.name}-{mode}" for _, cls, mode in CASES]


@pytest.mark.parametrize(("name", "cls", "mode"), CASES, ids=IDS)
def test_thousand_random_steps_stay_finite(name: str, cls: type, mode: str) -> None:
    env = make(cls.robot + "/" + cls.name, action_mode=mode, dr="train", seed=0)
    obs, info = env.reset(seed=0)
    assert obs.shape == env.observation_space.shape and np.isfinite(obs).all()
    rng = np.random.default_rng(0)
    episodes = 0
    for _ in range(1000):
        obs, reward, terminated, truncated, info = env.step(rng.uniform(-1, 1, env.action_space.shape))
        assert np.isfinite(obs).all() and np.isfinite(reward)
        assert "success" in info and all(np.isfinite(v) for v in info["metrics"].values())
        assert not info.get("physics_diverged", False)
        if terminated or truncated:
            assert "is_success" in info
            episodes += 1
            env.reset()
    env.close()


@pytest.mark.parametrize("cls", list(REGISTRY), ids=lambda c: f"{c.robot}-{c.name}")
def test_same_seed_same_trajectory(cls: type) -> None:
    def trajectory() -> np.ndarray:
        env = make(cls.robot + "/" + cls.name, dr="train", seed=3)
        out = [env.reset(seed=3)[0]]
        rng = np.random.default_rng(1)
        for _ in range(30):
            obs, _, term, trunc, _ = env.step(rng.uniform(-1, 1, env.action_space.shape))
            out.append(obs)
            if term or trunc:
                out.append(env.reset()[0])
        return np.array(out)

    np.testing.assert_array_equal(trajectory(), trajectory())


@pytest.mark.parametrize("cls", list(REGISTRY), ids=lambda c: f"{c.robot}-{c.name}")
def test_batched_env_steps_every_task(cls: type) -> None:
    env = make_vec(cls.robot + "/" + cls.name, 3, dr="train", seed=0)
    obs = env.reset()
    for _ in range(20):
        obs, reward, _, _ = env.step(np.random.default_rng(0).uniform(-1, 1, (3, env.action_space.shape[0])))
    assert obs.shape == (3, env.observation_space.shape[0]) and np.isfinite(obs).all() and np.isfinite(reward).all()
    env.close()


@pytest.mark.parametrize("cls", list(REGISTRY), ids=lambda c: f"{c.robot}-{c.name}")
def test_bad_input_gives_clear_errors(cls: type) -> None:
    env = make(cls.robot + "/" + cls.name, seed=0)
    env.reset(seed=0)
    n = env.action_space.shape[0]
    with pytest.raises(ActionError, match="shape"):
        env.step(np.zeros(n + 1))
    with pytest.raises(ActionError, match="non-finite"):
        env.step(np.full(n, np.nan))
    env.step(np.zeros(n))  # still usable after rejected actions
    with pytest.raises(ConfigError, match="action_mode"):
        make(cls.robot + "/" + cls.name, action_mode="no_such_mode")
    with pytest.raises(ConfigError) as err:
        make(cls.robot + "/" + cls.name, dr={"friction": [2.0, 1.0]})
    assert err.value.field == "friction"


def test_unknown_task_names_the_registered_ones() -> None:
    with pytest.raises(UnknownTaskError, match="ArmReach"):
        make("ArmReech")


def test_registry_covers_every_robot_and_the_issue_tasks() -> None:
    ids = set(REGISTRY.ids())
    for expected in (
        "ArmReach",
        "ArmPush",
        "ArmPegInsert",
        "ArmMaze",
        "QuadrupedVelocity",
        "QuadrupedVelocityRough",
        "QuadrupedWaypoints",
        "DroneHover",
        "DroneWaypoints",
        "DroneGates",
    ):
        assert f"sim2real/{expected}-v0" in ids


def test_gymnasium_make_works_with_the_registered_ids() -> None:
    import gymnasium as gym

    env = gym.make("sim2real/DroneHover-v0")
    obs, _ = env.reset(seed=0)
    assert env.observation_space.contains(obs.astype(np.float32)) or obs.shape == env.observation_space.shape


@pytest.mark.parametrize("cls", list(REGISTRY), ids=lambda c: f"{c.robot}-{c.name}")
def test_a_misspelt_option_is_refused_not_ignored(cls: type) -> None:
    # A typo in a config's task_options must not train or evaluate a different task.
    with pytest.raises(ConfigError, match=f"unknown option for {cls.robot}/{cls.name}; known: "):
        cls(num_envs=1, action_scal=0.3)
    assert "action_scal" not in cls.known_options()
