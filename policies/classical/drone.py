"""The quadrotor's classical controller: the cascaded PID of
:mod:`sim2real.sim.drone.position_control` (it lives in ``sim/`` because the
``ctbr_residual`` action mode runs it inside the task; this is its policy-side name)."""

from sim2real.sim.drone.position_control import HOVER_LAYOUT, REQUIRED_BLOCKS, CascadedPID, CascadedPIDGains

__all__ = ["HOVER_LAYOUT", "REQUIRED_BLOCKS", "CascadedPID", "CascadedPIDGains"]
