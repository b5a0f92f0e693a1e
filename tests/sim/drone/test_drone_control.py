"""The ctbr inner loop (mixer, body-rate PID) and the cascaded PID baseline."""

from __future__ import annotations

import copy

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sim2real.policies.classical.drone import HOVER_LAYOUT, CascadedPID
from sim2real.sim import make, make_vec
from sim2real.sim.core.errors import ConfigError
from sim2real.sim.drone import constants as C
from sim2real.sim.drone.rate_control import mix

wrench = st.tuples(
    st.floats(0.0, C.MAX_COLLECTIVE_THRUST),
    st.floats(-6e-3, 6e-3),
    st.floats(-6e-3, 6e-3),
    st.floats(-2e-3, 2e-3),
)


@settings(max_examples=300, deadline=None)
@given(wrench)
def test_mixer_is_exact_when_feasible_and_always_within_rotor_limits(w: tuple[float, float, float, float]) -> None:
    thrust = mix(np.array([w[0]]), np.array([w[1:]]))[0]
    assert thrust.min() >= 0.0 and thrust.max() <= C.MAX_THRUST
    exact = C.MIXER @ np.array(w)
    if exact.min() >= 0.0 and exact.max() <= C.MAX_THRUST:
        np.testing.assert_allclose(C.ALLOCATION @ thrust, w, atol=1e-12)


@settings(max_examples=200, deadline=None)
@given(wrench)
def test_mixer_gives_up_yaw_and_thrust_before_roll_and_pitch(w: tuple[float, float, float, float]) -> None:
    """Whenever the roll/pitch torques alone fit the rotors' range, they are met exactly."""
    roll_pitch_only = C.MIXER[:, 1:3] @ np.array(w[1:3])
    if roll_pitch_only.max() - roll_pitch_only.min() > C.MAX_THRUST:
        return
    thrust = mix(np.array([w[0]]), np.array([w[1:]]))[0]
    np.testing.assert_allclose((C.ALLOCATION @ thrust)[1:3], w[1:3], atol=1e-12)


def test_body_rate_loop_tracks_rate_steps() -> None:
    env = make("DroneHover", start="air", seed=0)
    env.reset()
    hover = 2.0 * C.HOVER_THRUST / C.MAX_COLLECTIVE_THRUST - 1.0
    rates_block = slice(15, 18)
    for axis, command in ((0, 2.0), (1, -2.0), (2, 1.0)):
        env.reset()
        action = np.array([hover, 0.0, 0.0, 0.0])
        action[1 + axis] = command / C.MAX_BODY_RATE[axis]
        trace = np.array([env.step(action)[0][rates_block][axis] for _ in range(10)])
        rise = 3 if axis < 2 else 6  # control steps (20 ms) to 80 % of the command; yaw has ~20x less authority
        assert trace[rise] == pytest.approx(command, rel=0.2), trace
        assert np.abs(trace[rise:] - command).max() < 0.25 * abs(command), trace


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_cascaded_pid_takes_off_and_hovers_within_5cm(seed: int) -> None:
    env = make("DroneHover", seed=seed)
    pid = CascadedPID(1, env.task.observation_layout())
    obs, _ = env.reset()
    errors = []
    truncated = terminated = False
    while not (terminated or truncated):
        obs, _, terminated, truncated, info = env.step(pid.act(obs))
        errors.append(info["metrics"]["position_error"])
    assert not terminated
    last_5s = np.array(errors[-int(5.0 / C.CONTROL_DT):])
    assert last_5s.max() < 0.05
    assert info["is_success"]


def test_cascaded_pid_hovers_a_randomized_batch() -> None:
    """The training randomization (wind, gusts, latency, noise, mass and motor
    spread) through the batched rollout backend: the PID still holds 10 cm."""
    num_envs = 6
    venv = make_vec("DroneHover", num_envs, dr="train", seed=0)
    pid = CascadedPID(num_envs, venv.task.observation_layout())
    obs = venv.reset()
    successes = []
    for _ in range(venv.engine.episode_steps):
        obs, _, _, infos = venv.step(pid.act(obs))
        successes += [info["is_success"] for info in infos if "is_success" in info]
    assert len(successes) == num_envs
    assert np.mean(successes) >= 5 / 6


