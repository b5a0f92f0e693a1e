"""The ros2_control backend's pure parts: forward kinematics against MuJoCo's own sensor,
the differential IK step (error shrinks, limits hold), the joint-state reordering that
refuses bad messages, and the controllers' target (held forever, trajectories)."""

from __future__ import annotations

import mujoco
import numpy as np
import pytest

from sim2real.hardware.ros2_control.joint_states import Refused, reorder
from sim2real.hardware.ros2_control.kinematics import ArmKinematics
from sim2real.hardware.ros2_control.trajectory import JointTarget
from sim2real.sim.arm import constants as C
from sim2real.sim.arm.base import ArmTask
from sim2real.sim.arm.rotations import quat_conj, quat_mul, quat_to_rotvec, rotvec_to_quat
from sim2real.sim.core.env import SimEnv
from sim2real.sim.core.registry import REGISTRY

NAMES = (*(f"panda_joint{i}" for i in range(1, 8)), "panda_finger_joint1", "panda_finger_joint2")


def test_fk_matches_the_simulators_ee_sensor() -> None:
    """FK of the backend's model equals the ee_pos / ee_quat sensors of the simulated task
    (another model instance, with the task's scene) at random joint angles, sign included."""
    env = SimEnv(REGISTRY.get("ArmReach"), action_mode="ee_delta", seed=3)
    env.reset(seed=3)
    task = env.task
    assert isinstance(task, ArmTask)
    kin = ArmKinematics()
    rng = np.random.default_rng(0)
    for _ in range(20):
        q = rng.uniform(C.JOINT_LOWER, C.JOINT_UPPER)
        env.data.qpos[:7] = q
        mujoco.mj_forward(env.model, env.data)
        pos, quat = kin.forward(q)
        np.testing.assert_allclose(pos, task.ee_pos(env.engine.phys)[0], atol=1e-9)
        np.testing.assert_allclose(quat, task.ee_quat(env.engine.phys)[0], atol=1e-9)


@pytest.mark.parametrize("offset", [(0.03, 0.0, 0.0), (0.0, -0.02, 0.01), (0.0, 0.0, -0.025)])
def test_ik_step_reduces_the_cartesian_error(offset: tuple[float, float, float]) -> None:
    """Targets one period can reach without exceeding a joint velocity limit (4.5 cm
    sideways at 0.3 m from the base axis needs more than joint 1 may turn in 50 ms)."""
    kin = ArmKinematics()
    q = C.HOME_QPOS.copy()
    pos, quat = kin.forward(q)
    target = pos + np.array(offset)
    target_quat = quat_mul(rotvec_to_quat(np.array([0.0, 0.0, 0.1])), quat)
    before = np.linalg.norm(kin.error(q, target, target_quat))
    q1 = kin.step(q, target, target_quat, C.CONTROL_DT, posture=q)
    after = np.linalg.norm(kin.error(q1, target, target_quat))
    assert after < 0.05 * before, (before, after)


def test_a_step_too_fast_for_the_joints_keeps_its_direction() -> None:
    """8 cm down in one period asks joint 4 for more than its velocity limit: the step is
    slower, not bent."""
    kin = ArmKinematics()
    q = C.HOME_QPOS.copy()
    pos, quat = kin.forward(q)
    wanted = np.array([0.0, 0.03, -0.08])
    q1 = kin.step(q, pos + wanted, quat, C.CONTROL_DT, posture=q)
    assert np.max(np.abs(q1 - q) / C.VELOCITY_LIMIT / C.CONTROL_DT) <= kin.config.velocity_scale + 1e-9
    moved = kin.forward(q1)[0] - pos
    assert 0.01 < np.linalg.norm(moved) < np.linalg.norm(wanted)
    assert moved @ wanted / (np.linalg.norm(moved) * np.linalg.norm(wanted)) > 0.99


def test_ik_step_respects_joint_position_and_velocity_limits() -> None:
    kin = ArmKinematics()
    q = C.HOME_QPOS.copy()
    q[3] = C.JOINT_UPPER[3] - 0.03  # the elbow almost straight: reaching further pushes it to its limit
    pos, quat = kin.forward(q)
    far = pos + np.array([0.5, 0.0, 0.3])  # out of reach in one period
    q_prev = q
    for _ in range(40):
        q_next = kin.step(q_prev, far, quat, C.CONTROL_DT, posture=q)
        assert np.all(q_next <= C.JOINT_UPPER - kin.config.limit_margin + 1e-12)
        assert np.all(q_next >= C.JOINT_LOWER + kin.config.limit_margin - 1e-12)
        step_max = kin.config.velocity_scale * C.VELOCITY_LIMIT * C.CONTROL_DT
        assert np.all(np.abs(q_next - np.clip(q_prev, kin.lower, kin.upper)) <= step_max + 1e-12)
        q_prev = q_next
    assert np.all(np.isfinite(q_prev))
    # It did move toward the target while bounded.
    assert np.linalg.norm(kin.error(q_prev, far, quat)[:3]) < np.linalg.norm(far - pos)


