"""Quadruped domain randomization: presets follow RESEARCH.md, held-out is wider,
draws change the model within range and never compound, bad values name the field."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import sim2real.sim as S
from sim2real.sim.core.errors import ConfigError
from sim2real.sim.core.randomization import Range
from sim2real.sim.quadruped import constants as c
from sim2real.sim.quadruped.randomize import QuadrupedRandomization


def test_train_preset_follows_the_field() -> None:
    dr = QuadrupedRandomization.train()
    dr.validate()
    assert dr.friction == Range(0.4, 1.25)
    assert dr.mass_scale == Range(0.9, 1.1)
    assert dr.com_shift == Range(-0.05, 0.05)
    assert dr.latency_steps == (0, 1)
    assert 10.0 <= dr.push_interval_s <= 15.0 and dr.push_velocity == Range(0.5, 1.0)
    assert dr.obs_noise_scale > 0 and dr.motor_strength.low < 1 < dr.motor_strength.high


def test_heldout_is_wider_everywhere() -> None:
    train, held = QuadrupedRandomization.train(), QuadrupedRandomization.heldout()
    held.validate()
    model_errors = {s.field for s in QuadrupedRandomization.model_sweeps().values()}
    for f in dataclasses.fields(train):
        a, b = getattr(train, f.name), getattr(held, f.name)
        if a == b and f.name in model_errors:
            continue  # a model error neither preset samples: the robustness study sweeps it
        if isinstance(a, Range):
            assert b.low <= a.low and b.high >= a.high, f.name
            assert (b.low, b.high) != (a.low, a.high), f.name
    assert held.latency_steps[1] > train.latency_steps[1]


@pytest.mark.parametrize(
    ("values", "field"),
    [
        ({"trunk_added_mass": [-5.0, 1.0]}, "trunk_added_mass.low"),
        ({"joint_friction": [0.0, float("inf")]}, "joint_friction.high"),
        ({"armature_scale": [1.2, 0.8]}, "armature_scale"),
        ({"armature_scale": [0.0, 1.0]}, "armature_scale.low"),
        ({"friction": [-1.0, 1.0]}, "friction.low"),
    ],
)
def test_bad_values_name_the_field(values: dict, field: str) -> None:
    with pytest.raises(ConfigError) as err:
        QuadrupedRandomization.from_dict(values)
    assert err.value.field == field


def test_draws_change_the_model_within_range_and_never_compound() -> None:
    dr = QuadrupedRandomization.train()
    env = S.make("QuadrupedVelocity", dr=dr, seed=0)
    engine = env.engine
    nominal = engine.nominal
    trunk = nominal.body("trunk").id
    legs = nominal.jnt_dofadr[1:]
    masses = []
    for episode in range(20):
        env.reset(seed=episode)
        m, s = env.model, engine.dr_sampled[0]
        foot = m.geom("FR_foot").id
        assert dr.friction.contains(m.geom_friction[foot, 0] / nominal.geom_friction[foot, 0])
        payload = m.body_mass[trunk] - nominal.body_mass[trunk] * s["mass_scale"][0]
        assert payload == pytest.approx(s["trunk_added_mass"], abs=2e-3) and dr.trunk_added_mass.contains(payload)
        assert dr.com_shift.contains(m.body_ipos[trunk] - nominal.body_ipos[trunk])
        assert dr.joint_friction.contains(m.dof_frictionloss[legs])
        assert dr.joint_damping.contains(m.dof_damping[legs] - nominal.dof_damping[legs])
        assert dr.armature_scale.contains(m.dof_armature[legs] / nominal.dof_armature[legs])
        assert dr.motor_strength.contains(m.actuator_forcerange[:, 1] / c.torque_limits())
        kp_scale = m.actuator_gainprm[:, 0] / c.KP / (m.actuator_forcerange[:, 1] / c.torque_limits())
        assert dr.pd_gain_scale.contains(kp_scale)
        # Only the robot's own bodies get heavier or lighter.
        assert np.array_equal(m.body_mass[0], nominal.body_mass[0])
        masses.append(m.body_mass.sum())
        # The critic's view of the draw agrees with the model.
        priv = dict(
            zip(
                [n for n, _ in env.task.privileged_layout()],
                np.split(
                    env.task.privileged(engine.phys)[0], np.cumsum([n for _, n in env.task.privileged_layout()])[:-1]
                ),
            )
        )
        assert priv["trunk_payload"][0] == pytest.approx(m.body_mass[trunk] - nominal.body_mass[trunk])
    lo = c.TOTAL_MASS * 0.9 + dr.trunk_added_mass.low
    hi = c.TOTAL_MASS * 1.1 + dr.trunk_added_mass.high
    assert lo <= min(masses) and max(masses) <= hi and np.ptp(masses) > 0.5
    env.engine.dr = QuadrupedRandomization.none()
    env.reset(seed=0)
    fields = ("body_mass", "body_ipos", "geom_friction", "dof_frictionloss", "dof_damping", "dof_armature")
    for name in (*fields, "actuator_gainprm"):
        np.testing.assert_array_equal(getattr(env.model, name), getattr(nominal, name))


def test_pushes_and_latency_reach_the_robot() -> None:
    dr = dataclasses.replace(
        QuadrupedRandomization.none(),
        enabled=True,
        push_velocity=Range(1.0, 1.0),
        push_interval_s=0.1,
        latency_steps=(1, 1),
    )
    env = S.make("QuadrupedVelocity", dr=dr, seed=0, init_velocity_noise=0.0)
    env.reset(seed=0)
    limits = env.model.actuator_ctrlrange.T
    env.step(np.ones(12))  # latency 1: the servos still see the previous (zero) action
    np.testing.assert_allclose(env.data.ctrl, np.clip(c.DEFAULT_POSE, *limits))
    env.step(np.zeros(12))  # ... and now the ones
    np.testing.assert_allclose(env.data.ctrl, np.clip(c.DEFAULT_POSE + c.ACTION_SCALE, *limits))
    for _ in range(3):
        env.step(np.zeros(12))
    assert np.linalg.norm(env.data.qvel[:2]) > 0.5  # kicked sideways