def test_cascaded_pid_rejects_observations_it_cannot_read() -> None:
    with pytest.raises(ValueError, match="pos_error"):
        CascadedPID(1, [("lin_vel", 3)])
    pid = CascadedPID(2, HOVER_LAYOUT)
    with pytest.raises(ValueError, match="shape"):
        pid.act(np.zeros((3, 22)))
    assert pid.act(np.zeros((2, 22))).shape == (2, 4)
    assert CascadedPID(1).act(np.zeros(22)).shape == (4,)


def test_ctbr_residual_adds_the_policy_to_the_pid_before_the_latency() -> None:
    """Zero residual flies exactly the PID; the actuation latency delays PID and
    residual together (the command a policy node would send)."""
    from sim2real.sim.drone.hover import Hover

    pid_env = make("sim2real/DroneHover-v0", dr=None, seed=4, start="air")
    res_env = make("sim2real/DroneHover-v0", action_mode="ctbr_residual", dr=None, seed=4, start="air")
    pid_obs, _ = pid_env.reset(seed=4)
    res_env.reset(seed=4)
    pid = CascadedPID(observation_layout=pid_env.task.observation_layout())
    for _ in range(40):
        pid_obs, *_ = pid_env.step(pid.act(pid_obs))
        res_env.step(np.zeros(4))
    # 1e-6: the env hands the external PID float32 observations, the task float64 state.
    np.testing.assert_allclose(res_env.engine.phys.qpos, pid_env.engine.phys.qpos, atol=1e-6)

    # Under one step of latency the ring buffer holds the sum, computed with the PID's state
    # at the time of sending (a copy, so the check does not advance the real integrator).
    env = make("sim2real/DroneHover-v0", action_mode="ctbr_residual", dr="train", seed=0, start="air",
               residual_scale=0.5)
    env.reset(seed=0)
    eng = env.engine
    for _ in range(3):
        pid_copy = copy.deepcopy(eng.task.reference)
        expected = np.clip(pid_copy.act(eng.task.observe(eng.phys)) + 0.5 * 0.2, -1, 1)
        env.step(np.full(4, 0.2))
        np.testing.assert_allclose(eng._action_hist[eng._hist_head, 0], expected[0], atol=1e-12)
        np.testing.assert_allclose(eng.phys.last_action[0], 0.2)  # the policy's own action is observed
    assert Hover(num_envs=1, action_mode="ctbr_residual").action_layout() == [("collective_thrust", 1),
                                                                               ("body_rates", 3)]
    with pytest.raises(ConfigError, match="residual_scale"):
        Hover(num_envs=1, action_mode="ctbr_residual", residual_scale=0.0)


def test_residual_tilt_gate_fades_the_residual_with_tilt_and_rejects_bad_angles() -> None:
    """Full residual up to the first angle, none beyond the second, linear between; the
    same composition serves training (compose_action) and deployment (deploy_command)."""
    from sim2real.sim.drone.hover import Hover

    task = Hover(num_envs=4, action_mode="ctbr_residual", residual_scale=0.5, residual_tilt_gate=[10, 30])
    obs = np.zeros((4, 22))
    tilts = np.radians([0.0, 10.0, 20.0, 45.0])
    obs[:, 6:15] = np.eye(3).ravel()
    obs[:, 14] = np.cos(tilts)  # only the z-z entry is read
    gate = task.residual_gate(obs)
    np.testing.assert_allclose(gate[[0, 1, 3]], [1.0, 1.0, 0.0], atol=1e-12)
    np.testing.assert_allclose(gate[2], 0.5)
    np.testing.assert_allclose(task.residual_gate(obs[2]), 0.5)  # one observation, as a policy node has

    reference = copy.deepcopy(task.reference)
    composed = task.deploy_command(np.full((4, 4), 0.2), obs, lambda a: a)
    np.testing.assert_allclose(composed, np.clip(reference.act(obs) + 0.5 * 0.2 * gate[:, None], -1, 1))
    ungated = Hover(num_envs=4, action_mode="ctbr_residual")
    np.testing.assert_allclose(ungated.residual_gate(obs), 1.0)

    for bad in ([30, 10], [-5, 20], [10, 95], [float("nan"), 20], [10], "steep"):
        with pytest.raises(ConfigError, match="residual_tilt_gate"):
            Hover(num_envs=1, action_mode="ctbr_residual", residual_tilt_gate=bad)
