"""The quadruped filter's joint limits follow the servo gains the robot runs (a policy's
own, from its metadata): a legged_gym policy trained with kp 20 / kd 0.5 commands targets
about 1 rad from the measured joints, which must pass, while the torque the robot's PD
servo makes of any filtered target stays within the robot's effort limits."""

from __future__ import annotations

import numpy as np
import pytest

from sim2real.policies.safety import SafetyState, command_space, make_chain, params_from_dict
from sim2real.policies.safety.presets import QuadrupedSafetyParams, policy_safety_values, target_lead
from sim2real.sim.core.errors import ConfigError
from sim2real.sim.quadruped import constants as QUAD

LEGGED_GYM = {"servo_kp": [20.0] * 12, "servo_kd": [0.5] * 12}
"""legged_gym's Go2 gains as an imported policy's task options carry them."""


def chain_for(task_options: dict):
    params = params_from_dict("quadruped", policy_safety_values("quadruped", task_options))
    assert isinstance(params, QuadrupedSafetyParams)
    return params, make_chain(command_space("quadruped", "joint_pos", 2.0), params)


def limit(chain, name: str):
    return next(f for f in chain.limits if f.name == name)


def standing(q: np.ndarray, qd: np.ndarray) -> SafetyState:
    s = SafetyState(now=0.0, state_stamp=0.0, joint_pos=q, joint_vel=qd, joint_effort=np.zeros(12))
    s.base_quat, s.base_ang_vel = np.array([1.0, 0.0, 0.0, 0.0]), np.zeros(3)
    return s


def one_radian_leads(q: np.ndarray) -> np.ndarray:
    """Targets 1 rad from ``q``, each towards the farther end of its joint's range."""
    low, high = QUAD.joint_ranges().T
    return q + np.where(high - q > q - low, 1.0, -1.0)


def test_a_kp_20_policys_one_radian_leads_pass_the_joint_limits() -> None:
    """Before, the velocity limit kept every target within 0.63 rad of the measured calf
    (15.7 rad/s x 2 periods, tuned for kp 35) and the effort limit within 0.68 rad of the
    hip and thigh (23.7 Nm / kp 35): the policy fell within 0.4 s on the Go2 emulator."""
    params, chain = chain_for(LEGGED_GYM)
    assert (params.servo_kp, params.servo_kd) == (20.0, 0.5)
    state = standing(QUAD.DEFAULT_POSE.copy(), np.zeros(12))
    target = one_radian_leads(state.joint_pos)
    for name in ("joint_velocity_limit", "effort_limit"):
        out, _ = limit(chain, name).filter(target, state)
        np.testing.assert_allclose(out, target, atol=1e-12, err_msg=name)


@pytest.mark.parametrize("gains", [LEGGED_GYM, {"servo_kp": [40.0] * 12, "servo_kd": [1.0] * 12}, {}])
def test_the_servo_torque_of_every_filtered_target_stays_within_the_effort_limits(gains: dict) -> None:
    """Through the whole chain, for targets anywhere and joints moving inside their ranges
    (where the torque limit's interval meets the joint range, which the chain's hard box
    keeps in any case)."""
    params, _ = chain_for(gains)
    kp, kd = params.servo_kp, params.servo_kd
    rng = np.random.default_rng(0)
    low, high = QUAD.joint_ranges().T
    for _ in range(300):
        _, chain = chain_for(gains)
        state = standing(rng.uniform(low + 0.3, high - 0.3), rng.uniform(-0.3, 0.3, 12) * QUAD.velocity_limits())
        assert chain.accept(rng.uniform(low - 3.0, high + 3.0), 0.0) == ""
        out = chain.step(state)
        assert out.mode == "nominal" and out.command is not None, out.reason
        torque = kp * (out.command - state.joint_pos) - kd * state.joint_vel
        assert np.all(np.abs(torque) <= QUAD.torque_limits() + 1e-9)


def test_the_lead_follows_the_stiffness_and_never_passes_the_torque_limit() -> None:
    dt, tau, speed = QUAD.CONTROL_DT, QUAD.torque_limits(), QUAD.velocity_limits()
    tuned = QuadrupedSafetyParams()
    np.testing.assert_allclose(target_lead(tuned, dt), np.minimum(speed * 2 * dt, tau / QUAD.KP))
    soft = QuadrupedSafetyParams(servo_kp=20.0, servo_kd=0.5)
    np.testing.assert_allclose(target_lead(soft, dt), np.minimum(speed * 2 * dt * QUAD.KP / 20.0, tau / 20.0))
    assert target_lead(soft, dt)[2] == pytest.approx(1.099)  # the calf: 0.628 rad at kp 35
    for kp in (2.0, 20.0, 35.0, 80.0):  # the servo's pull at the full lead: the same at any stiffness, within the limit
        pull = kp * target_lead(QuadrupedSafetyParams(servo_kp=kp), dt)
        np.testing.assert_allclose(pull, QUAD.KP * target_lead(tuned, dt))
        assert np.all(pull <= tau + 1e-9)


def test_the_filter_takes_the_policys_gains_and_leaves_our_own_policies_alone() -> None:
    assert policy_safety_values("quadruped", LEGGED_GYM) == {"servo_kp": 20.0, "servo_kd": 0.5}
    assert policy_safety_values("quadruped", {"action_scale": 0.5}) == {}  # trained on our servos (kp 35)
    assert policy_safety_values("arm", {"servo_kp": [20.0] * 7}) == {}
    with pytest.raises(ConfigError, match="servo_kp"):
        policy_safety_values("quadruped", {"servo_kp": [20.0] * 11})


def test_gains_that_differ_per_joint_give_the_stiffest() -> None:
    kp = [20.0, 25.0, 25.0] * 4
    assert policy_safety_values("quadruped", {"servo_kp": kp, "servo_kd": [0.5] * 12}) == {"servo_kp": 25.0,
                                                                                          "servo_kd": 0.5}
