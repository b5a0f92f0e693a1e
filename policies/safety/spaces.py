"""Command spaces: what travels on the robot's command topic, in physical units.

Policies act in ``[-1, 1]``; robots are commanded in SI units, as a real robot's
driver expects (joint position targets in rad, body rates in rad/s, thrust in N,
Cartesian velocities in m/s). Every supported action mode maps affinely::

    command = offset + scale * action        action = (command - offset) / scale

except the impedance stiffnesses, which the arm maps log-uniformly (equal resolution
at soft and stiff settings): for those elements ``command = exp(offset + scale * action)``.

with the scales of the simulated robot's own ``action_to_ctrl``, so the sim bridge
inverts it exactly and a real driver receives the same numbers.

=========  ============  ===================================================
robot      action mode   command elements
=========  ============  ===================================================
arm        ee_delta      vx vy vz (m/s), wx wy wz (rad/s), gripper width (m)
arm        ee_impedance  vx vy vz (m/s), wx wy wz (rad/s), kx ky kz (N/m),
                         krx kry krz (Nm/rad), gripper width (m)
arm        joint_torque  tau1..tau7 (Nm), gripper width (m)
ur5e       ee_delta      as the arm's (the gripper element is carried, the UR ignores it)
quadruped  joint_pos     12 joint position targets (rad), FR FL RR RL x hip thigh calf
drone      ctbr          collective thrust (N), roll/pitch/yaw rate (rad/s)
=========  ============  ===================================================
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sim2real.sim.arm import constants as ARM
from sim2real.sim.core.errors import ConfigError
from sim2real.sim.drone import constants as DRONE
from sim2real.sim.quadruped import constants as QUAD


@dataclass(frozen=True)
class CommandSpace:
    """One robot's command vector: names, units and the affine map from actions."""

    robot: str
    action_mode: str
    names: tuple[str, ...]
    units: tuple[str, ...]
    offset: np.ndarray
    scale: np.ndarray
    control_dt: float
    log_elements: tuple[int, ...] = ()
    """Indices mapped log-uniformly: ``command = exp(offset + scale * action)``."""

    @property
    def size(self) -> int:
        return len(self.names)

    @property
    def lower(self) -> np.ndarray:
        """Commands of action -1 (the simulated actuators' range)."""
        return self._out(np.minimum(self.offset - self.scale, self.offset + self.scale))

    @property
    def upper(self) -> np.ndarray:
        return self._out(np.maximum(self.offset - self.scale, self.offset + self.scale))

    @property
    def hold(self) -> np.ndarray:
        """The command of action 0."""
        return self._out(self.offset.copy())

    def _out(self, linear: np.ndarray) -> np.ndarray:
        if self.log_elements:
            idx = list(self.log_elements)
            linear[..., idx] = np.exp(linear[..., idx])
        return linear

    def twist_command(self, linear: np.ndarray, angular: np.ndarray, last: np.ndarray | None) -> np.ndarray | None:
        """A command from a velocity Twist (a joystick, a teleoperation device), or ``None``
        when this space has no Cartesian velocity elements (``vx``..``wz``). Other
        elements keep ``last`` (the last command sent), else their hold value."""
        if not set(ARM_TWIST) <= set(self.names):
            return None
        out = np.array(last if last is not None and len(last) == self.size else self.hold, dtype=np.float64)
        for i, value in zip((self.names.index(n) for n in ARM_TWIST), np.r_[linear, angular], strict=True):
            out[i] = value
        return out

    def action_to_command(self, action: np.ndarray) -> np.ndarray:
        return self._out(self.offset + self.scale * np.clip(np.asarray(action, dtype=np.float64), -1.0, 1.0))

    def command_to_action(self, command: np.ndarray) -> np.ndarray:
        """Inverse map, clipped to ``[-1, 1]`` (the actuators' range); non-positive
        stiffnesses map to the softest setting."""
        c = np.array(command, dtype=np.float64)
        if self.log_elements:
            idx = list(self.log_elements)
            with np.errstate(divide="ignore", invalid="ignore"):
                c[..., idx] = np.log(np.maximum(c[..., idx], 1e-300))
        return np.clip((c - self.offset) / self.scale, -1.0, 1.0)


