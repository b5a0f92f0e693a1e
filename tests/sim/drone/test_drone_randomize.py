"""Drone domain randomization: presets validate, draws stay in range and change
the model, nominal values come back, bad values name their field."""

from __future__ import annotations

import dataclasses

import mujoco
import numpy as np
import pytest

from sim2real.sim import make
from sim2real.sim.core.errors import ConfigError
from sim2real.sim.core.randomization import Range
from sim2real.sim.drone import constants as C
from sim2real.sim.drone.randomize import DroneRandomization

DRONE_FIELDS = ("inertia_scale", "thrust_coefficient", "torque_coefficient", "motor_time_constant", "wind_speed",
                "drag_scale")


@pytest.fixture()
def nominal() -> mujoco.MjModel:
    return mujoco.MjModel.from_xml_path(str(C.MODEL_XML))


def test_presets_validate_and_heldout_is_wider_than_train() -> None:
    train, heldout = DroneRandomization.train(), DroneRandomization.heldout()
    train.validate()
    heldout.validate()
    for f in dataclasses.fields(DroneRandomization):
        a, b = getattr(train, f.name), getattr(heldout, f.name)
        if isinstance(a, Range):
            assert b.low <= a.low and b.high >= a.high, f.name
    for name in (*DRONE_FIELDS, "mass_scale", "motor_strength"):
        a, b = getattr(train, name), getattr(heldout, name)
        assert (b.high - b.low) > (a.high - a.low), f"{name}: held-out range must be strictly wider"
    assert heldout.latency_steps[1] > train.latency_steps[1]


def test_train_draws_stay_in_range_and_change_the_model(nominal: mujoco.MjModel) -> None:
    dr = DroneRandomization.train()
    model = mujoco.MjModel.from_xml_path(str(C.MODEL_XML))
    rng = np.random.default_rng(0)
    body = model.body("drone").id
    winds = []
    for _ in range(20):
        s = dr.apply(model, nominal, rng)
        mass = model.body_mass[body] / nominal.body_mass[body]
        assert dr.mass_scale.contains(mass) and mass == pytest.approx(s["mass_scale"][0], abs=1e-4)
        inertia = model.body_inertia[body] / (nominal.body_inertia[body] * mass)
        assert dr.inertia_scale.contains(inertia)
        thrust = model.actuator_gainprm[:, 0] / C.MAX_THRUST
        np.testing.assert_allclose(thrust, np.array(s["motor_strength"]) * s["thrust_coefficient"], rtol=1e-3)
        assert dr.motor_strength.contains(s["motor_strength"])
        assert dr.thrust_coefficient.contains(s["thrust_coefficient"])
        torque = nominal.actuator_gear[:, 5] * s["torque_coefficient"]
        np.testing.assert_allclose(model.actuator_gear[:, 5], torque, rtol=1e-3)
        assert dr.motor_time_constant.contains(model.actuator_dynprm[:, 0])
        assert model.opt.wind[2] == 0.0 and dr.wind_speed.contains(np.linalg.norm(model.opt.wind))
        assert model.opt.density / nominal.opt.density == pytest.approx(model.opt.viscosity / nominal.opt.viscosity)
        assert dr.drag_scale.contains(model.opt.density / nominal.opt.density)
        assert dr.com_shift.contains(model.body_ipos[body] - nominal.body_ipos[body])
        winds.append(model.opt.wind.copy())
    # Draws differ between episodes and from nominal.
    assert np.ptp(np.array(winds), axis=0).max() > 0.5
    assert not np.allclose(model.actuator_dynprm[:, 0], C.MOTOR_TIME_CONSTANT)


def test_disabled_randomization_restores_every_nominal_field(nominal: mujoco.MjModel) -> None:
    model = mujoco.MjModel.from_xml_path(str(C.MODEL_XML))
    rng = np.random.default_rng(1)
    DroneRandomization.heldout().apply(model, nominal, rng)
    assert DroneRandomization.none().apply(model, nominal, rng) == {}
    for name in ("body_mass", "body_inertia", "body_ipos", "actuator_gainprm", "actuator_gear", "actuator_dynprm"):
        np.testing.assert_array_equal(getattr(model, name), getattr(nominal, name), err_msg=name)
    np.testing.assert_array_equal(model.opt.wind, nominal.opt.wind)
    assert (model.opt.density, model.opt.viscosity) == (nominal.opt.density, nominal.opt.viscosity)


def test_draws_never_compound(nominal: mujoco.MjModel) -> None:
    dr = DroneRandomization(
        thrust_coefficient=Range(1.2, 1.2), torque_coefficient=Range(1.5, 1.5), drag_scale=Range(2, 2)
    )
    model = mujoco.MjModel.from_xml_path(str(C.MODEL_XML))
    rng = np.random.default_rng(0)
    for _ in range(3):
        dr.apply(model, nominal, rng)
    np.testing.assert_allclose(model.actuator_gainprm[:, 0], 1.2 * C.MAX_THRUST)
    np.testing.assert_allclose(np.abs(model.actuator_gear[:, 5]), 1.5 * C.YAW_TORQUE_RATIO)
    assert model.opt.viscosity == pytest.approx(2 * nominal.opt.viscosity)


@pytest.mark.parametrize(
    ("values", "field"),
    [
        ({"motor_time_constant": [-0.01, 0.04]}, "motor_time_constant.low"),
        ({"wind_speed": [0.0, 50.0]}, "wind_speed.high"),
        ({"wind_speed": [0.0, "gale"]}, "wind_speed.high"),
        ({"inertia_scale": [1.2, 0.8]}, "inertia_scale"),
        ({"thrust_coefficient": [0.0, 1.0]}, "thrust_coefficient.low"),
        ({"torque_coefficient": [-1.0, 1.0]}, "torque_coefficient.low"),
        ({"drag_scale": [float("nan"), 1.0]}, "drag_scale.low"),
        ({"motor_strength": [0.0, 1.0]}, "motor_strength.low"),
        ({"wind_sped": [0.0, 1.0]}, "wind_sped"),
    ],
)
def test_bad_values_name_the_field(values: dict, field: str) -> None:
    with pytest.raises(ConfigError) as err:
        DroneRandomization.from_dict(values)
    assert err.value.field == field


def test_env_reports_draws_and_privileged_state_matches_the_model() -> None:
    env = make("DroneHover", dr="train", seed=0)
    draws = []
    for _ in range(3):
        _, info = env.reset()
        wind, mass = info["privileged"][:3], info["privileged"][3]
        np.testing.assert_allclose(wind, env.model.opt.wind)
        np.testing.assert_allclose(wind, info["dr"]["wind"], atol=1e-4)
        assert mass == pytest.approx(env.model.body_mass[env.model.body("drone").id])
        np.testing.assert_allclose(info["privileged"][8:], env.model.actuator_gainprm[:, 0] / C.MAX_THRUST)
        draws.append(info["dr"]["motor_time_constant"])
    assert len({tuple(d) for d in draws}) == 3
    # The heldout preset reaches beyond training.
    assert DroneRandomization.heldout().wind_speed.high > DroneRandomization.train().wind_speed.high
