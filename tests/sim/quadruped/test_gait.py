"""The trot reference of the ``gait_residual`` action mode: its clock, its foot
trajectories (checked with MuJoCo's own forward kinematics), the task wiring and
the deployment hook that replays it outside the simulator."""

from __future__ import annotations

import mujoco
import numpy as np
import pytest

import sim2real.sim as S
from sim2real.sim.core.errors import ConfigError
from sim2real.sim.quadruped import constants as c
from sim2real.sim.quadruped.gait import PAIR_PHASE, TrotReference, leg_ik
from sim2real.sim.quadruped.velocity import Velocity


def _foot_positions(q: np.ndarray) -> np.ndarray:
    """World foot positions ``[4, 3]`` of the model fixed in the air at joint angles ``q``."""
    model = mujoco.MjModel.from_xml_path(str(c.XML_PATH))
    data = mujoco.MjData(model)
    data.qpos[2] = 1.0
    data.qpos[3] = 1.0
    data.qpos[7:19] = q
    mujoco.mj_kinematics(model, data)
    return np.array([data.geom_xpos[model.geom(n).id] for n in c.FOOT_GEOMS])


def test_leg_ik_matches_the_default_pose_and_forward_kinematics() -> None:
    height = 2 * c.THIGH_LENGTH * np.cos(c.DEFAULT_POSE[1])
    thigh, calf = leg_ik(np.array(0.0), np.array(-height))
    np.testing.assert_allclose([thigh, calf], c.DEFAULT_POSE[1:3], atol=1e-9)
    # A foot asked 5 cm forward and 3 cm higher lands there (relative to the default pose).
    thigh2, calf2 = leg_ik(np.array(0.05), np.array(-height + 0.03))
    q0, q1 = c.DEFAULT_POSE.copy(), c.DEFAULT_POSE.copy()
    q1[1::3], q1[2::3] = thigh2, calf2
    moved = _foot_positions(q1) - _foot_positions(q0)
    # Within 1 mm: the URDF's foot sits 2 mm behind the calf axis, which the IK ignores.
    np.testing.assert_allclose(moved[:, [0, 2]], np.tile([0.05, 0.03], (4, 1)), atol=1e-3)


def test_clock_advances_wraps_and_fades_amplitude() -> None:
    ref = TrotReference(2, frequency_hz=2.0, blend_seconds=0.2)
    ref.reset(np.arange(2), np.array([0.0, 0.9]))
    np.testing.assert_allclose(ref.clock()[0], [0.0, 1.0], atol=1e-12)
    for _ in range(5):  # 0.1 s at 2 Hz: a fifth of a cycle, half the fade
        ref.advance(0.02, np.array([True, False]))
    np.testing.assert_allclose(ref.phase, [0.2, 0.1], atol=1e-9)
    np.testing.assert_allclose(ref.amplitude, [0.5, 0.0], atol=1e-9)
    angle = 2 * np.pi * ref.phase
    np.testing.assert_allclose(ref.clock(), np.c_[np.sin(angle), np.cos(angle)])
    for _ in range(20):
        ref.advance(0.02, np.array([False, True]))
    np.testing.assert_allclose(ref.amplitude, [0.0, 1.0])
    with pytest.raises(ValueError):
        TrotReference(1, frequency_hz=0.0)


def test_standing_reference_is_the_compensated_default_pose() -> None:
    ref = TrotReference(3)
    ref.reset(np.arange(3), np.array([0.0, 0.3, 0.7]))
    offsets = ref.joint_offsets(np.array([[1.0, 0.5, 1.0]] * 3))  # amplitude 0: no stepping
    np.testing.assert_allclose(offsets, np.tile(c.static_knee_offset(), (3, 1)), atol=1e-9)


