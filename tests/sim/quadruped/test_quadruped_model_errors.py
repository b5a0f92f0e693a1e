"""What a model may get wrong, as randomization fields: each one really changes the
physics of the randomized model (damping slows a swinging leg, condim 6 resists a foot's
spin, softer contacts let the feet sink, bigger feet lift the trunk, the torque-speed
limit takes torque away at speed), and the default draws nothing new."""

from __future__ import annotations

import dataclasses

import mujoco
import numpy as np
import pytest

import sim2real.sim as S
from sim2real.sim.core.errors import ConfigError
from sim2real.sim.core.randomization import Range
from sim2real.sim.quadruped import constants as c
from sim2real.sim.quadruped.randomize import QuadrupedRandomization

CALF, HIP = 2, 0  # FR_calf's and FR_hip's actuators


def _model(**fields) -> mujoco.MjModel:
    """The quadruped's model after one reset with ``fields`` held (the rest nominal)."""
    dr = dataclasses.replace(QuadrupedRandomization.none(), enabled=True, **fields)
    env = S.make("QuadrupedVelocity", dr=dr, seed=0)
    env.reset(seed=0)
    return env.model


def _stand(model: mujoco.MjModel, seconds: float = 1.0) -> mujoco.MjData:
    data = mujoco.MjData(model)
    mujoco.mj_resetDataKeyframe(model, data, model.key("home").id)
    data.ctrl[:] = c.DEFAULT_POSE
    for _ in range(int(round(seconds / model.opt.timestep))):
        mujoco.mj_step(model, data)
    return data


def _swing(model: mujoco.MjModel, speed: float, target: float, steps: int, joint: int = CALF) -> mujoco.MjData:
    """The robot in the air (no contact), one front-right joint (by actuator) set swinging
    at ``speed`` with its servo commanded to ``target``."""
    data = mujoco.MjData(model)
    mujoco.mj_resetDataKeyframe(model, data, model.key("home").id)
    data.qpos[2] += 1.0
    data.ctrl[:] = c.DEFAULT_POSE
    data.ctrl[joint] = target
    data.qvel[model.jnt_dofadr[model.actuator_trnid[joint, 0]]] = speed
    for _ in range(steps):
        mujoco.mj_step(model, data)
    return data


def _calf_speed(model: mujoco.MjModel, data: mujoco.MjData, joint: int = CALF) -> float:
    return float(data.qvel[model.jnt_dofadr[model.actuator_trnid[joint, 0]]])


def test_joint_damping_slows_a_free_swing() -> None:
    ours, menagerie = _model(), _model(joint_damping=Range(1.95, 1.95))  # 0.05 + 1.95 = 2 N m s/rad
    start = -1.8  # the servo's target is where the swing starts: only damping slows it
    free, damped = (abs(_calf_speed(m, _swing(m, 8.0, start, 4))) for m in (ours, menagerie))
    assert damped < 0.8 * free


def test_joint_friction_and_armature_change_the_swing() -> None:
    base = abs(_calf_speed(m := _model(), _swing(m, 8.0, -1.8, 4)))
    sticky = abs(_calf_speed(m := _model(joint_friction=Range(0.5, 0.5)), _swing(m, 8.0, -1.8, 4)))
    heavy = abs(_calf_speed(m := _model(armature_scale=Range(5.0, 5.0)), _swing(m, 8.0, -1.8, 4)))
    assert sticky < base - 0.1 and heavy > base + 0.1  # more rotor inertia: the servo slows it less


def test_condim_6_and_torsional_friction_resist_a_feet_planted_twist() -> None:
    """A yaw torque on the standing trunk spins the planted feet about the vertical: at
    condim 3 nothing but the servos resists that, at condim 6 the torsional friction does."""

    def twist(model: mujoco.MjModel) -> float:
        data = _stand(model, 0.5)
        start = data.qpos[3:7].copy()
        data.xfrc_applied[model.body("trunk").id, 5] = 6.0
        for _ in range(60):
            mujoco.mj_step(model, data)
        dims = {int(data.contact[i].dim) for i in range(data.ncon)}
        assert dims == {int(model.geom_condim[model.geom("FR_foot").id])}
        return 2 * float(np.arccos(min(1.0, abs(np.dot(start, data.qpos[3:7])))))

    point = twist(_model(foot_condim=3, torsional_friction_scale=Range(5.0, 5.0)))
    rolling = twist(_model(foot_condim=6, torsional_friction_scale=Range(5.0, 5.0)))
    assert rolling < 0.85 * point  # measured 0.052 against 0.070 rad


