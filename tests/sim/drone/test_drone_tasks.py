"""The drone tasks through the registry: spaces, stepping, crashes, gates and
waypoint progress, option validation."""

from __future__ import annotations

import mujoco
import numpy as np
import pytest

from sim2real.policies.classical.drone import CascadedPID
from sim2real.sim import REGISTRY, make, make_vec
from sim2real.sim.core.errors import ActionError, ConfigError
from sim2real.sim.drone import TASKS
from sim2real.sim.drone import constants as C
from sim2real.sim.drone.base import HOVER_COMMAND
from sim2real.sim.drone.gates import GATE_OPENING_HALF, Gates

IDS = ["sim2real/DroneHover-v0", "sim2real/DroneWaypoints-v0", "sim2real/DroneGates-v0"]
METRICS = {"position_error", "time_in_tolerance", "crashed"}


def test_every_task_is_registered() -> None:
    assert [REGISTRY.get(i) for i in IDS] == TASKS


@pytest.mark.parametrize("task_id", IDS)
@pytest.mark.parametrize("mode", ["ctbr", "rotor_thrust"])
def test_task_resets_and_steps(task_id: str, mode: str) -> None:
    env = make(task_id, action_mode=mode, seed=0, dr="train")
    obs, info = env.reset()
    layout = env.task.observation_layout()
    assert obs.shape == env.observation_space.shape == (sum(n for _, n in layout),)
    assert env.action_space.shape == (4,)
    assert env.task.observation_noise().shape == obs.shape
    assert info["privileged"].shape == (12,)
    assert (env.task.inner_dt is None) == (mode == "rotor_thrust")
    rng = np.random.default_rng(0)
    for _ in range(25):
        obs, reward, terminated, truncated, info = env.step(rng.uniform(-1, 1, 4))
        assert np.isfinite(obs).all() and np.isfinite(reward)
        assert set(info["metrics"]) >= METRICS
        if terminated or truncated:
            obs, info = env.reset()


@pytest.mark.parametrize("task_id", IDS)
def test_batched_task_steps(task_id: str) -> None:
    venv = make_vec(task_id, 3, seed=0)
    obs = venv.reset()
    for _ in range(10):
        obs, *_ = venv.step(np.zeros((3, 4)))
    assert obs.shape == (3, venv.observation_space.shape[0]) and np.isfinite(obs).all()
    assert venv.privileged().shape == (3, 12)


def test_bad_actions_and_options_are_named() -> None:
    env = make("DroneHover", seed=0)
    env.reset()
    with pytest.raises(ActionError):
        env.step(np.array([0.0, np.nan, 0.0, 0.0]))
    with pytest.raises(ActionError):
        env.step(np.zeros(3))
    for options, field in [({"start": "sky"}, "start"), ({"wind": 3}, "wind"), ({"action_mode": "rpm"}, "action_mode")]:
        with pytest.raises(ConfigError) as err:
            make("DroneHover", **options)
        assert err.value.field == field
    for task, options, field in [
        ("DroneGates", {"n_gates": 0}, "n_gates"),
        ("DroneWaypoints", {"n_waypoints": 2.5}, "n_waypoints"),
        ("DroneWaypoints", {"hold_seconds": -1.0}, "hold_seconds"),
    ]:
        with pytest.raises(ConfigError) as err:
            make(task, **options)
        assert err.value.field == field


def test_hover_command_balances_weight_in_rotor_thrust_mode() -> None:
    env = make("DroneHover", action_mode="rotor_thrust", start="air", seed=0)
    env.reset()
    set_state(env, pos=[0, 0, 1], vel=[0, 0, 0])
    for _ in range(25):
        obs, *_ = env.step(np.full(4, 2 * HOVER_COMMAND - 1))
    np.testing.assert_allclose(obs[3:6], 0.0, atol=1e-3)


def set_state(env, pos, vel, quat=(1, 0, 0, 0), motors: float = HOVER_COMMAND) -> None:
    d = env.data
    d.qpos[:3], d.qpos[3:7], d.qvel[:] = pos, quat, 0.0
    d.qvel[:3] = vel
    d.act[:] = motors
    mujoco.mj_forward(env.model, d)


def run_until_end(env, action: np.ndarray, steps: int) -> tuple[bool, dict]:
    for _ in range(steps):
        _, _, terminated, truncated, info = env.step(action)
        if terminated or truncated:
            return terminated, info
    return False, info


