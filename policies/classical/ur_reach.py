"""The UR5e's reach: a classical controller in the ``ee_delta`` command space.

The Franka-scale arm's learned ArmReach does not carry over (its task is built around 7
joints, a gripper and Cartesian impedance servos; the UR runs joint position streaming),
so the UR5e's reach (the robot ``ur5e``'s ``Ur5eReach``, through :func:`controller_for`) is
this controller: the flange's velocity toward the goal, proportional
to the distance and capped, its orientation held (zero angular velocity: the backend's
setpoint keeps the orientation it had when enabled). The backend's damped-least-squares
IK on the UR5e's model turns it into joint targets (:mod:`sim2real.sim.arm.joint_ik`; the simulated
UR5e's reach runs the same step),
and every command passes the same safety filter as a policy's would.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from sim2real.sim.arm import constants as ARM
from sim2real.sim.core.errors import ConfigError
from sim2real.sim.core.layout import layout_slices
from sim2real.sim.core.task import Task


@dataclass
class UrReachController:
    gain: float = 1.5
    """1/s: commanded speed per metre of distance (a 10 cm error asks for 0.15 m/s)."""
    max_speed: float = 0.25
    """m/s: the cap, inside the safety filter's arm limits."""

    def command(self, ee_pos: np.ndarray, goal: np.ndarray) -> np.ndarray:
        """``[vx, vy, vz, wx, wy, wz, gripper]``: toward ``goal`` from ``ee_pos`` (m, base
        frame), no rotation, no gripper (a UR's tool is not the driver's)."""
        v = self.gain * (np.asarray(goal, dtype=np.float64) - np.asarray(ee_pos, dtype=np.float64))
        speed = float(np.linalg.norm(v))
        if speed > self.max_speed:
            v *= self.max_speed / speed
        return np.concatenate([v, np.zeros(4)])


class UrReachPolicy:
    """:class:`UrReachController` as a batched controller of the UR5e's reach task
    (:class:`~sim2real.sim.arm.ur5e_task.Ur5eReach`): observations ``[B, O]`` -> actions
    ``[B, 7]`` in [-1, 1], the commanded velocity over the command space's scale (the
    arm's ``ee_delta``: ``EE_DELTA_POS_MAX`` per control period at action 1)."""

    def __init__(self, task: Task, controller: UrReachController | None = None) -> None:
        if task.action_mode != "ee_delta":
            raise ConfigError("action_mode", f"the UR's reach controller acts in ee_delta, not {task.action_mode!r}")
        self.controller = controller or UrReachController()
        self.obs_index = layout_slices(task.observation_layout())
        if "ee_pos" not in self.obs_index or "target_rel_ee" not in self.obs_index:
            raise ConfigError("observation_layout", "the UR's reach controller needs 'ee_pos' and 'target_rel_ee'")
        self.scale = np.r_[np.full(3, ARM.EE_DELTA_POS_MAX), np.full(3, ARM.EE_DELTA_ROT_MAX)] / task.control_dt

    def reset(self, env_ids: Any = None) -> None:
        """Stateless: nothing to forget between episodes."""

    def act(self, obs: np.ndarray) -> np.ndarray:
        obs = np.atleast_2d(np.asarray(obs, dtype=np.float64))
        ee = obs[:, self.obs_index["ee_pos"]]
        goal = ee + obs[:, self.obs_index["target_rel_ee"]]
        out = np.zeros((len(obs), 7))
        for i in range(len(obs)):
            command = self.controller.command(ee[i], goal[i])
            out[i, :6] = command[:6] / self.scale  # the gripper's action stays 0: the UR has none
        return np.clip(out, -1.0, 1.0)


def controller_for(task: Task, num_envs: int = 1) -> UrReachPolicy:
    """The UR5e's classical controller for ``task`` (its reach, ``ee_delta``).

    Raises:
        ConfigError: another action mode, or an observation without the flange and target.
    """
    return UrReachPolicy(task)