def test_the_elliptic_cone_and_impratio_reach_the_model_and_reset_restores_them() -> None:
    """Unitree's Go2 runs an elliptic cone at impratio 100; the fields set exactly that, a
    probability draws a mixture over episodes, and the next nominal episode gets the
    model's own options back (the engine randomizes the same model copy every reset)."""
    dr = dataclasses.replace(QuadrupedRandomization.none(), enabled=True, foot_condim=6, elliptic_cone=1.0,
                             impratio=Range(100.0, 100.0))
    env = S.make("QuadrupedVelocity", dr=dr, seed=0)
    env.reset(seed=0)
    assert env.model.opt.cone == mujoco.mjtCone.mjCONE_ELLIPTIC and env.model.opt.impratio == 100.0
    data = _stand(env.model, 0.5)
    elliptic = mujoco.mjtConstraint.mjCNSTR_CONTACT_ELLIPTIC
    assert data.ncon == 4 and all(data.efc_type[data.contact[i].efc_address] == elliptic for i in range(data.ncon))
    nominal, rng = _model(), np.random.default_rng(0)
    QuadrupedRandomization.none().apply(env.model, nominal, rng)
    assert env.model.opt.cone == mujoco.mjtCone.mjCONE_PYRAMIDAL and env.model.opt.impratio == 1.0

    mixed = dataclasses.replace(QuadrupedRandomization.none(), enabled=True, elliptic_cone=0.5)
    cones = [mixed._apply_model_errors(_model(), nominal, rng)["elliptic_cone"]  # pyright: ignore[reportPrivateUsage]
             for _ in range(40)]
    assert 10 < sum(cones) < 30
    with pytest.raises(ConfigError, match="elliptic_cone"):
        dataclasses.replace(QuadrupedRandomization(), elliptic_cone=1.5).validate()


def test_softer_contacts_let_the_feet_sink_and_bigger_feet_lift_the_trunk() -> None:
    def sinkage(model: mujoco.MjModel) -> float:
        data = _stand(model)
        return -min(float(data.contact[i].dist) for i in range(data.ncon))

    assert sinkage(_model(contact_timeconst=Range(0.16, 0.16))) > 3 * sinkage(_model())
    low, high = (_stand(_model(foot_radius_scale=Range(s, s))).qpos[2] for s in (0.8, 1.2))
    assert high - low == pytest.approx(0.4 * c.FOOT_RADIUS, rel=0.25)


def test_the_torque_speed_limit_caps_torque_at_speed() -> None:
    """A hip swinging at 10 rad/s with its servo pulling hard the same way gets the
    published line's torque (23.7 N m falling to zero at 30.1 rad/s), not its peak."""
    nominal = _model()
    limited = _model(torque_speed_limit=Range(1.0, 1.0))
    knee = limited.jnt_dofadr[limited.actuator_trnid[CALF, 0]]
    assert limited.dof_damping[knee] - nominal.dof_damping[knee] == pytest.approx(c.CALF_TORQUE / c.CALF_VELOCITY)
    dof = limited.jnt_dofadr[limited.actuator_trnid[HIP, 0]]
    back_emf = limited.dof_damping[dof] - nominal.dof_damping[dof]
    for model, extra, speed in ((nominal, 0.0, -10.0), (limited, back_emf, -10.0), (limited, back_emf, 0.0)):
        data = _swing(model, speed, c.HIP_RANGE[0], 0, HIP)
        mujoco.mj_forward(model, data)
        torque = float(data.actuator_force[HIP]) - extra * speed  # the motor's: servo plus back EMF
        line = -c.HIP_TORQUE * (1 - abs(speed) / c.HIP_VELOCITY) if extra else -c.HIP_TORQUE
        assert torque == pytest.approx(line, rel=1e-6), (extra, speed)  # without a limit: the peak at any speed


def test_every_model_sweep_changes_the_model_and_the_defaults_draw_nothing() -> None:
    nominal = _model()
    for name, sweep in QuadrupedRandomization.model_sweeps().items():
        fields = {f: v for f, v in sweep.fixed} | {sweep.field: sweep.values[-1]}  # the farthest point
        defaults = QuadrupedRandomization()
        held = {f: (Range(v, v) if isinstance(getattr(defaults, f), Range) else type(getattr(defaults, f))(v))
                for f, v in fields.items()}
        model = _model(**held)
        changed = [f for f in ("dof_damping", "dof_frictionloss", "dof_armature", "geom_condim", "geom_friction",
                                "geom_solref", "geom_size", "actuator_biasprm")
                   if not np.array_equal(getattr(model, f), getattr(nominal, f))]
        changed += [f"opt.{f}" for f in ("cone", "impratio") if getattr(model.opt, f) != getattr(nominal.opt, f)]
        assert changed, name
    # Constant ranges draw nothing: a training episode is the same as before these fields.
    rng = np.random.default_rng(3)
    before = rng.bit_generator.state
    QuadrupedRandomization.train()._apply_model_errors(_model(), nominal, rng)  # pyright: ignore[reportPrivateUsage]
    assert rng.bit_generator.state == before
