"""The quadrotor's classical controller: the cascaded PID of
:mod:`sim2real.sim.drone.position_control` (it lives in ``sim/`` because the
``ctbr_residual`` action mode runs it inside the task; this is its policy-side name)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from sim2real.sim.core.errors import ConfigError
from sim2real.sim.core.layout import layout_slices
from sim2real.sim.core.task import Task
from sim2real.sim.drone.airframe import Airframe
from sim2real.sim.drone.base import DroneTask
from sim2real.sim.drone.position_control import (
    HOVER_LAYOUT,
    REQUIRED_BLOCKS,
    CascadedPID,
    CascadedPIDGains,
    position_loop,
)

__all__ = ["HOVER_LAYOUT", "REQUIRED_BLOCKS", "CascadedPID", "CascadedPIDGains", "DroneOracle", "VelocityGuidance",
           "controller_for", "oracle_for"]


def controller_for(task: Task, num_envs: int = 1) -> CascadedPID | VelocityGuidance:
    """The drone's cascaded PID for ``task``, at the task's control period, scaled to the
    task's airframe (its mass and thrust; the gains are accelerations and rates); in the
    ``velocity`` mode its position loop alone (:class:`VelocityGuidance`), the vehicle's
    own controller flying the velocity.

    Raises:
        ConfigError: a mode other than ``ctbr`` or ``velocity`` (``ctbr_residual`` adds
            this PID itself).
    """
    if task.action_mode == "velocity":
        return VelocityGuidance(task.observation_layout(), _airframe(task).speed_scale)
    if task.action_mode != "ctbr":
        raise ConfigError("action_mode", f"the drone's cascaded PID acts in ctbr or velocity, not {task.action_mode!r}")
    frame = _airframe(task)
    return CascadedPID(num_envs=num_envs, observation_layout=task.observation_layout(), dt=float(task.control_dt),
                       mass=frame.mass, max_collective_thrust=frame.max_collective_thrust)


class VelocityGuidance:
    """The position loop of the cascaded PID as a ``velocity`` policy: a velocity toward
    the target, ``kp * pos_error``, its horizontal norm and its vertical part capped,
    as a fraction of the command space's ``speed_scale`` (m/s per unit action). The
    velocity, attitude and rate loops are the vehicle's (PX4's, or the simulated
    :class:`~sim2real.sim.drone.position_control.VelocityControl`)."""

    def __init__(self, observation_layout: list[tuple[str, int]], speed_scale: np.ndarray,
                 kp: float = 1.6, max_speed: tuple[float, float] = (1.5, 1.0)) -> None:
        self.error = layout_slices(observation_layout)["pos_error"]
        self.speed_scale = np.asarray(speed_scale, dtype=np.float64)
        self.kp = kp
        self.max_speed = max_speed
        """m/s, horizontal and vertical: the cascaded PID's (``kp`` is its ``kp_pos`` too)."""

    def reset(self, env_ids: Any = None) -> None:
        """Stateless (the vehicle's velocity loop holds the integrator)."""

    def act(self, obs: np.ndarray) -> np.ndarray:
        obs = np.asarray(obs, dtype=np.float64)
        single = obs.ndim == 1
        velocity = position_loop(np.atleast_2d(obs)[:, self.error], self.kp, self.max_speed)
        action = np.clip(velocity / self.speed_scale, -1.0, 1.0)
        return action[0] if single else action


def _airframe(task: Task) -> Airframe:
    """The vehicle ``task`` flies; only a drone task has one (``ctbr`` is a drone's mode)."""
    if not isinstance(task, DroneTask):
        raise ConfigError("task", f"the cascaded PID flies a drone task, not {type(task).__name__}")
    return task.airframe


class DroneOracle(CascadedPID):
    """The cascaded PID told each episode's true parameters (privileged): its thrust
    feedforward uses the drone's real mass over its real thrust gain (mass scale, thrust
    coefficient, mean motor strength), so it starts every episode with exact hover
    thrust; the integrator is cleared at every reset. Where it fails, a PID that knows
    the robot cannot fly the case either."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.nominal_mass = float(self.mass[0])
        """kg, the airframe's: what each episode's mass draw scales."""

    def on_reset(self, env_ids: Sequence[int], draws: Sequence[dict[str, Any]]) -> None:
        for i, draw in zip(env_ids, draws, strict=True):
            mass = float(np.mean(draw.get("mass_scale", [1.0])))
            thrust = float(draw.get("thrust_coefficient", 1.0)) * float(np.mean(draw.get("motor_strength", [1.0])))
            self.mass[i] = self.nominal_mass * mass / max(thrust, 1e-3)
            self.reset(i)

    def __call__(self, obs: np.ndarray) -> np.ndarray:
        return self.act(obs)


def oracle_for(task: Task, num_envs: int = 1) -> tuple[DroneOracle, str]:
    """The drone's oracle and the action mode it flies in (``ctbr``)."""
    frame = _airframe(task)
    return DroneOracle(num_envs=num_envs, observation_layout=task.observation_layout(), dt=float(task.control_dt),
                       mass=frame.mass, max_collective_thrust=frame.max_collective_thrust), "ctbr"
