"""sim2real.sim: MuJoCo physics, robots, tasks, randomization and batched stepping.

This layer imports nothing above it (no policies, no ROS).
"""

from __future__ import annotations

import functools

import gymnasium as gym

from sim2real.sim import arm, drone, quadruped
from sim2real.sim.arm import ur5e_robot
from sim2real.sim.core.deployment import RobotDeployment
from sim2real.sim.core.errors import ConfigError
from sim2real.sim.core.registry import REGISTRY, gym_id, make, make_vec
from sim2real.sim.drone import x500_robot

# The explicit registry: one line per robot; each entry (a robot's package, or a module
# for a robot sharing its class's folder: the UR5e in sim/arm/, the X500 in sim/drone/)
# has TASKS and DEPLOYMENT.
ROBOTS = {"arm": arm, "ur5e": ur5e_robot, "quadruped": quadruped, "drone": drone, "x500": x500_robot}


def robot_deployment(robot: str) -> RobotDeployment:
    """What deploying ``robot`` needs to know of it (its package's ``DEPLOYMENT``).

    Raises:
        ConfigError: unknown robot.
    """
    if robot not in ROBOTS:
        raise ConfigError("robot", f"unknown robot {robot!r}; choose one of {sorted(ROBOTS)}")
    return ROBOTS[robot].DEPLOYMENT


def _register_all() -> None:
    from sim2real.sim.core.env import SimEnv

    for package in ROBOTS.values():
        for task_cls in package.TASKS:
            REGISTRY.register(task_cls)
            env_id = gym_id(task_cls)
            if env_id not in gym.registry:
                gym.register(id=env_id, entry_point=functools.partial(SimEnv, task_cls), disable_env_checker=True)


_register_all()

__all__ = ["REGISTRY", "ROBOTS", "make", "make_vec", "robot_deployment"]
