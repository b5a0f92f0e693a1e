"""The UR5e's reach task: its classical controller (through ``controller_for``, as the
deployment's policy node asks for it) reaches the targets in the simulator, and the task
turns an ``ee_delta`` command into joint targets by the backend's own IK law."""

from __future__ import annotations

import numpy as np

from sim2real.policies.classical import controller_for
from sim2real.sim import make, robot_deployment
from sim2real.sim.arm import ur5e as U
from sim2real.sim.arm.ur5e_task import Ur5eReach


def test_the_classical_reach_reaches_every_target_in_the_simulator() -> None:
    env = make("Ur5eReach")
    controller = controller_for(env.task)
    obs, _ = env.reset(seed=3)
    outcomes: list[bool] = []
    for _ in range(int(2 * U.REACH_SECONDS / U.CONTROL_DT)):  # a reach takes ~2 s
        obs, _, terminated, truncated, info = env.step(controller.act(obs[None])[0])
        if terminated or truncated:
            outcomes.append(bool(info.get("is_success")))
            obs, _ = env.reset()
    assert len(outcomes) >= 6 and all(outcomes), outcomes


def test_a_held_command_holds_and_a_velocity_moves_the_flange_by_it() -> None:
    """Action 0 keeps the joint targets where the arm is (no drift); 0.1 m/s along x for
    1 s moves the flange 0.1 m along x (the same law as the ``ur`` backend's)."""
    env = make("Ur5eReach")
    env.reset(seed=0)
    assert isinstance(env.task, Ur5eReach)
    flange = lambda: env.data.site_xpos[env.model.site("ee").id].copy()  # noqa: E731
    start = flange()
    for _ in range(10):
        env.step(np.zeros(7))
    held = flange()
    assert np.linalg.norm(held - start) < 0.003
    speed = 0.1 / (0.05 / U.CONTROL_DT)  # 0.1 m/s as an action: EE_DELTA_POS_MAX (5 cm) per period at 1
    for _ in range(int(1.0 / U.CONTROL_DT)):
        env.step(np.r_[speed, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0])
    for _ in range(6):  # the servos settle
        env.step(np.zeros(7))
    moved = flange() - held
    np.testing.assert_allclose(moved, [0.1, 0.0, 0.0], atol=0.01)


def test_the_deployment_describes_the_ur5e() -> None:
    info = robot_deployment("ur5e")
    assert info.joints == U.JOINTS and info.real_backend == "ur" and info.task == "Ur5eReach"
    low, high = info.joint_ranges()
    np.testing.assert_allclose(low, U.JOINT_LOWER, atol=1e-6)  # the MJCF writes them to 7 digits
    np.testing.assert_allclose(high, U.JOINT_UPPER, atol=1e-6)
