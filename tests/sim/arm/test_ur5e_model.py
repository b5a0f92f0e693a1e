"""The UR5e model (sim/arm/ur5e.xml) against Universal Robots' DH chain and published
numbers: a wrong offset, sign or frame in the hand-written MJCF moves the flange."""

from __future__ import annotations

import mujoco
import numpy as np

from sim2real.sim.arm import ur5e as U


def test_flange_matches_the_dh_chain_at_random_configurations() -> None:
    model = U.load_ur5e_spec().compile()
    data = mujoco.MjData(model)
    site = model.site("ee").id
    rng = np.random.default_rng(46)
    for _ in range(500):
        q = rng.uniform(U.JOINT_LOWER, U.JOINT_UPPER)
        data.qpos[:6] = q
        mujoco.mj_kinematics(model, data)
        pose = U.dh_forward(q)
        assert np.linalg.norm(data.site_xpos[site] - pose[:3, 3]) < 1e-3, q
        np.testing.assert_allclose(data.site_xmat[site].reshape(3, 3), pose[:3, :3], atol=1e-6)


def test_joints_masses_and_limits_are_urs() -> None:
    model = U.load_ur5e_spec().compile()
    assert tuple(model.joint(i).name for i in range(model.njnt)) == U.JOINTS
    masses = [model.body(name).mass[0] for name in ("shoulder_link", "upper_arm_link", "forearm_link",
                                                    "wrist_1_link", "wrist_2_link", "wrist_3_link")]
    np.testing.assert_allclose(masses, U.LINK_MASSES)
    np.testing.assert_allclose(model.jnt_range[:, 0], U.JOINT_LOWER, atol=1e-5)  # the XML: 7 digits
    np.testing.assert_allclose(model.actuator_ctrlrange[:, 1], U.JOINT_UPPER)
    np.testing.assert_allclose(np.degrees(U.VELOCITY_LIMIT), 180.0)


def test_servos_hold_home_against_gravity_and_track_a_step() -> None:
    model = U.load_ur5e_spec().compile()
    data = mujoco.MjData(model)
    data.qpos[:6] = data.ctrl[:6] = U.HOME_QPOS
    mujoco.mj_step(model, data, nstep=500)
    assert np.abs(data.qpos[:6] - U.HOME_QPOS).max() < 1e-4
    data.ctrl[:6] = U.HOME_QPOS + 0.2
    mujoco.mj_step(model, data, nstep=250)  # 0.5 s
    assert np.abs(data.qpos[:6] - data.ctrl[:6]).max() < 0.005
    pose = U.dh_forward(U.HOME_QPOS)
    assert pose[2, 2] < -0.99  # home: the flange points down
