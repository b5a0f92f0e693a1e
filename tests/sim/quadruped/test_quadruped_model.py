"""The quadruped MJCF against its published numbers, and physical sanity checks with
raw MuJoCo (no engine): standing, dropping, stability under random targets."""

from __future__ import annotations

import mujoco
import numpy as np
import pytest

from sim2real.sim.quadruped import constants as c
from sim2real.sim.quadruped.scene import add_flat_floor, robot_spec


@pytest.fixture(scope="module")
def model() -> mujoco.MjModel:
    spec = robot_spec()
    add_flat_floor(spec)
    return spec.compile()


def _stand(model: mujoco.MjModel, seconds: float, ctrl: np.ndarray, key: str = "home", drop: float = 0.0):
    data = mujoco.MjData(model)
    mujoco.mj_resetDataKeyframe(model, data, model.key(key).id)
    data.qpos[2] += drop
    data.ctrl[:] = ctrl
    heights, contacts = [], []
    touch = np.concatenate(
        [np.arange(model.sensor(f"{leg}_touch").adr[0], model.sensor(f"{leg}_touch").adr[0] + 1) for leg in c.LEGS]
    )
    for _ in range(int(round(seconds / model.opt.timestep))):
        mujoco.mj_step(model, data)
        heights.append(data.qpos[2])
        contacts.append(data.sensordata[touch] > 1.0)
    return data, np.array(heights), np.array(contacts)


def test_mass_matches_go2_scale(model: mujoco.MjModel) -> None:
    total = model.body_mass.sum()
    assert 14.0 <= total <= 16.0
    assert total == pytest.approx(c.TOTAL_MASS, abs=1e-6)
    assert model.body_mass[model.body("trunk").id] == pytest.approx(c.TRUNK_MASS)


def test_kinematics_match_constants(model: mujoco.MjModel) -> None:
    for leg in c.LEGS:
        sx = 1 if leg[0] == "F" else -1
        sy = 1 if leg[1] == "L" else -1
        np.testing.assert_allclose(model.body(f"{leg}_hip").pos, [sx * c.HIP_OFFSET[0], sy * c.HIP_OFFSET[1], 0])
        np.testing.assert_allclose(model.body(f"{leg}_thigh").pos, [0, sy * c.THIGH_OFFSET, 0])
        np.testing.assert_allclose(model.body(f"{leg}_calf").pos, [0, 0, -c.THIGH_LENGTH])
        foot = model.geom(f"{leg}_foot")
        assert foot.size[0] == pytest.approx(c.FOOT_RADIUS)
        assert foot.pos[2] == pytest.approx(-c.CALF_LENGTH)
    np.testing.assert_allclose(2 * model.geom("trunk_collision").size, c.TRUNK_SIZE)


def test_joint_and_torque_limits_match_constants(model: mujoco.MjModel) -> None:
    ranges = np.array([model.joint(n).range for n in c.JOINT_NAMES])
    np.testing.assert_allclose(ranges, c.joint_ranges())
    np.testing.assert_allclose(model.actuator_ctrlrange, c.joint_ranges())  # servo targets stay reachable
    np.testing.assert_allclose(model.actuator_forcerange[:, 1], c.torque_limits())
    np.testing.assert_allclose(model.actuator_forcerange[:, 0], -c.torque_limits())
    assert np.all(model.actuator_forcelimited)
    np.testing.assert_allclose(model.actuator_gainprm[:, 0], c.KP)
    np.testing.assert_allclose(model.actuator_biasprm[:, 1], -c.KP)
    np.testing.assert_allclose(model.actuator_biasprm[:, 2], -c.KV)
    assert [model.actuator(i).name for i in range(model.nu)] == list(c.ACTUATOR_NAMES)
    assert model.opt.timestep == c.PHYSICS_DT


def test_only_feet_and_trunk_collide(model: mujoco.MjModel) -> None:
    robot = model.body_rootid[model.geom_bodyid] == model.body("trunk").id
    colliding = robot & ((model.geom_contype != 0) | (model.geom_conaffinity != 0))
    names = sorted(model.geom(i).name for i in np.flatnonzero(colliding))
    assert names == sorted([*c.FOOT_GEOMS, "trunk_collision", "head_collision"])
    # Robot geoms never collide with each other: contype & conaffinity share no bit.
    for i in np.flatnonzero(colliding):
        for j in np.flatnonzero(colliding):
            assert not (model.geom_contype[i] & model.geom_conaffinity[j])


