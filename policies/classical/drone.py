"""The quadrotor's classical controller: the cascaded PID of
:mod:`sim2real.sim.drone.position_control` (it lives in ``sim/`` because the
``ctbr_residual`` action mode runs it inside the task; this is its policy-side name)."""

from sim2real.sim.core.errors import ConfigError
from sim2real.sim.core.task import Task
from sim2real.sim.drone.position_control import HOVER_LAYOUT, REQUIRED_BLOCKS, CascadedPID, CascadedPIDGains

__all__ = ["HOVER_LAYOUT", "REQUIRED_BLOCKS", "CascadedPID", "CascadedPIDGains", "controller_for"]


def controller_for(task: Task, num_envs: int = 1) -> CascadedPID:
    """The drone's cascaded PID for ``task``, at the task's control period.

    Raises:
        ConfigError: a mode other than ``ctbr`` (``ctbr_residual`` adds this PID itself).
    """
    if task.action_mode != "ctbr":
        raise ConfigError("action_mode", f"the drone's cascaded PID acts in ctbr, not {task.action_mode!r}")
    return CascadedPID(num_envs=num_envs, observation_layout=task.observation_layout(), dt=float(task.control_dt))