ARM_TWIST = ("vx", "vy", "vz", "wx", "wy", "wz")
EE_DELTA_ARMS = ("arm", "ur5e")
"""Robots whose ``ee_delta`` commands move a setpoint by the arm's own law
(:func:`sim2real.sim.arm.control.cartesian_setpoint`), so they share its command space."""
ARM_STIFFNESS = ("kx", "ky", "kz", "krx", "kry", "krz")


def command_space(robot: str, action_mode: str, action_scale: float | None = None) -> CommandSpace:
    """The command space of ``robot`` in ``action_mode``.

    Args:
        action_scale: The quadruped task's ``action_scale`` option (rad per unit action).

    Raises:
        ConfigError: the mode has no deployment command space (yet).
    """
    grip_off, grip_scale = ARM.GRIP_WIDTH_MAX / 2, ARM.GRIP_WIDTH_MAX / 2
    if robot in EE_DELTA_ARMS and action_mode == "ee_delta":
        lin, ang = ARM.EE_DELTA_POS_MAX / ARM.CONTROL_DT, ARM.EE_DELTA_ROT_MAX / ARM.CONTROL_DT
        return CommandSpace(
            robot, action_mode, (*ARM_TWIST, "gripper"), ("m/s",) * 3 + ("rad/s",) * 3 + ("m",),
            offset=np.r_[np.zeros(6), grip_off], scale=np.r_[np.full(3, lin), np.full(3, ang), grip_scale],
            control_dt=ARM.CONTROL_DT,
        )
    if robot == "arm" and action_mode == "ee_impedance":
        lin, ang = ARM.EE_DELTA_POS_MAX / ARM.CONTROL_DT, ARM.EE_DELTA_ROT_MAX / ARM.CONTROL_DT
        k_lo = np.log([ARM.IMPEDANCE_POS_STIFFNESS_RANGE[0]] * 3 + [ARM.IMPEDANCE_ROT_STIFFNESS_RANGE[0]] * 3)
        k_hi = np.log([ARM.IMPEDANCE_POS_STIFFNESS_RANGE[1]] * 3 + [ARM.IMPEDANCE_ROT_STIFFNESS_RANGE[1]] * 3)
        return CommandSpace(
            robot, action_mode, (*ARM_TWIST, *ARM_STIFFNESS, "gripper"),
            ("m/s",) * 3 + ("rad/s",) * 3 + ("N/m",) * 3 + ("Nm/rad",) * 3 + ("m",),
            offset=np.r_[np.zeros(6), (k_lo + k_hi) / 2, grip_off],
            scale=np.r_[np.full(3, lin), np.full(3, ang), (k_hi - k_lo) / 2, grip_scale],
            control_dt=ARM.CONTROL_DT, log_elements=tuple(range(6, 12)),
        )
    if robot == "arm" and action_mode == "joint_torque":
        return CommandSpace(
            robot, action_mode, (*ARM.ARM_JOINTS, "gripper"), ("Nm",) * 7 + ("m",),
            offset=np.r_[np.zeros(7), grip_off], scale=np.r_[ARM.TORQUE_LIMIT, grip_scale], control_dt=ARM.CONTROL_DT,
        )
    if robot == "quadruped" and action_mode in ("joint_pos", "gait_residual"):
        # gait_residual commands are joint targets too: the policy node adds the task's
        # gait reference (Task.deploy_command) to the mapped action before publishing.
        scale = QUAD.ACTION_SCALE if action_scale is None else float(action_scale)
        return CommandSpace(
            robot, action_mode, QUAD.JOINT_NAMES, ("rad",) * 12,
            offset=QUAD.DEFAULT_POSE.copy(), scale=np.full(12, scale), control_dt=QUAD.CONTROL_DT,
        )
    if robot == "drone" and action_mode in ("ctbr", "ctbr_residual"):  # residual: PID + policy, as ctbr
        half = DRONE.MAX_COLLECTIVE_THRUST / 2
        return CommandSpace(
            robot, action_mode, ("thrust", "roll_rate", "pitch_rate", "yaw_rate"), ("N", "rad/s", "rad/s", "rad/s"),
            offset=np.r_[half, 0.0, 0.0, 0.0], scale=np.r_[half, DRONE.MAX_BODY_RATE], control_dt=DRONE.CONTROL_DT,
        )
    supported = ("arm ee_delta|ee_impedance|joint_torque, ur5e ee_delta, quadruped joint_pos|gait_residual, "
                 "drone ctbr|ctbr_residual")
    raise ConfigError("action_mode", f"{robot} {action_mode!r} has no deployment command space; supported: {supported}")