def test_ik_rotation_step_turns_the_hand_about_the_commanded_axis() -> None:
    kin = ArmKinematics()
    q = C.HOME_QPOS.copy()
    pos, quat = kin.forward(q)
    target_quat = quat_mul(rotvec_to_quat(np.array([0.0, 0.0, 0.1])), quat)
    q1 = kin.step(q, pos, target_quat, C.CONTROL_DT, posture=q)
    _, quat1 = kin.forward(q1)
    turned = quat_to_rotvec(quat_mul(quat1, quat_conj(quat)))
    np.testing.assert_allclose(turned, [0.0, 0.0, 0.1], atol=2e-3)


def test_reorder_puts_joints_in_the_simulators_order() -> None:
    perm = [3, 0, 8, 1, 6, 2, 7, 5, 4]
    names = [NAMES[i] for i in perm]
    values = np.arange(9.0)[perm]
    pos, vel, eff = reorder(names, values, -values, 2 * values, NAMES)
    np.testing.assert_array_equal(pos, np.arange(9.0))
    np.testing.assert_array_equal(vel, -np.arange(9.0))
    assert eff is not None
    np.testing.assert_array_equal(eff, 2 * np.arange(9.0))
    _, _, none = reorder(NAMES, np.zeros(9), np.zeros(9), [], NAMES)
    assert none is None  # effort is optional in JointState


@pytest.mark.parametrize(("names", "pos", "vel", "reason"), [
    (("fr3_joint1", *NAMES[1:]), np.zeros(9), np.zeros(9), "unknown_joint"),
    (NAMES[:8], np.zeros(8), np.zeros(8), "missing_joint"),
    ((*NAMES[:8], NAMES[0]), np.zeros(9), np.zeros(9), "duplicate_joint"),
    (NAMES, np.zeros(8), np.zeros(9), "length"),
    (NAMES, np.zeros(9), [], "length"),
    (NAMES, np.r_[np.zeros(8), np.nan], np.zeros(9), "non_finite"),
    (NAMES, np.zeros(9), np.r_[np.inf, np.zeros(8)], "non_finite"),
])
def test_reorder_refuses_bad_joint_states(names: tuple[str, ...], pos: np.ndarray, vel: np.ndarray,
                                          reason: str) -> None:
    with pytest.raises(Refused) as err:
        reorder(names, pos, vel, [], NAMES)
    assert err.value.reason == reason


def test_forward_target_is_held_forever_and_trajectories_interpolate() -> None:
    limit = C.VELOCITY_LIMIT
    target = JointTarget(np.zeros(7))
    target.forward(np.full(7, 0.01), 1.0, limit)
    target.forward(np.full(7, 0.02), 1.01, limit)
    q, qd = target.sample(1.012)
    np.testing.assert_allclose(q, 0.02)
    np.testing.assert_allclose(qd, 1.0)  # 0.01 rad in 10 ms
    q, qd = target.sample(1000.0)  # no timeout: the last command, at rest
    np.testing.assert_allclose(q, 0.02)
    np.testing.assert_allclose(qd, 0.0)
    target.trajectory(2.0, np.array([1.0, 2.0]), np.array([np.full(7, 1.02), np.full(7, 0.02)]))
    q, qd = target.sample(2.5)
    np.testing.assert_allclose(q, 0.52)
    np.testing.assert_allclose(qd, 1.0)
    np.testing.assert_allclose(target.sample(3.5)[0], 0.52)
    np.testing.assert_allclose(target.sample(99.0)[0], 0.02)
    target.trajectory(3.5, np.array([]), np.zeros((0, 7)))  # an empty goal stops where the target is
    np.testing.assert_allclose(target.sample(50.0)[0], 0.52)


def test_a_target_too_far_ahead_is_scaled_back_along_its_direction() -> None:
    """The anti-windup bound keeps the step's direction (a per-joint clip bent the hand's
    path: a 15 cm move along x through the emulated arm sank 1-4 cm)."""
    from sim2real.hardware.ros2_control.backend import within_reach
    from sim2real.sim.arm import constants as C

    measured = np.array(C.HOME_QPOS)
    ahead = np.array([0.3, 0.05, 0.0, -0.1, 0.0, 0.02, 0.0])
    bounded = within_reach(measured + ahead, measured)
    step = bounded - measured
    assert np.all(np.abs(step) <= C.JOINT_DELTA_MAX + 1e-12)
    assert np.isclose(np.max(np.abs(step) / C.JOINT_DELTA_MAX), 1.0)
    assert np.allclose(step / np.linalg.norm(step), ahead / np.linalg.norm(ahead))  # parallel, same way
    near = measured + 0.5 * C.JOINT_DELTA_MAX
    assert np.array_equal(within_reach(near, measured), near)  # within reach: unchanged
