"""A foreign MJCF of our quadruped: joints mapped by name, the model's own actuators
(position servos, or torque motors under the policy's PD at the model's timestep), the
policy's control rate, and refusals that name what is missing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import mujoco
import numpy as np
import pytest
from foreign_models import foreign_xml, prefix_map, write_foreign

from sim2real.sim.core.errors import ConfigError
from sim2real.sim.quadruped import constants as C
from sim2real.sim.quadruped.foreign import ForeignQuadruped, parse_joint_map

CONTROL_DT = 0.02


def robot(joint_map: dict[str, str] | None = None, **changes: Any) -> ForeignQuadruped:
    xml = foreign_xml(**changes)
    return ForeignQuadruped(mujoco.MjModel.from_xml_string(xml), CONTROL_DT, C.KP, C.KV,
                            prefix_map() if joint_map is None else joint_map)


def test_joints_are_mapped_by_name_whatever_the_models_order() -> None:
    r = robot()  # legs FL, FR, RL, RR in qpos; ours FR, FL, RR, RL
    d = mujoco.MjData(r.model)
    for i, ours in enumerate(C.JOINT_NAMES):
        d.joint(prefix_map()[ours]).qpos[0] = 0.01 * (i + 1)
    joint_pos = r.measure(d).joint_pos
    assert joint_pos is not None
    np.testing.assert_allclose(joint_pos, 0.01 * np.arange(1, 13))
    assert r.joint_names[0] == "go2_FR_hip_joint" and r.qpos[0] == 10  # FR comes second in this model


def test_an_unknown_joint_is_refused_with_its_name() -> None:
    with pytest.raises(ConfigError, match=r"no hinge joint FR_hip_joint \(our FR_hip_joint\).*11 more.*--joint-map"):
        robot(joint_map={})
    with pytest.raises(ConfigError, match="go2_FR_knee"):
        robot(joint_map={**prefix_map(), "FR_calf_joint": "go2_FR_knee"})


def test_a_model_without_a_free_joint_or_of_another_robot_is_refused() -> None:
    with pytest.raises(ConfigError, match="no free joint"):
        robot(free_joint=False)
    with pytest.raises(ConfigError, match=r"weighs 68\.1 kg.*another robot"):
        robot(trunk_mass=60.0)
    with pytest.raises(ConfigError, match="no body 'torso'"):
        ForeignQuadruped(mujoco.MjModel.from_xml_string(foreign_xml()), CONTROL_DT, joint_map=prefix_map(),
                         base_body="torso")


def test_the_decimation_is_the_control_period_over_the_models_timestep() -> None:
    assert robot(timestep=0.002).decimation == 10
    assert robot(timestep=0.005).decimation == 4
    with pytest.raises(ConfigError, match=r"timestep 0.003 s does not divide the policy's control period 0.02 s"):
        robot(timestep=0.003)


def test_position_servos_get_the_targets_and_motors_the_pd_torque_clipped() -> None:
    servo = robot(motors=False)
    assert servo.drive.servo.all() and "position servos (kp 35)" in servo.drive.describe(servo.kp, servo.kd)
    motor = robot()
    assert not motor.drive.servo.any() and "policy's PD (kp 35, kd 1)" in motor.drive.describe(motor.kp, motor.kd)
    # A stiff PD far from its target saturates: the torque is clipped to each motor's ctrlrange.
    stiff = ForeignQuadruped(motor.model, CONTROL_DT, 1000.0, 0.0, prefix_map())
    d = mujoco.MjData(stiff.model)
    stiff.reset(d, np.random.default_rng(0), 0.0, 0.0)
    stiff.step_control(d, C.DEFAULT_POSE + np.tile([0.5, 0.5, 0.5], 4))
    np.testing.assert_allclose(d.ctrl[stiff.drive.actuator], C.torque_limits())


def test_torque_motors_under_the_policys_pd_stand_as_our_servos_do() -> None:
    """The PD law run at physics rate on motors reproduces our position servos (same Kp,
    Kd): the same drop onto the floor ends in the same stance. A wrong sign, gain or joint
    order would not."""
    ends = []
    for motors in (False, True):
        r = robot(motors=motors, timestep=0.005)
        d = mujoco.MjData(r.model)
        r.reset(d, np.random.default_rng(3), 0.1, 0.2)
        for _ in range(50):  # 1 s
            r.step_control(d, C.DEFAULT_POSE)
        m = r.measure(d)
        assert m.base_pos is not None and m.joint_pos is not None
        ends.append((m.base_pos[2], m.joint_pos))
    assert abs(ends[0][0] - ends[1][0]) < 0.003
    np.testing.assert_allclose(ends[0][1], ends[1][1], atol=0.01)


def test_the_initial_pose_is_the_models_home_else_ours() -> None:
    for home, height in ((0.35, 0.35), (None, C.STANDING_HEIGHT + 0.01)):
        r = robot(home_height=home)
        d = mujoco.MjData(r.model)
        r.pose(d)
        m = r.measure(d)
        assert m.base_pos is not None and m.joint_pos is not None and m.base_pos[2] == pytest.approx(height)
        np.testing.assert_allclose(m.joint_pos, C.DEFAULT_POSE)


def test_feet_and_falls() -> None:
    r = robot()
    assert [r.model.geom(int(g)).name for g in r.feet] == list(C.FOOT_GEOMS)  # mapped, not in the model's order
    d = mujoco.MjData(r.model)
    r.reset(d, np.random.default_rng(0), 0.0, 0.0)
    for _ in range(25):
        r.step_control(d, C.DEFAULT_POSE)
    height, contact, _ = r.foot_state(d)
    assert contact.all() and np.all(np.abs(height) < 0.005) and not r.fallen(d, r.measure(d))
    d.qpos[3:7] = [np.cos(0.6), np.sin(0.6), 0.0, 0.0]  # rolled 69 degrees
    assert r.fallen(d, r.measure(d))


def test_joint_maps_parse_from_pairs_and_files(tmp_path: Path) -> None:
    assert parse_joint_map(" FR_hip_joint=fr_hip , FL_hip_joint=fl_hip") == {"FR_hip_joint": "fr_hip",
                                                                             "FL_hip_joint": "fl_hip"}
    (tmp_path / "map.yaml").write_text("FR_hip_joint: fr_hip\n")
    (tmp_path / "map.json").write_text('{"FR_hip_joint": "fr_hip"}')
    assert parse_joint_map(str(tmp_path / "map.yaml")) == parse_joint_map(str(tmp_path / "map.json"))
    with pytest.raises(ConfigError, match=r"\['front_right'\] are not our joints"):
        parse_joint_map("front_right=fr_hip")
    with pytest.raises(ConfigError, match="several of our joints map onto"):
        parse_joint_map("FR_hip_joint=FL_hip_joint")
    with pytest.raises(ConfigError, match="is not ours=theirs"):
        parse_joint_map("FR_hip_joint")


def test_a_file_that_does_not_compile_is_one_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.xml"
    bad.write_text("<mujoco><worldbody><body></mujoco>")
    with pytest.raises(ConfigError, match=r"bad\.xml does not compile"):
        ForeignQuadruped.from_file(bad, CONTROL_DT)
    assert ForeignQuadruped.from_file(write_foreign(tmp_path), CONTROL_DT, joint_map=prefix_map()).decimation == 10


def test_a_base_body_rigidly_on_the_free_body_reads_its_own_frame() -> None:
    xml = foreign_xml().replace('<freejoint name="root"/>', '<freejoint name="root"/>\n'
                                '      <body name="imu_link" pos="0.1 0 0.05"/>')
    model = mujoco.MjModel.from_xml_string(xml)
    trunk = ForeignQuadruped(model, CONTROL_DT, joint_map=prefix_map())
    imu = ForeignQuadruped(model, CONTROL_DT, joint_map=prefix_map(), base_body="imu_link")
    d = mujoco.MjData(model)
    trunk.reset(d, np.random.default_rng(1), 0.0, 0.3)
    a, b = trunk.measure(d), imu.measure(d)
    assert a.base_pos is not None and a.base_lin_vel is not None and a.base_ang_vel is not None
    assert b.base_pos is not None and b.base_lin_vel is not None and b.base_ang_vel is not None
    offset = np.array([0.1, 0.0, 0.05])  # in the world frame too: the trunk starts level
    np.testing.assert_allclose(b.base_pos, a.base_pos + offset, atol=1e-9)
    np.testing.assert_allclose(b.base_ang_vel, a.base_ang_vel, atol=1e-9)
    np.testing.assert_allclose(b.base_lin_vel, a.base_lin_vel + np.cross(a.base_ang_vel, offset), atol=1e-9)
    with pytest.raises(ConfigError, match="'FR_hip' is not rigidly attached"):
        ForeignQuadruped(model, CONTROL_DT, joint_map=prefix_map(), base_body="FR_hip")
