"""Classical controllers: the demo's baselines, the deployment's fallback policy, the
reward datasets' behaviour policy and scripted operators for HIL RL.

Each robot's module has ``controller_for(task, num_envs)``; :func:`controller_for` asks
the task's robot for it (one registration line per robot).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

import numpy as np

from sim2real.policies.classical import arm, drone, quadruped, ur_reach
from sim2real.sim.core.errors import ConfigError
from sim2real.sim.core.task import Task


class Controller(Protocol):
    """A batched controller: observations ``[B, O]`` -> actions ``[B, A]`` in [-1, 1]."""

    def reset(self, env_ids: Any = None) -> None: ...

    def act(self, obs: np.ndarray) -> np.ndarray: ...


CONTROLLERS: dict[str, Callable[[Task, int], Controller]] = {
    "arm": arm.controller_for,
    "ur5e": ur_reach.controller_for,
    "quadruped": quadruped.controller_for,
    "drone": drone.controller_for,
    "x500": drone.controller_for,
}


ORACLES: dict[str, Callable[[Task, int], tuple[Any, str] | None]] = {
    "arm": arm.oracle_for,
    "drone": drone.oracle_for,
    "quadruped": quadruped.oracle_for,
    "x500": drone.oracle_for,
}
"""Robots with an oracle: a model-based controller told each episode's true parameters
(``on_reset(env_ids, draws)``) or a policy reading the simulator's privileged state
(``privileged_inputs``: the quadruped's teacher), and the action mode it acts in (None
for a task it cannot act in). An oracle that is a trained policy also has
``options_for(task_options)``: the task options it runs under in a study, its own
controller options in place of the studied policy's (``robustness_runs.controllers_for``)."""


def oracle_for(task: Task, num_envs: int = 1) -> tuple[Any, str] | None:
    """``task``'s robot's oracle and its action mode, or None where the robot has none."""
    make = ORACLES.get(task.robot)
    return None if make is None else make(task, num_envs)


def controller_for(task: Task, num_envs: int = 1) -> Controller:
    """The classical controller of ``task``'s robot, for ``num_envs`` environments.

    Raises:
        ConfigError: the robot has none, or none for the task's action mode.
    """
    if task.robot not in CONTROLLERS:
        raise ConfigError("policy", f"no classical controller for robot {task.robot!r}")
    return CONTROLLERS[task.robot](task, num_envs)
