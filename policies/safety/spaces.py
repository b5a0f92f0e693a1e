"""Command spaces: what travels on the robot's command topic, in physical units.

Policies act in ``[-1, 1]``; robots are commanded in SI units, as a real robot's
driver expects (joint position targets in rad, body rates in rad/s, thrust in N,
Cartesian velocities in m/s). Every supported action mode maps affinely::

    command = offset + scale * action        action = (command - offset) / scale

except the impedance stiffnesses, which the arm maps log-uniformly (equal resolution
at soft and stiff settings): for those elements ``command = exp(offset + scale * action)``.

with the scales of the simulated robot's own ``action_to_ctrl``, so the sim bridge
inverts it exactly and a real driver receives the same numbers. Each robot describes its
own (``command_layout`` in its ``sim/<robot>/deployment.py``); adding a robot or a mode
touches nothing here. Today's:

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
drone      velocity      vx vy vz (m/s, world ENU), flown by the vehicle's own loop
x500       ctbr/velocity as the drone's, with the X500's thrust and speeds
=========  ============  ===================================================
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sim2real.sim.arm.deployment import ARM_TWIST
from sim2real.sim.core.commands import CommandLayout
from sim2real.sim.core.errors import ConfigError


@dataclass(frozen=True, kw_only=True)
class CommandSpace(CommandLayout):
    """One robot's command vector in one action mode: its robot's
    :class:`~sim2real.sim.core.commands.CommandLayout` (names, units and the affine map
    from actions) with the robot and the mode it is for."""

    robot: str
    action_mode: str

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




def command_space(robot: str, action_mode: str, action_scale: float | None = None) -> CommandSpace:
    """The command space of ``robot`` in ``action_mode``: the robot's own command layout
    (its deployment description's, :meth:`~sim2real.sim.core.deployment.RobotDeployment.command_layout`).

    Args:
        action_scale: The task's ``action_scale`` option where the robot has one (the
            quadruped's rad per unit action).

    Raises:
        ConfigError: the mode has no deployment command space (yet), or the robot is unknown.
    """
    from sim2real.sim import ROBOTS, robot_deployment

    layout = robot_deployment(robot).command_layout(action_mode, action_scale)
    if layout is None:
        supported = ", ".join(f"{name} {'|'.join(pkg.DEPLOYMENT.command_modes)}" for name, pkg in ROBOTS.items())
        raise ConfigError("action_mode", f"{robot} {action_mode!r} has no deployment command space; "
                                         f"supported: {supported}")
    return CommandSpace(robot=robot, action_mode=action_mode, **vars(layout))
