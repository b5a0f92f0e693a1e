"""Physical command units -> the simulated arm's ``[-1, 1]`` actions.

The wire carries what a real arm's driver takes (m/s, rad/s, N/m, Nm/rad, Nm, m), the
same numbers as the ROS ``command`` topic. The emulated controller turns them into the
simulator's normalized action with the simulated actuators' own ranges
(``sim/arm/constants.py``). ``policies/safety/spaces.py`` defines the same map for the
host side; ``tests/hardware/test_arm_emulator.py`` checks the two agree, since the
hardware layer may not import ``policies``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sim2real.hardware.arm_protocol import CommandMode
from sim2real.sim.arm import constants as ARM


@dataclass(frozen=True)
class ArmCommandUnits:
    """``command = offset + scale * action``; stiffness elements are log-mapped:
    ``command = exp(offset + scale * action)``."""

    offset: np.ndarray
    scale: np.ndarray
    log_elements: tuple[int, ...] = ()

    def to_action(self, command: np.ndarray) -> np.ndarray:
        c = np.array(command, dtype=np.float64)
        if self.log_elements:
            idx = list(self.log_elements)
            c[idx] = np.log(np.maximum(c[idx], 1e-300))  # a non-positive stiffness: the softest setting
        return np.clip((c - self.offset) / self.scale, -1.0, 1.0)

    def hold(self, gripper: float | None = None) -> np.ndarray:
        """The command that holds the arm: zero Cartesian velocity (the setpoint stays), or
        zero torque on top of the controller's gravity compensation; stiffnesses mid-range;
        the gripper at ``gripper`` (the last commanded width) so holding never opens or
        closes the hand."""
        c = self.offset.copy()
        if self.log_elements:
            c[list(self.log_elements)] = np.exp(c[list(self.log_elements)])
        if gripper is not None:
            c[-1] = gripper
        return c


def arm_command_units(mode: CommandMode) -> ArmCommandUnits:
    grip_off = grip_scale = ARM.GRIP_WIDTH_MAX / 2
    lin, ang = ARM.EE_DELTA_POS_MAX / ARM.CONTROL_DT, ARM.EE_DELTA_ROT_MAX / ARM.CONTROL_DT
    if mode == CommandMode.EE_DELTA:
        return ArmCommandUnits(np.r_[np.zeros(6), grip_off], np.r_[np.full(3, lin), np.full(3, ang), grip_scale])
    if mode == CommandMode.EE_IMPEDANCE:
        k_lo = np.log([ARM.IMPEDANCE_POS_STIFFNESS_RANGE[0]] * 3 + [ARM.IMPEDANCE_ROT_STIFFNESS_RANGE[0]] * 3)
        k_hi = np.log([ARM.IMPEDANCE_POS_STIFFNESS_RANGE[1]] * 3 + [ARM.IMPEDANCE_ROT_STIFFNESS_RANGE[1]] * 3)
        return ArmCommandUnits(np.r_[np.zeros(6), (k_lo + k_hi) / 2, grip_off],
                               np.r_[np.full(3, lin), np.full(3, ang), (k_hi - k_lo) / 2, grip_scale],
                               tuple(range(6, 12)))
    return ArmCommandUnits(np.r_[np.zeros(7), grip_off], np.r_[ARM.TORQUE_LIMIT, grip_scale])
