"""The deployment passivity filter (ee_impedance commands): for any command stream its
own tank is never overdrawn and its output stays inside the velocity and stiffness
limits; in closed loop with the simulated arm, the simulator's exact tank is never
overdrawn either, for random and adversarial policies."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from safety_strategies import commands

from sim2real import sim
from sim2real.policies.safety import SafetyState, command_space
from sim2real.policies.safety.passivity import PassivityFilterWrapper, PassivityLimit, PassivityLimitParams
from sim2real.sim.arm.rotations import quat_mul, rotvec_to_quat
from sim2real.sim.core.errors import ConfigError

SPACE = command_space("arm", "ee_impedance")
DOWN = np.array([0.0, 1.0, 0.0, 0.0])


def _state(data, now: float) -> SafetyState:
    """A plausible measurement: a pose near the workspace centre and a controller
    setpoint within the controller's 5 cm / 0.15 rad of it."""
    pos = np.array([0.5, 0.0, 0.3]) + np.array(data.draw(st.tuples(*[st.floats(-0.1, 0.1)] * 3)))
    quat = quat_mul(rotvec_to_quat(np.array(data.draw(st.tuples(*[st.floats(-0.3, 0.3)] * 3)))[None]), DOWN[None])[0]
    d_pos = np.array(data.draw(st.tuples(*[st.floats(-0.028, 0.028)] * 3)))
    d_rot = np.array(data.draw(st.tuples(*[st.floats(-0.08, 0.08)] * 3)))
    sp_quat = quat_mul(rotvec_to_quat(d_rot[None]), quat[None])[0]
    return SafetyState(now=now, state_stamp=now, command_stamp=now, ee_pos=pos, ee_quat=quat,
                       ee_pos_desired=pos + d_pos, ee_quat_desired=sp_quat)


@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_any_command_stream_keeps_the_tank_and_the_limits(data) -> None:
    f = PassivityLimit(PassivityLimitParams(tank_initial=data.draw(st.floats(0.05, 2.0))), SPACE)
    now = 0.0
    for _ in range(data.draw(st.integers(1, 12))):
        now += data.draw(st.floats(0.001, 0.1))
        out, report = f.filter(data.draw(commands(SPACE.size)), _state(data, now))
        assert not report.tripped and np.all(np.isfinite(out))
        assert np.all(np.abs(out[:3]) <= 0.8 + 1e-9) and np.all(np.abs(out[3:6]) <= 2.0 + 1e-9)
        assert np.all(out[6:12] >= SPACE.lower[6:12] - 1e-9) and np.all(out[6:12] <= SPACE.upper[6:12] + 1e-9)
        assert f.violation == 0.0 and f.tank.level[0] >= 0.05


def test_missing_pose_trips() -> None:
    f = PassivityLimit(PassivityLimitParams(), SPACE)
    _, report = f.filter(SPACE.hold, SafetyState(now=0.0, ee_pos=np.zeros(3)))
    assert report.tripped and "pose" in report.reason


def _pump(k: int, rng: np.random.Generator) -> np.ndarray:
    a = np.ones(13)
    a[:6] = 1.0 if k % 2 else -1.0
    a[12] = 0.0
    return a


@pytest.mark.parametrize("policy", ["random", "adversarial"])
def test_closed_loop_with_the_simulated_arm_never_overdraws_its_exact_tank(policy: str) -> None:
    """The filter sees what a ROS driver publishes (pose, setpoint) and its commands go
    through the command space into the simulator, whose own tank keeps exact books."""
    # No actuation latency: the filter must see the pose the command is applied at.
    env = sim.make("ArmReach", action_mode="ee_impedance", dr="none", seed=3)
    f = PassivityLimit(PassivityLimitParams(), SPACE)
    rng = np.random.default_rng(0)
    env.reset(seed=3)
    task = env.unwrapped.task
    total, acted = 0.0, 0
    for k in range(150):
        action = rng.uniform(-1, 1, 13) if policy == "random" else _pump(k, rng)
        command = SPACE.action_to_command(action)
        m, phys = task.mapper, env.unwrapped.engine.phys
        state = SafetyState(now=k * SPACE.control_dt, state_stamp=k * SPACE.control_dt, command_stamp=float(k),
                            ee_pos=task.ee_pos(phys)[0].copy(), ee_quat=task.ee_quat(phys)[0].copy(),
                            ee_pos_desired=m.setpoint_pos[0].copy(), ee_quat_desired=m.setpoint_quat[0].copy())
        out, report = f.filter(command, state)
        acted += report.acted
        _, _, terminated, truncated, info = env.step(SPACE.command_to_action(out))
        total += info["metrics"]["energy_violation"]
        if terminated or truncated:
            env.reset()
            f.reset()
    assert acted > 10  # the filter had work to do
    assert total == 0.0 and f.violation == 0.0


def test_gymnasium_wrapper_enables_the_filter_and_reports_it() -> None:
    env = PassivityFilterWrapper(sim.make("ArmMaze", action_mode="ee_impedance"), tank={"initial": 0.2})
    env.reset(seed=0)
    infos = [env.step(_pump(k, None)[:12])[4] for k in range(30)]  # the maze has no gripper
    assert all(i["passivity"]["energy_violation"] == 0.0 for i in infos)
    assert any(i["passivity"]["passivity_active"] for i in infos)
    assert min(i["passivity"]["tank_energy"] for i in infos) >= 0.05
    with pytest.raises(ConfigError, match="ee_impedance"):
        PassivityFilterWrapper(sim.make("ArmMaze"))
