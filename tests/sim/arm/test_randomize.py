"""Arm domain randomization: presets validate, draws change the model within their
ranges relative to the nominal model, bad values name their field."""

from __future__ import annotations

import dataclasses

import mujoco
import numpy as np
import pytest

import sim2real.sim as sim
from sim2real.sim.arm.randomize import ArmRandomization
from sim2real.sim.core.errors import ConfigError
from sim2real.sim.core.randomization import Range


def draw(task: str, dr: ArmRandomization, mode: str = "ee_impedance", seed: int = 0):
    env = sim.make(task, action_mode=mode, dr=dr, seed=seed)
    _, info = env.reset(seed=seed)
    return env.engine.nominal, env.model, info["dr"]


def test_presets_validate_and_heldout_is_wider() -> None:
    train, held = ArmRandomization.train(), ArmRandomization.heldout()
    train.validate()
    held.validate()
    for f in dataclasses.fields(ArmRandomization):
        a, b = getattr(train, f.name), getattr(held, f.name)
        if isinstance(a, Range):
            assert b.low <= a.low and b.high >= a.high, f.name


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_draws_change_the_model_within_ranges(seed: int) -> None:
    dr = ArmRandomization.heldout()
    nominal, model, sampled = draw("ArmPegInsert", dr, seed=seed)
    robot = dr.robot_body_ids(model)
    ratio = model.body_mass[robot] / nominal.body_mass[robot]
    assert dr.mass_scale.contains(ratio) and not np.allclose(ratio, 1.0)
    # Gravity compensation still carries the nominal weight (the firmware's model).
    np.testing.assert_allclose(model.body_gravcomp[robot] * model.body_mass[robot], nominal.body_mass[robot])
    peg = model.body("peg").id
    assert dr.object_mass.contains(model.body_mass[peg] / nominal.body_mass[peg])
    peg_geom = model.geom("peg").id
    f = model.geom_friction[peg_geom, 0] / nominal.geom_friction[peg_geom, 0]
    assert f == pytest.approx(sampled["friction"] * sampled["object_friction"], rel=1e-3)  # reported rounded
    arm_dofs = model.jnt_dofadr[[model.joint(f"joint{i}").id for i in range(1, 8)]]
    assert dr.joint_damping.contains(model.dof_damping[arm_dofs] / nominal.dof_damping[arm_dofs])
    assert dr.joint_friction.contains(model.dof_frictionloss[arm_dofs])
    # Variable impedance: spring and damper gains follow their axis's setpoint strength.
    for axis in ("x", "ry"):
        s = model.actuator(f"imp_{axis}_setpoint").gainprm[0]
        assert dr.motor_strength.contains(s)
        np.testing.assert_allclose(model.actuator(f"imp_{axis}_spring").gainprm[:3], [0, -s, 0])
        np.testing.assert_allclose(model.actuator(f"imp_{axis}_damper").gainprm[:3], [0, 0, -s])


def test_maze_walls_get_their_own_friction_and_stiffness() -> None:
    dr = ArmRandomization(wall_friction=Range(2.0, 2.0), wall_stiffness=Range(4.0, 4.0))
    nominal, model, sampled = draw("ArmMaze", dr)
    wall = model.geom("wall3").id
    assert model.geom_friction[wall, 0] == pytest.approx(2.0 * nominal.geom_friction[wall, 0])
    assert model.geom_solref[wall, 0] == pytest.approx(nominal.geom_solref[wall, 0] / 2.0)
    table = model.geom("table").id
    assert model.geom_friction[table, 0] == nominal.geom_friction[table, 0]
    assert sampled["wall_stiffness"] == 4.0


def test_draws_never_compound_and_none_is_nominal() -> None:
    dr = ArmRandomization(mass_scale=Range(1.1, 1.1), object_mass=Range(2.0, 2.0))
    env = sim.make("ArmPush", dr=dr, seed=0)
    for _ in range(4):
        env.reset()
    nominal = env.engine.nominal
    robot = dr.robot_body_ids(nominal)
    np.testing.assert_allclose(env.model.body_mass[robot], 1.1 * nominal.body_mass[robot])
    cube = nominal.body("cube").id
    assert env.model.body_mass[cube] == pytest.approx(2.0 * nominal.body_mass[cube])
    _, model, sampled = draw("ArmPush", ArmRandomization.none())
    assert sampled == {}
    np.testing.assert_array_equal(model.body_mass, nominal.body_mass)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("joint_friction", [-1.0, 0.2]),
        ("object_mass", [0.0, 1.0]),
        ("wall_stiffness", [1.0, 50.0]),
        ("wall_friction", [2.0, 1.0]),
        ("com_shift", [-0.2, 0.2]),
    ],
)
def test_bad_values_name_their_field(field: str, value: list[float]) -> None:
    with pytest.raises(ConfigError, match=field):
        ArmRandomization.from_dict({field: value})


def test_applies_to_an_unrelated_model_only_with_arm_joints() -> None:
    model = mujoco.MjModel.from_xml_string(
        "<mujoco><worldbody><body><joint/><geom size='.1'/></body></worldbody></mujoco>"
    )
    with pytest.raises(ConfigError, match="model"):
        ArmRandomization.train().apply(model, model, np.random.default_rng(0))