@pytest.mark.parametrize(("drop", "crash"), [(0.02, False), (0.3, True), (1.5, True)])
def test_ground_impacts_crash_only_when_fast(drop: float, crash: bool) -> None:
    env = make("DroneHover", action_mode="rotor_thrust", start="air", seed=0)
    env.reset()
    set_state(env, pos=[0, 0, C.REST_HEIGHT + drop], vel=[0, 0, 0], motors=0.0)
    terminated, info = run_until_end(env, -np.ones(4), 50)
    assert terminated == crash
    assert info["metrics"]["crashed"] == float(crash)


def test_skimming_the_ground_fast_without_touching_is_not_a_crash() -> None:
    env = make("DroneHover", action_mode="rotor_thrust", start="air", seed=0)
    env.reset()
    set_state(env, pos=[-1.0, 0, C.REST_HEIGHT + 0.02], vel=[2.0, 0, 0])
    terminated, _ = run_until_end(env, np.full(4, 2 * HOVER_COMMAND - 1), 5)
    assert not terminated


def test_flipping_and_leaving_the_geofence_crash() -> None:
    env = make("DroneHover", action_mode="rotor_thrust", start="air", seed=0)
    env.reset()
    set_state(env, pos=[0, 0, 1.5], vel=[0, 0, 0], quat=(0, 1, 0, 0))
    assert run_until_end(env, -np.ones(4), 1)[0]
    env.reset()
    set_state(env, pos=[C.GEOFENCE_HALF_EXTENT - 0.01, 0, 1], vel=[3, 0, 0])
    assert run_until_end(env, np.full(4, 2 * HOVER_COMMAND - 1), 5)[0]


def gate_frame(task: Gates) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    centre, normal = task.gate_pos[0, 0], task.gate_normal[0, 0]
    lateral = np.array([-normal[1], normal[0], 0.0])
    return centre, normal, lateral


@pytest.mark.parametrize(
    ("offset", "direction", "passed", "hit"),
    [
        ((0.05, -0.1), 1, True, False),   # through the opening
        ((0.0, 0.0), -1, False, False),   # through the opening backwards
        ((0.22, 0.0), 1, False, True),    # through the side bar
        ((0.0, -0.25), 1, False, True),   # through the bottom bar
        ((0.6, 0.0), 1, False, False),    # beside the gate
    ],
)
def test_gate_crossing_classification(offset: tuple[float, float], direction: int, passed: bool, hit: bool) -> None:
    env = make("DroneGates", seed=0)
    env.reset()
    task = env.task
    centre, normal, lateral = gate_frame(task)
    point = centre + offset[0] * lateral + np.array([0, 0, offset[1]])
    task.prev_pos[0] = point - direction * 0.05 * normal
    got_passed, got_hit, _ = task._crossing((point + direction * 0.05 * normal)[None])
    assert (bool(got_passed[0]), bool(got_hit[0])) == (passed, hit)
    assert GATE_OPENING_HALF == 0.2


def test_flying_into_a_gate_bar_is_a_crash() -> None:
    env = make("DroneGates", action_mode="rotor_thrust", start="air", seed=0)
    env.reset()
    centre, normal, lateral = gate_frame(env.task)
    # Aim at the side bar from 30 cm in front of the gate at 2 m/s.
    set_state(env, pos=centre + 0.215 * lateral - 0.3 * normal, vel=2.0 * normal)
    terminated, info = run_until_end(env, np.full(4, 2 * HOVER_COMMAND - 1), 20)
    assert terminated and info["metrics"]["crashed"] == 1.0 and not info["is_success"]


def test_gates_course_is_flown_by_the_cascaded_pid() -> None:
    env = make("DroneGates", seed=1)
    pid = CascadedPID(1, env.task.observation_layout(), target_yaw=None)
    obs, _ = env.reset()
    terminated = truncated = False
    while not (terminated or truncated):
        obs, _, terminated, truncated, info = env.step(pid.act(obs))
    assert terminated and info["is_success"]
    assert info["metrics"]["gates_passed"] == env.task.n_gates
    assert info["metrics"]["crashed"] == 0.0


def test_waypoints_advance_and_final_hold_succeeds() -> None:
    env = make("DroneWaypoints", seed=0)
    pid = CascadedPID(1, env.task.observation_layout(), target_yaw=None)
    obs, info = env.reset()
    waypoints = np.array(info["task"]["waypoints"])
    reached = []
    truncated = False
    while not truncated:
        obs, _, terminated, truncated, info = env.step(pid.act(obs))
        assert not terminated
        reached.append(info["metrics"]["waypoints_reached"])
        # The observation always points at the active waypoint.
        active = waypoints[int(min(reached[-1], len(waypoints) - 1))]
        np.testing.assert_allclose(obs[:3], active - env.data.qpos[:3], atol=1e-3)  # info rounds to 0.1 mm
    assert np.all(np.diff(reached) >= 0) and reached[-1] == len(waypoints)
    assert info["is_success"]
