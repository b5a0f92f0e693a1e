"""The UR5e's reach: a classical controller in the ``ee_delta`` command space.

The Franka-scale arm's learned ArmReach does not carry over (its task is built around 7
joints, a gripper and Cartesian impedance servos; the UR runs joint position streaming),
so the UR's reach is this controller: the flange's velocity toward the goal, proportional
to the distance and capped, its orientation held (zero angular velocity: the backend's
setpoint keeps the orientation it had when enabled). The backend's damped-least-squares
IK on the UR5e's model turns it into joint targets (:mod:`sim2real.hardware.ros2_control.kinematics`),
and every command passes the same safety filter as a policy's would.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


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
