"""The drones' ``velocity`` action mode: a world velocity setpoint that the vehicle's own
loop flies (as PX4 flies an offboard velocity), its land detector, its command space and
the classical controller's position loop over it."""

from __future__ import annotations

import numpy as np
import pytest

import sim2real  # noqa: F401  (first: picks MUJOCO_GL before mujoco is imported)
from sim2real.errors import ConfigError
from sim2real.policies.classical import controller_for
from sim2real.policies.safety import command_space
from sim2real.sim import REGISTRY
from sim2real.sim.core.env import SimEnv
from sim2real.sim.drone.airframe import CRAZYFLIE, X500, Airframe


def _fly(env: SimEnv, velocity: np.ndarray, seconds: float) -> None:
    action = velocity / env.task.airframe.speed_scale
    for _ in range(round(seconds / env.task.control_dt)):
        env.step(action)


@pytest.mark.parametrize(("task", "frame"), [("DroneHover", CRAZYFLIE), ("X500Hover", X500)])
def test_the_velocity_loop_takes_off_tracks_and_lands_with_the_motors_idle(task: str, frame: Airframe) -> None:
    env = SimEnv(REGISTRY.get(task), action_mode="velocity", start="ground")
    env.reset(seed=1)
    assert env.task.observation_layout()[4] == ("last_action", 3) and env.action_space.shape == (3,)
    _fly(env, np.zeros(3), 0.5)  # zero velocity on the pad: the land detector idles the motors
    assert float(np.abs(env.data.act).max()) < 0.01, env.data.act
    assert float(env.data.qpos[2]) == pytest.approx(frame.rest_height, abs=0.01)
    _fly(env, np.array([0.4, -0.2, 0.5]), 2.0)
    assert env.data.qvel[:3] == pytest.approx([0.4, -0.2, 0.5], abs=0.05)
    _fly(env, np.zeros(3), 1.5)  # a hover where it is
    assert np.abs(env.data.qvel[:3]).max() < 0.05 and float(env.data.qpos[2]) > 0.5
    assert float(env.data.act.min()) > 0.2  # carried by its rotors
    _fly(env, np.array([0.0, 0.0, -0.4]), 4.0)  # down, onto the pad, and the motors stop there
    assert float(env.data.qpos[2]) == pytest.approx(frame.rest_height, abs=0.02)
    assert float(np.abs(env.data.act).max()) < 0.01, env.data.act
    _fly(env, np.array([0.0, 0.0, 0.4]), 1.0)  # and a climb asked for starts them again
    assert float(env.data.qpos[2]) > frame.rest_height + 0.15


def test_its_command_space_is_the_airframes_speed_range() -> None:
    for robot, frame in (("drone", CRAZYFLIE), ("x500", X500)):
        space = command_space(robot, "velocity")
        assert space.names == ("vx", "vy", "vz") and space.units == ("m/s", "m/s", "m/s")
        assert space.upper == pytest.approx([frame.max_speed[0], frame.max_speed[0], frame.max_speed[1]])
        assert space.hold == pytest.approx(np.zeros(3))  # no command: a hover (idle on the ground)
        assert space.action_to_command(np.array([1.0, -0.5, 0.5])) == pytest.approx(
            [frame.max_speed[0], -0.5 * frame.max_speed[0], 0.5 * frame.max_speed[1]])


@pytest.mark.parametrize("task", ["DroneHover", "X500Hover", "DroneWaypoints", "X500Waypoints"])
def test_the_classical_position_loop_flies_the_tasks_in_velocity(task: str) -> None:
    env = SimEnv(REGISTRY.get(task), action_mode="velocity")
    controller = controller_for(env.task, 1)
    obs, _ = env.reset(seed=3)
    results = []
    while len(results) < 3:
        obs, _, terminated, truncated, info = env.step(controller.act(obs))
        if terminated or truncated:
            results.append((bool(info["is_success"]), float(info["metrics"]["crashed"])))
            controller.reset()
            obs, _ = env.reset()
    assert results == [(True, 0.0)] * 3


def test_the_oracle_and_the_residual_stay_in_ctbr() -> None:
    task = REGISTRY.get("DroneHover")(num_envs=1, action_mode="velocity")
    with pytest.raises(ConfigError, match="ctbr or velocity"):
        controller_for(REGISTRY.get("DroneHover")(num_envs=1, action_mode="rotor_thrust"))
    assert task.reference is None and task.velocity_loop is not None