def test_stepping_feet_lift_in_swing_and_push_back_in_stance() -> None:
    """Forward command: each foot rises only in its swing half and moves backwards
    relative to the body in stance, diagonal pairs in antiphase."""
    ref = TrotReference(1, frequency_hz=2.0, step_height=0.08)
    ref.amplitude[:] = 1.0
    knee = c.static_knee_offset()
    xs, zs = [], []
    for k in range(50):  # one cycle at 2 Hz in 10 ms steps
        ref.phase[:] = k / 50
        q = c.DEFAULT_POSE + ref.joint_offsets(np.array([[0.6, 0.0, 0.0]]))[0]
        # Remove the load-dependent knee offsets to compare pure kinematics.
        cycle = (k / 50 + PAIR_PHASE) % 1.0
        load = 1.0 + 0.5 * np.where(cycle < 0.5, -1.0, 1.0)
        q = q - np.repeat(load, 3) * knee
        feet = _foot_positions(q)
        xs.append(feet[:, 0])
        zs.append(feet[:, 2])
    xs, zs = np.array(xs), np.array(zs)
    cycle = (np.arange(50)[:, None] / 50 + PAIR_PHASE[None]) % 1.0
    swing = cycle < 0.5
    lift = zs - zs[~swing].min()
    assert lift[~swing].max() < 1e-3  # stance feet stay at stance height (the 2 mm foot offset aside)
    assert 0.075 < lift[swing].max() < 0.085
    # In stance each foot moves backwards: 0.6 m/s over a 0.25 s stance = 15 cm.
    for leg in range(4):
        stance_x = xs[~swing[:, leg], leg]
        assert stance_x.max() - stance_x.min() == pytest.approx(0.15, abs=0.01)
    np.testing.assert_array_equal(swing[:, 0], swing[:, 3])  # FR with RL
    np.testing.assert_array_equal(swing[:, 0], ~swing[:, 1])  # FR against FL


def test_gait_residual_task_wiring() -> None:
    task = Velocity(num_envs=2, action_mode="gait_residual", action_scale=0.3)
    assert task.observation_layout()[-1] == ("gait_clock", 2)
    assert task.weights["feet_air_time"] == 0.0
    assert Velocity(num_envs=1).observation_layout()[-1] == ("last_action", 12)
    env = S.make("sim2real/QuadrupedVelocity-v0", action_mode="gait_residual", seed=0)
    obs, _ = env.reset(seed=0)
    assert obs.shape == (50,)
    t = env.task
    # Zero residual: the servo targets are exactly the reference.
    ctrl = t.action_to_ctrl(np.zeros((1, 12)), env.engine.phys)
    np.testing.assert_allclose(ctrl, c.DEFAULT_POSE + t.gait.joint_offsets(t.command), atol=1e-12)
    phase = t.gait.phase.copy()
    env.step(np.zeros(12))
    np.testing.assert_allclose(t.gait.phase, (phase + t.gait.frequency * t.control_dt) % 1.0)
    with pytest.raises(ConfigError, match="action_mode"):
        S.make("sim2real/QuadrupedWaypoints-v0", action_mode="ee_delta")
    with pytest.raises(ConfigError, match="gait"):
        Velocity(num_envs=1, action_mode="gait_residual", gait_step_height=0.5)


def test_deploy_command_replays_the_simulated_reference() -> None:
    """The policy node's copy of the task (one env, no physics) produces the same
    targets, period after period, as the simulated task's action_to_ctrl."""
    sim = Velocity(num_envs=1, action_mode="gait_residual")
    node = Velocity(num_envs=1, action_mode="gait_residual")
    command = np.array([[0.7, -0.2, 0.4]])
    for t in (sim, node):
        t.command[:] = command
        t.gait.reset(0, 0.25)
    for _ in range(40):
        expected = sim.gait.joint_offsets(sim.command)[0]
        sim.advance_reference()
        command = node.deploy_command(np.zeros(12), np.zeros(50), lambda a: c.DEFAULT_POSE + 0.3 * a)
        np.testing.assert_allclose(command, c.DEFAULT_POSE + expected, atol=1e-12)
    np.testing.assert_allclose(node.gait.phase, sim.gait.phase)
    plain = Velocity(num_envs=1).deploy_command(np.ones(12), np.zeros(48), lambda a: c.DEFAULT_POSE + 0.3 * a)
    np.testing.assert_allclose(plain, c.DEFAULT_POSE + 0.3)
