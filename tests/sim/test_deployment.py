"""Each robot's deployment description tells the truth: every observation block it
claims observable is determined by what its driver publishes.

For every registered task and action mode, the simulator runs a few steps; then the
physics state is scrambled everywhere except what the robot's state writer puts back
from the state reader's measurements. Each claimed-observable block of the task's
observation must come out exactly as the simulator's own. A block that read anything
the streams do not carry would differ.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from sim2real.sim import REGISTRY, ROBOTS, make, robot_deployment
from sim2real.sim.core.deployment import Measurements
from sim2real.sim.core.errors import ConfigError
from sim2real.sim.core.task import PhysicsBatch

CASES = [(cls, mode, {}) for cls in REGISTRY for mode in cls.action_modes]
CASES.append((REGISTRY.get("QuadrupedVelocity"), "joint_pos", {"history_steps": 3}))  # blocks behind an option
VERIFIED: dict[str, set[str]] = {robot: set() for robot in ROBOTS}
"""Blocks each robot's claim was checked on, filled by the test below."""


def at_time(phys: PhysicsBatch, time: float) -> PhysicsBatch:
    """``phys`` as observed at another time stamp (tasks cache derived state per time
    stamp; a history returns the same steps for any time after its last record)."""
    return dataclasses.replace(phys, time=np.array([time]))


def scrambled(phys: PhysicsBatch, rng: np.random.Generator, time: float) -> PhysicsBatch:
    """A copy of ``phys`` with all physics state replaced by noise (the node's own
    state, the last action, is kept)."""
    quat = rng.normal(size=phys.mocap_quat.shape)
    return PhysicsBatch(
        qpos=rng.normal(size=phys.qpos.shape), qvel=rng.normal(size=phys.qvel.shape),
        act=rng.normal(size=phys.act.shape), sensordata=rng.normal(size=phys.sensordata.shape),
        mocap_pos=rng.normal(size=phys.mocap_pos.shape), mocap_quat=quat / np.linalg.norm(quat, axis=-1, keepdims=True),
        time=np.array([time]), last_action=phys.last_action.copy(),
    )


@pytest.mark.parametrize(("cls", "mode", "options"), CASES,
                         ids=[f"{c.robot}-{c.name}-{m}{'-' * bool(o)}{'-'.join(o)}" for c, m, o in CASES])
def test_observable_blocks_come_from_the_streams(cls: type, mode: str, options: dict) -> None:
    deployment = robot_deployment(cls.robot)
    env = make(f"{cls.robot}/{cls.name}", action_mode=mode, seed=1, **options)
    env.reset(seed=1)
    task, phys = env.task, env.engine.phys
    read, write = deployment.state_reader(task, env.model), deployment.state_writer(task, env.model)
    layout = task.observation_layout()
    starts = np.cumsum([0] + [n for _, n in layout])
    rng = np.random.default_rng(0)
    checked = 0
    for step in range(12):
        _, _, terminated, truncated, _ = env.step(rng.uniform(-0.5, 0.5, env.action_space.shape))
        if terminated or truncated:
            env.reset()
        m = read(env.data, phys)
        if any(getattr(m, name) is None for name in deployment.required(task)):
            continue  # a mission input this task does not publish: not deployable, nothing claimed
        t = float(phys.time[0])
        expected = task.observe(at_time(phys, t + 1e-6))[0].copy()
        noisy = scrambled(phys, rng, t + 2e-6)
        write(noisy, m)
        rebuilt = task.observe(noisy)[0]
        for k, (name, _) in enumerate(layout):
            if name in deployment.observable:
                np.testing.assert_allclose(rebuilt[starts[k]:starts[k + 1]], expected[starts[k]:starts[k + 1]],
                                           atol=1e-9, err_msg=f"{cls.name} {mode} block {name!r} at step {step}")
                VERIFIED[cls.robot].add(name)
        checked += 1
    env.close()
    if not deployment.unobservable(task):
        assert checked == 12, "a fully observable task must be deployable from its streams at every step"


def test_every_claimed_block_was_verified() -> None:
    """Runs after the cases above (same module, file order): no claim goes unchecked."""
    for robot in ROBOTS:
        unverified = robot_deployment(robot).observable - VERIFIED[robot]
        assert not unverified, f"{robot}: {sorted(unverified)} claimed observable but no task checked them"


def test_required_measurements_follow_the_observation() -> None:
    quad = robot_deployment("quadruped")
    task = REGISTRY.get("QuadrupedVelocity")(num_envs=1)
    assert quad.required(task) == ["joint_pos", "joint_vel", "base_pos", "base_quat", "base_lin_vel",
                                   "base_ang_vel", "cmd_vel"]
    assert robot_deployment("drone").required(REGISTRY.get("DroneHover")(num_envs=1))[-1] == "goal"
    assert set(f.name for f in dataclasses.fields(Measurements)) >= {*quad.measured, "goal", "cmd_vel"}


def test_driver_modes_and_unknown_robot() -> None:
    assert robot_deployment("quadruped").driver_mode("gait_residual", {"x": 1}) == (
        "joint_pos", {"x": 1, "action_scale": 2.0})
    assert robot_deployment("drone").driver_mode("ctbr_residual", {}) == ("ctbr", {})
    assert robot_deployment("arm").driver_mode("ee_delta", {}) == ("ee_delta", {})
    with pytest.raises(ConfigError, match="unknown robot 'rover'"):
        robot_deployment("rover")


def test_every_robot_names_two_live_cameras_its_model_has() -> None:
    """The console shows two views of each simulated robot; a renamed camera would show none."""
    import mujoco

    for robot in ROBOTS:
        deployment = robot_deployment(robot)
        model = make(deployment.task).model
        names = {mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_CAMERA, i) for i in range(model.ncam)}
        assert len(deployment.live_cameras) == 2 and set(deployment.live_cameras) <= names, robot
        assert len(deployment.operator.axes) == len(deployment.operator.hold) and all(
            a.limit > 0 and all(a.keys) for a in deployment.operator.axes), robot
