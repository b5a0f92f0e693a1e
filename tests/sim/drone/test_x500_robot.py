"""The X500 as a robot of its own (``x500``): its tasks fly its airframe, its command
space, safety chain and classical controller scale with it, and it is driven by PX4 and
nothing else."""

from __future__ import annotations

import numpy as np
import pytest

import sim2real  # noqa: F401  (first: picks MUJOCO_GL before mujoco is imported)
from sim2real.errors import ConfigError
from sim2real.policies.classical import controller_for
from sim2real.policies.safety import SafetyState, command_space, make_chain
from sim2real.policies.safety.presets import params_from_dict
from sim2real.robot_names import ROBOT_NAMES
from sim2real.sim import REGISTRY, ROBOTS, robot_deployment
from sim2real.sim.core.env import SimEnv
from sim2real.sim.drone.airframe import CRAZYFLIE, X500


def test_its_tasks_fly_the_x500_and_the_drones_fly_the_crazyflie() -> None:
    for name, frame, robot in (("X500Hover", X500, "x500"), ("X500Waypoints", X500, "x500"),
                               ("DroneHover", CRAZYFLIE, "drone")):
        task = REGISTRY.get(name)(num_envs=1)
        assert task.airframe is frame and task.robot == robot
    assert REGISTRY.get("X500Hover")(num_envs=1, airframe="crazyflie").airframe is CRAZYFLIE  # still an option


def test_its_command_space_and_safety_chain_are_the_x500s() -> None:
    space = command_space("x500", "ctbr")
    assert space.command_to_action(np.array([X500.max_collective_thrust, 0.0, 0.0, 0.0]))[0] == pytest.approx(1.0)
    params = params_from_dict("x500", {})
    assert params.thrust_max == pytest.approx(0.9 * X500.max_collective_thrust, abs=1e-3)
    with pytest.raises(ConfigError, match="thrust_max"):  # the X500's own ceiling, not the Crazyflie's
        params_from_dict("x500", {"thrust_max": 1.01 * X500.max_collective_thrust})
    chain = make_chain(space)
    assert chain.fallback.airframe is X500 and chain.fallback.pid.mass[0] == X500.mass
    # Its hover thrust (19.6 N, 33 times the Crazyflie's whole range) passes the limits.
    state = SafetyState(now=0.0)
    for k in range(1, 40):
        t = 0.02 * k
        state.now = t
        state.set(t, base_pos=np.array([0.0, 0.0, 1.0]), base_quat=np.array([1.0, 0.0, 0.0, 0.0]),
                  base_lin_vel=np.zeros(3), base_ang_vel=np.zeros(3))
        state.state_stamp = t
        chain.accept(np.array([X500.hover_thrust, 0.0, 0.0, 0.0]), t)
        out = chain.step(state)
    assert out.mode == "nominal" and out.command is not None
    assert out.command[0] == pytest.approx(X500.hover_thrust)


@pytest.mark.parametrize("task", ["X500Hover", "X500Waypoints"])
def test_its_classical_controller_flies_its_tasks(task: str) -> None:
    env = SimEnv(REGISTRY.get(task), action_mode="ctbr")
    controller = controller_for(env.task, 1)
    obs, _ = env.reset(seed=3)
    info: dict = {}
    done = False
    while not done:
        obs, _, terminated, truncated, info = env.step(controller.act(obs[None])[0])
        done = terminated or truncated
    env.close()
    assert info["is_success"], info


def test_only_px4_drives_it_and_the_registry_names_it_everywhere() -> None:
    x500, drone = robot_deployment("x500"), robot_deployment("drone")
    assert x500.backend() == "px4" and drone.backend() == "crazyflie" and drone.backend("px4") == "px4"
    with pytest.raises(ConfigError, match="the x500 speaks px4, not crazyflie"):
        x500.backend("crazyflie")
    assert list(ROBOT_NAMES) == list(ROBOTS) and "x500" in ROBOT_NAMES


def test_a_corner_on_the_pad_as_it_tilts_off_is_no_crash() -> None:
    """Leaving the pad tilted 7 degrees, the X500's hull touches it with a corner while its
    centre is above the ground band: judged by its lowest corner, that is the ground, not
    an obstacle above it (before: a crash at take-off in 2 of 7 emulated runs)."""
    import mujoco

    env = SimEnv(REGISTRY.get("X500Hover"), action_mode="ctbr", start="ground")
    env.reset(seed=0)
    task, d = env.task, env.data
    tilt = np.radians(7.0)
    d.qpos[2] = X500.rest_height + 0.0305  # the centre above the 3 cm band, a corner 0.3 m x sin(tilt) lower
    d.qpos[3:7] = [np.cos(tilt / 2), np.sin(tilt / 2), 0.0, 0.0]
    d.qvel[:] = 0.0
    mujoco.mj_forward(env.model, d)
    phys = env.engine.phys
    assert phys.sensordata[0, task._touch] > 0.0  # the corner is on the pad
    assert not task.detect_crash(phys)[0]
    d.qpos[3:7] = [1.0, 0.0, 0.0, 0.0]
    d.qpos[2] = X500.rest_height + 0.2
    d.qvel[2] = -2.0
    mujoco.mj_forward(env.model, d)
    assert not task.detect_crash(phys)[0]  # falling, but nowhere near the pad yet
    env.close()
