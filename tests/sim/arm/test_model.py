"""The arm model: published numbers, gravity compensation, and the Cartesian impedance
laws (fixed and variable stiffness) running inside MuJoCo."""

from __future__ import annotations

import mujoco
import numpy as np
import pytest

from sim2real.sim.arm import constants as C
from sim2real.sim.arm.control import stiffness_from_action
from sim2real.sim.arm.model import ACTION_MODES, damping_for, load_arm_spec
from sim2real.sim.core.errors import ConfigError


def at_home(mode: str) -> tuple[mujoco.MjModel, mujoco.MjData]:
    model = load_arm_spec(mode).compile()
    data = mujoco.MjData(model)
    data.qpos[:7] = C.HOME_QPOS
    data.qpos[7:9] = 0.02
    model.qpos_spring[:7] = C.HOME_QPOS
    mujoco.mj_forward(model, data)
    return model, data


@pytest.mark.parametrize("mode", ACTION_MODES)
def test_every_mode_compiles_with_published_limits(mode: str) -> None:
    model, _ = at_home(mode)
    joints = [model.joint(n) for n in C.ARM_JOINTS]
    np.testing.assert_allclose([j.range[0] for j in joints], C.JOINT_LOWER)
    np.testing.assert_allclose([j.range[1] for j in joints], C.JOINT_UPPER)
    # Every mode clamps the summed actuator torque (gravity compensation included) per joint.
    np.testing.assert_allclose(model.jnt_actfrcrange[[j.id for j in joints], 1], C.TORQUE_LIMIT)
    assert all(model.jnt_actgravcomp[j.id] for j in joints)
    assert model.nu == model.nactuator  # no multi-input actuators: one ctrl per actuator
    assert model.opt.timestep == C.PHYSICS_DT
    gripper = model.actuator("gripper")
    np.testing.assert_allclose(gripper.forcerange, [-C.GRIP_FORCE, C.GRIP_FORCE])
    np.testing.assert_allclose(model.joint("finger_left").range, [0.0, C.FINGER_STROKE])


def test_masses_and_kinematics_match_published_numbers() -> None:
    model, data = at_home("joint_torque")
    for body, mass in C.LINK_MASSES.items():
        measured = model.body(body).mass[0]
        if body == "hand":  # the published hand mass includes both fingers
            measured += 2 * model.body("finger_left").mass[0]
        assert measured == pytest.approx(mass, rel=0.02), body
    # Franka's "ready" pose puts the fingertip at (0.307, 0, 0.487) pointing straight down
    # (forward kinematics of the DH table with the 0.107 flange and 0.1034 fingertip).
    np.testing.assert_allclose(data.site("ee").xpos, [0.3069, 0.0, 0.4869], atol=5e-4)
    np.testing.assert_allclose(data.site("ee").xmat.reshape(3, 3)[:, 2], [0, 0, -1], atol=1e-6)
    assert data.xpos[model.body("link1").id][2] == pytest.approx(0.333)


def test_torque_actuators_match_limits_and_joint_clamp_total_torque() -> None:
    model, data = at_home("joint_torque")
    np.testing.assert_allclose(model.actuator_ctrlrange[:7, 1], C.TORQUE_LIMIT)
    data.ctrl[:7] = C.TORQUE_LIMIT  # full torque on top of gravity compensation
    mujoco.mj_forward(model, data)
    assert np.all(np.abs(data.qfrc_actuator[:7]) <= C.TORQUE_LIMIT + 1e-9)


def test_holds_pose_under_gravity_compensation_with_zero_torque() -> None:
    model, data = at_home("joint_torque")
    data.ctrl[:] = 0.0
    data.ctrl[-1] = 0.04
    start = data.site("ee").xpos.copy()
    mujoco.mj_step(model, data, int(2.0 / C.PHYSICS_DT))
    assert np.linalg.norm(data.site("ee").xpos - start) < 0.003


def test_without_gravity_compensation_the_arm_falls() -> None:
    """The previous test can fail: with gravcomp off the same command sags badly."""
    model, data = at_home("joint_torque")
    model.body_gravcomp[:] = 0.0
    data.ctrl[-1] = 0.04
    start = data.site("ee").xpos.copy()
    mujoco.mj_step(model, data, int(0.5 / C.PHYSICS_DT))
    assert np.linalg.norm(data.site("ee").xpos - start) > 0.05


def step_response(mode: str, offset: np.ndarray, seconds: float = 1.5) -> np.ndarray:
    """Fingertip error to a Cartesian step ``offset`` over time, ``[steps]`` (m)."""
    model, data = at_home(mode)
    target = np.zeros(6)
    target[:3] = data.site("ee").xpos + offset  # rotation target 0 = gripper down = current
    k = np.array([C.EE_POS_STIFFNESS] * 3 + [C.EE_ROT_STIFFNESS] * 3)
    if mode == "ee_delta":
        data.ctrl[:6] = target
    else:
        data.ctrl[:18] = np.concatenate([k * target, k, damping_for(k)])
    data.ctrl[-1] = 0.04
    errors = []
    for _ in range(int(seconds / C.PHYSICS_DT)):
        mujoco.mj_step(model, data)
        errors.append(np.linalg.norm(data.site("ee").xpos - target[:3]))
    return np.array(errors)


def test_cartesian_impedance_settles_on_a_step_target() -> None:
    errors = step_response("ee_delta", np.array([0.05, -0.04, -0.06]))
    settle = np.argmax(np.maximum.accumulate(errors[::-1])[::-1] < 0.002) * C.PHYSICS_DT
    assert errors[-1] < 0.002
    assert 0.05 < settle < 1.0  # critically damped: neither instantaneous nor sluggish
    assert errors.min() > errors[-1] - 1e-3  # no overshoot beyond a mm


def test_variable_impedance_split_law_equals_the_fixed_servo() -> None:
    """Setpoint + spring + damper actuators add up to exactly K (x_d - x) - D xdot."""
    offset = np.array([0.03, 0.02, -0.05])
    np.testing.assert_allclose(step_response("ee_impedance", offset), step_response("ee_delta", offset), atol=1e-9)


@pytest.mark.parametrize("stiffness_action", [-1.0, 0.0, 1.0])
def test_variable_stiffness_sets_static_stiffness(stiffness_action: float) -> None:
    """Push on the fingertip with a constant force; the deflection is F / K."""
    model, data = at_home("ee_impedance")
    k = stiffness_from_action(np.full(6, stiffness_action))
    target = np.zeros(6)
    target[:3] = data.site("ee").xpos
    data.ctrl[:18] = np.concatenate([k * target, k, damping_for(k)])
    data.ctrl[-1] = 0.04
    force = np.array([0.0, 8.0, 0.0])
    hand = model.body("hand").id
    for _ in range(int(2.5 / C.PHYSICS_DT)):
        # Apply the force at the fingertip site: a wrench on the hand at the site point.
        data.xfrc_applied[hand, :3] = force
        data.xfrc_applied[hand, 3:] = np.cross(data.site("ee").xpos - data.xipos[hand], force)
        mujoco.mj_step(model, data)
    deflection = data.site("ee").xpos[1] - target[1]
    # The weak null-space springs add a little stiffness of their own.
    assert deflection == pytest.approx(force[1] / k[1], rel=0.05)


def test_unknown_action_mode_names_the_field() -> None:
    with pytest.raises(ConfigError, match="action_mode"):
        load_arm_spec("velocity")