def test_home_keyframe_is_the_default_pose(model: mujoco.MjModel) -> None:
    home = model.key("home")
    np.testing.assert_allclose(home.qpos[7:], c.DEFAULT_POSE)
    assert home.qpos[2] == pytest.approx(c.STANDING_HEIGHT, abs=1e-3)
    np.testing.assert_allclose(model.key("crouch").qpos[7:], c.CROUCH_POSE)


def test_stands_at_default_targets_for_5_s(model: mujoco.MjModel) -> None:
    """Zero action (servo targets at the default pose): the Kp-35 servos sag under
    the robot's weight but it stays up on all four feet and settles."""
    data, z, contact = _stand(model, 5.0, c.DEFAULT_POSE)
    settled = z[len(z) // 2 :]
    assert settled.min() > 0.20 and settled.max() < 0.30
    assert settled.std() < 2e-3
    assert contact[-200:].all()
    up = np.zeros(9)
    mujoco.mju_quat2Mat(up, data.qpos[3:7])
    assert up[8] > 0.97  # within 14 degrees of level


def test_survives_a_15_cm_drop(model: mujoco.MjModel) -> None:
    """With Kd 1.0 the legs absorb a 15 cm drop and settle standing (Kd 0.5 folds)."""
    _, z, contact = _stand(model, 3.0, c.DEFAULT_POSE, drop=0.15)
    assert z[-200:].min() > 0.2
    assert contact[-100:].all()


def test_stable_under_random_targets(model: mujoco.MjModel) -> None:
    """Random servo targets over the whole joint range at 50 Hz for 10 s: no NaN, no
    warnings, no blow-up. (MuJoCo models no motor speed limit: unloaded legs slewing
    across their whole range reach ~2x the rated 30 rad/s; rewards penalise that.)"""
    data = mujoco.MjData(model)
    mujoco.mj_resetDataKeyframe(model, data, model.key("home").id)
    rng = np.random.default_rng(0)
    low, high = model.actuator_ctrlrange.T
    peak = 0.0
    for step in range(2000):
        if step % 4 == 0:
            data.ctrl[:] = rng.uniform(low, high)
        mujoco.mj_step(model, data)
        peak = max(peak, np.abs(data.qvel[6:]).max())
    assert np.isfinite(data.qpos).all()
    assert data.warning[mujoco.mjtWarning.mjWARN_BADQACC].number == 0
    assert peak < 100.0  # rad/s


def test_imu_and_contact_sensors_read_physics(model: mujoco.MjModel) -> None:
    data, _, _ = _stand(model, 1.0, c.DEFAULT_POSE)
    acc = data.sensor("imu_acc").data
    assert acc[2] == pytest.approx(9.81, abs=0.3)  # the accelerometer measures the support force
    touch = sum(data.sensor(f"{leg}_touch").data[0] for leg in c.LEGS)
    assert touch == pytest.approx(c.TOTAL_MASS * 9.81, rel=0.02)
    assert data.sensor("trunk_touch").data[0] == 0.0
    quat = data.sensor("imu_quat").data
    np.testing.assert_allclose(np.abs(quat), np.abs(data.qpos[3:7]), atol=1e-3)


def test_frame_conversions_match_mujoco() -> None:
    from sim2real.sim.quadruped import frames

    rng = np.random.default_rng(0)
    quat = rng.normal(size=(6, 4))
    quat /= np.linalg.norm(quat, axis=1, keepdims=True)
    expected = np.zeros((6, 9))
    for q, out in zip(quat, expected):
        mujoco.mju_quat2Mat(out, q)
    np.testing.assert_allclose(frames.rotation_matrices(quat).reshape(6, 9), expected, atol=1e-12)
    heading = np.array([0.3, -2.0])
    np.testing.assert_allclose(
        frames.world_to_heading(heading, np.array([[np.cos(0.3), np.sin(0.3)], [0.0, 1.0]])),
        [[1.0, 0.0], [np.sin(-2.0), np.cos(-2.0)]],  # (0, 1) seen from heading -2 rad
        atol=1e-12,
    )
    yaw = frames.yaw_quat(0.7)
    rot = np.zeros(9)
    mujoco.mju_quat2Mat(rot, yaw)
    assert np.arctan2(rot[3], rot[0]) == pytest.approx(0.7)
