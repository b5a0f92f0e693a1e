"""Action safety in front of the arm: clipping, a per-step motion limit and a workspace box.

Runs on every action the actor sends (policy's or operator's). On a real arm the command
then passes through the deployment safety-filter chain as well
(:func:`sim2real.policies.safety.make_chain`, run by the ``safety_filter`` ROS 2 node).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sim2real.errors import ConfigError
from sim2real.sim.arm import constants as C
from sim2real.sim.core.layout import layout_slices


@dataclass
class SafetyReport:
    non_finite: bool = False
    clipped: bool = False
    motion_limited: bool = False
    workspace_blocked: bool = False


class ActionSafety:
    """Makes an ``ee_delta``-style action safe given the measured end-effector position.

    Args:
        action_layout: The task's action layout (needs ``ee_delta_pos``).
        workspace_low, workspace_high: Box the end effector must stay in (m).
        max_step_m: Largest commanded translation per step (m).
    """

    def __init__(
        self,
        action_layout: list[tuple[str, int]],
        workspace_low: np.ndarray,
        workspace_high: np.ndarray,
        max_step_m: float,
    ) -> None:
        self.slices = layout_slices(action_layout)
        if "ee_delta_pos" not in self.slices:
            raise ConfigError("action_mode", "HIL-SERL's action safety needs a Cartesian action mode (ee_delta)")
        self.size = sum(n for _, n in action_layout)
        self.low = np.asarray(workspace_low, dtype=float)
        self.high = np.asarray(workspace_high, dtype=float)
        if np.any(self.low >= self.high):
            raise ConfigError("workspace", "low must be below high on every axis")
        self.max_step_m = float(max_step_m)

    def __call__(self, action: np.ndarray, ee_pos: np.ndarray) -> tuple[np.ndarray, SafetyReport]:
        report = SafetyReport()
        a = np.asarray(action, dtype=float).reshape(-1)
        if a.shape != (self.size,):
            raise ConfigError("action", f"expected {self.size} values, got shape {np.shape(action)}")
        if not np.all(np.isfinite(a)):
            # Fail closed: hold still rather than guess what a NaN meant.
            report.non_finite = True
            return np.zeros(self.size), report
        clipped = np.clip(a, -1.0, 1.0)
        report.clipped = bool(np.any(clipped != a))
        pos = self.slices["ee_delta_pos"]
        delta = clipped[pos] * C.EE_DELTA_POS_MAX
        norm = float(np.linalg.norm(delta))
        if norm > self.max_step_m:
            delta *= self.max_step_m / norm
            report.motion_limited = True
        # Block motion that leaves the box (motion back into it is always allowed).
        target = np.asarray(ee_pos, dtype=float) + delta
        outward = ((target > self.high) & (delta > 0)) | ((target < self.low) & (delta < 0))
        if np.any(outward):
            delta[outward] = 0.0
            report.workspace_blocked = True
        clipped[pos] = delta / C.EE_DELTA_POS_MAX
        return clipped, report
