"""Action safety (clip, motion limit, workspace box) and the intervention devices."""

from __future__ import annotations

import numpy as np
import pytest

from sim2real.errors import Sim2RealError
from sim2real.policies.hil.config import EnvConfig
from sim2real.policies.hil.devices import GamepadDevice, KeyboardDevice, ScriptedOperator, make_device
from sim2real.policies.hil.env import HilEnv
from sim2real.policies.hil.safety import ActionSafety
from sim2real.sim.arm import constants as C

LAYOUT = [("ee_delta_pos", 3), ("ee_delta_rot", 3)]


def test_safety_holds_on_nan_and_limits_motion_and_workspace() -> None:
    safety = ActionSafety(LAYOUT, np.array([0.3, -0.3, 0.0]), np.array([0.7, 0.3, 0.5]), max_step_m=0.01)
    out, report = safety(np.array([np.nan, 0, 0, 0, 0, 0]), np.array([0.5, 0.0, 0.2]))
    assert report.non_finite and np.all(out == 0)
    out, report = safety(np.array([3.0, 0, 0, 0.2, 0, 0]), np.array([0.5, 0.0, 0.2]))
    assert report.clipped and report.motion_limited
    assert np.linalg.norm(out[:3] * C.EE_DELTA_POS_MAX) == pytest.approx(0.01)
    assert out[3] == pytest.approx(0.2)
    # At the box's +x face: moving further out is blocked, moving back in is not.
    out, report = safety(np.array([0.2, 0.1, 0, 0, 0, 0]), np.array([0.6999, 0.0, 0.2]))
    assert report.workspace_blocked and out[0] == 0.0 and out[1] > 0
    out, report = safety(np.array([-0.2, 0, 0, 0, 0, 0]), np.array([0.75, 0.0, 0.2]))
    assert not report.workspace_blocked and out[0] < 0
    with pytest.raises(Sim2RealError):
        safety(np.zeros(5), np.zeros(3))


def test_scripted_operator_takes_over_on_drift_and_hands_back() -> None:
    env = HilEnv(EnvConfig(obs_mode="state"), seed=3)
    operator = ScriptedOperator(env.obs_layout, env.action_layout, noise=0.0, drift_distance=0.05,
                                patience_steps=1000, takeover_steps=5)
    obs = env.reset(seed=3)
    operator.reset()
    assert operator.poll(obs, env.full_obs) is None  # starts within 3.5 cm of the hole: no drift
    # Push the arm away from the hole until the operator takes over.
    active = []
    for _ in range(40):
        override = operator.poll(obs, env.full_obs)
        active.append(override is not None)
        obs, *_ = env.step(override if override is not None else np.array([1.0, 1.0, 0, 0, 0, 0]))
    assert any(active)
    first = active.index(True)
    assert all(active[first:first + 5])  # a takeover lasts takeover_steps
    env.close()


def test_scripted_operator_alone_inserts_the_peg() -> None:
    env = HilEnv(EnvConfig(obs_mode="state"), seed=0)
    operator = make_device("scripted", env, always=True, noise=0.01)
    successes = 0
    for episode in range(3):
        obs, done, operator_ok = env.reset(seed=episode), False, True
        operator.reset()
        while not done:
            action = operator.poll(obs, env.full_obs)
            operator_ok &= action is not None
            obs, reward, terminated, truncated, info = env.step(action)
            done = terminated or truncated
        successes += info["success"] and reward == 1.0
        assert operator_ok
    assert successes >= 2
    env.close()


def test_keyboard_device_with_dummy_video_driver(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SDL_VIDEODRIVER", "dummy")
    keyboard = KeyboardDevice(action_dim=6, speed=0.5)
    pg = keyboard.pygame
    assert keyboard.poll(None, None) is None
    pg.event.post(pg.event.Event(pg.KEYDOWN, key=pg.K_w))
    pg.event.post(pg.event.Event(pg.KEYDOWN, key=pg.K_f))
    action = keyboard.poll(None, None)
    np.testing.assert_allclose(action, [0.5, 0, -0.5, 0, 0, 0])
    pg.event.post(pg.event.Event(pg.KEYUP, key=pg.K_w))
    pg.event.post(pg.event.Event(pg.KEYUP, key=pg.K_f))
    assert keyboard.poll(None, None) is None


def test_gamepad_without_a_gamepad_fails_clearly(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SDL_VIDEODRIVER", "dummy")
    with pytest.raises(Sim2RealError, match="no gamepad"):
        GamepadDevice(action_dim=6)


def test_unknown_device_name() -> None:
    env = HilEnv(EnvConfig(obs_mode="state"))
    with pytest.raises(Sim2RealError):
        make_device("joystick9000", env)
    env.close()


def test_discrete_gripper_stay_repeats_the_previous_command() -> None:
    env = HilEnv(EnvConfig(task="ArmReach", obs_mode="state", discrete_gripper=True), seed=0)
    env.reset(seed=0)
    applied = []
    for g in (0.0, -1.0, 0.2, 1.0, -0.3):
        _, _, _, _, info = env.step(np.r_[np.zeros(env.action_dim - 1), g])
        applied.append(info["applied_action"][-1])
        assert info["action"][-1] == g  # the buffers keep close/stay/open as proposed
    assert applied == [1.0, -1.0, -1.0, 1.0, 1.0]
    env.close()
    with pytest.raises(Sim2RealError, match="gripper"):
        HilEnv(EnvConfig(task="ArmPegInsert", obs_mode="state", discrete_gripper=True))


def test_success_function_gives_the_reward_and_the_end() -> None:
    never = HilEnv(EnvConfig(obs_mode="state"), seed=0, success_fn=lambda obs: False)
    operator = ScriptedOperator(never.obs_layout, never.action_layout, always=True, noise=0.0)
    obs, done = never.reset(seed=0), False
    while not done:
        obs, reward, terminated, truncated, info = never.step(operator.poll(obs, never.full_obs))
        done = terminated or truncated
        assert reward == 0.0
    # The simulator's own success ended the episode; for the learner it was no terminal.
    assert truncated and not terminated and never.steps < never.config.max_episode_steps
    always = HilEnv(EnvConfig(obs_mode="state"), seed=0, success_fn=lambda obs: obs["state"].shape == (48,))
    always.reset(seed=0)
    _, reward, terminated, _, info = always.step(np.zeros(6))
    assert reward == 1.0 and terminated and info["success"]
    never.close()
    always.close()
