"""The arm's energy tank in ee_impedance mode: exact bookkeeping, both physics
backends agree, and the passivity filter keeps every tank above T_min."""

import mujoco
import numpy as np
import pytest

from sim2real import sim
from sim2real.sim import REGISTRY
from sim2real.sim.core.engine import Engine
from sim2real.sim.core.errors import ConfigError


def _engine(backend: str, seed: int = 3, **options) -> Engine:
    task = REGISTRY.get("ArmMaze")(num_envs=1, action_mode="ee_impedance", **options)
    engine = Engine(task, task.dr_class.none(), seed=seed, backend=backend)
    engine.reset()
    return engine


def _actions(n: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.uniform(-1, 1, (n, 1, 12))


def test_step_and_rollout_backends_keep_the_same_books() -> None:
    a, b = _engine("step"), _engine("rollout")
    for action in _actions(40):
        ma, mb = a.step(action).result.metrics, b.step(action).result.metrics
        for key in ("tank_energy", "energy_injected", "energy_dissipated", "energy_violation"):
            np.testing.assert_allclose(ma[key], mb[key], rtol=1e-6, atol=1e-9, err_msg=key)


def test_jump_charged_equals_the_spring_energy_mujoco_sees() -> None:
    # A tank large enough never to clamp, so the charge is the whole jump.
    engine = _engine("step", energy_tank={"initial": 500.0, "minimum": 0.05, "maximum": 1000.0})
    data, model = engine.data, engine.models[0]
    spring = slice(6, 12)

    def spring_energy_now() -> float:
        mujoco.mj_forward(model, data)
        k = data.ctrl[spring]
        target = data.ctrl[0:6] / k
        # The setpoint actuators' length is the measured servo coordinate.
        return float(0.5 * np.sum(k * (target - data.actuator_length[0:6]) ** 2))

    for action in _actions(15, seed=1):
        before = spring_energy_now()
        level = engine.task.energy.tank.level[0]
        ctrl = engine.task.action_to_ctrl(action[0][None], engine.phys)
        data.ctrl[:] = ctrl[0]
        after = spring_energy_now()
        charged = level - engine.task.energy.tank.level[0]
        np.testing.assert_allclose(charged, after - before, rtol=1e-6, atol=1e-9)
        engine._physics(ctrl, engine.decimation)  # advance as the engine would


def test_holding_still_only_fills_the_tank() -> None:
    engine = _engine("rollout", energy_tank={"initial": 0.5, "minimum": 0.05, "maximum": 2.0})
    engine.step(_actions(1)[0])  # set the arm moving
    engine.step(np.zeros((1, 12)))  # stiffness is absolute: action 0 selects a new one once
    levels = []
    for _ in range(20):
        m = engine.step(np.zeros((1, 12))).result.metrics
        assert m["energy_injected"][0] < 1e-12  # the same spring: no jump (up to rounding)
        levels.append(m["tank_energy"][0])
    assert np.all(np.diff(levels) >= 0.0) and levels[-1] > levels[0]


def _adversarial(k: int) -> np.ndarray:
    """Stiffest spring, setpoint slammed back and forth (the worst energy pump)."""
    a = np.ones((8, 12))
    a[:, :6] *= 1.0 if k % 2 else -1.0
    return a


@pytest.mark.parametrize("policy", ["random", "adversarial"])
def test_passivity_filter_keeps_every_tank_above_minimum(policy: str) -> None:
    rng = np.random.default_rng(5)
    worst, violation = {}, {}
    for flag in (False, True):
        env = sim.make_vec("ArmMaze", 8, action_mode="ee_impedance", dr="train", seed=11, passivity_filter=flag)
        env.reset()
        low, total = np.inf, 0.0
        for k in range(120):
            a = rng.uniform(-1, 1, (8, 12)) if policy == "random" else _adversarial(k)
            _, _, _, infos = env.step(a)
            low = min(low, min(i["metrics"]["tank_energy"] for i in infos))
            total += sum(i["metrics"]["energy_violation"] for i in infos)
        env.close()
        worst[flag], violation[flag] = low, total
    assert violation[True] == 0.0 and worst[True] >= 0.05
    assert violation[False] > 1.0  # without the filter these policies overdraw the tank


def test_options_are_checked() -> None:
    with pytest.raises(ConfigError, match="ee_impedance"):
        sim.make("ArmMaze", action_mode="ee_delta", passivity_filter=True)
    with pytest.raises(ConfigError, match="passivity_filter"):
        sim.make("ArmMaze", action_mode="ee_impedance", passivity_filter="yes")
    with pytest.raises(ConfigError, match="energy_tank"):
        sim.make("ArmReach", action_mode="ee_impedance", energy_tank={"minimum": -1.0})
