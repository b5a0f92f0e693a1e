"""The arms' safety parameters and chain: the Franka (its published Cartesian limits cap
the filter's) and the UR5e (its own joints, the same Cartesian chain)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated

import numpy as np

from sim2real.policies.safety import fallback, guards, limits, passivity
from sim2real.policies.safety.presets.common import CommonParams, Preset, _list
from sim2real.policies.safety.spaces import CommandSpace
from sim2real.policies.safety.tightening import CEILING, FLOOR
from sim2real.sim.arm import constants as ARM
from sim2real.sim.arm import ur5e as UR5E
from sim2real.sim.core.schema import Bounds, NonNegative, Positive


@dataclass
class ArmSafetyParams(CommonParams):
    max_linear_speed: Annotated[float, Bounds(gt=0.0, le=ARM.CARTESIAN_SPEED_LIMIT), CEILING] = 0.8
    """m/s, per axis, of the Cartesian velocity command (``ee_delta``)."""
    max_angular_speed: Annotated[float, Bounds(gt=0.0, le=ARM.CARTESIAN_ROTATION_SPEED_LIMIT), CEILING] = 2.0
    """rad/s, per axis."""
    max_linear_accel: Annotated[float, Bounds(gt=0.0, le=ARM.CARTESIAN_ACCEL_LIMIT), CEILING] = 10.0
    """m/s^2: rate limit of the linear velocity command."""
    max_angular_accel: Annotated[float, Bounds(gt=0.0, le=ARM.CARTESIAN_ROTATION_ACCEL_LIMIT), CEILING] = 25.0
    """rad/s^2: rate limit of the angular velocity command."""
    max_linear_jerk: Annotated[float, Bounds(ge=0.0, le=ARM.CARTESIAN_JERK_LIMIT)] = 0.0
    """m/s^3: rate of the acceleration (0: off)."""
    gripper_min: Annotated[NonNegative, FLOOR] = 0.0
    """m, smallest gripper width command."""
    gripper_max: Annotated[float, Bounds(gt=0.0, le=ARM.GRIP_WIDTH_MAX), CEILING] = ARM.GRIP_WIDTH_MAX
    """m, largest gripper width command."""
    gripper_rate: Annotated[Positive, CEILING] = 0.5
    """m/s, gripper width command."""
    workspace_low: Annotated[list[float], FLOOR] = field(default_factory=lambda: _list(ARM.WORKSPACE_LOW))
    """m, lower corner (x, y, z, base frame) of the box the end effector's commands stay in."""
    workspace_high: Annotated[list[float], CEILING] = field(default_factory=lambda: _list(ARM.WORKSPACE_HIGH))
    """m, upper corner of that box."""
    workspace_guard_margin: Annotated[NonNegative, CEILING] = 0.05
    """m: the measured end effector this far outside the box trips the hold."""
    joint_lower: Annotated[list[float], FLOOR] = field(default_factory=lambda: _list(ARM.JOINT_LOWER))
    """rad, lower joint limits (Franka Panda's)."""
    joint_upper: Annotated[list[float], CEILING] = field(default_factory=lambda: _list(ARM.JOINT_UPPER))
    """rad, upper joint limits."""
    joint_max_velocity: Annotated[list[Positive], CEILING] = field(default_factory=lambda: _list(ARM.VELOCITY_LIMIT))
    """rad/s, joint speed limits."""
    joint_position_margin: Annotated[NonNegative, CEILING] = 0.02
    """rad beyond a joint's range before the joint guard trips."""
    joint_velocity_ratio: Annotated[float, Bounds(ge=1.0), CEILING] = 1.2
    """A measured joint faster than this multiple of its speed limit trips the joint guard."""
    max_effort: Annotated[list[Positive], CEILING] = field(default_factory=lambda: _list(0.9 * ARM.TORQUE_LIMIT))
    """Nm, ``joint_torque`` mode."""
    effort_rate: Annotated[Positive, CEILING] = 1000.0
    """Nm/s, ``joint_torque`` mode."""
    hold_damping: list[NonNegative] = field(default_factory=lambda: _list(ARM.JOINT_KD))
    """Nm s/rad, damping torques of the hold in ``joint_torque`` mode."""
    passivity_filter: Annotated[bool, FLOOR] = True
    """``ee_impedance`` mode: scale commands the energy tank cannot pay for."""
    tank_initial: Positive = 1.0
    """J, energy tank at start (``ee_impedance``)."""
    tank_minimum: Annotated[Positive, FLOOR] = 0.05
    """J, ``T_min``: the tank never lends below it."""
    tank_maximum: Annotated[Positive, CEILING] = 2.0
    """J, ``T_max``: dissipation stops refilling above it."""
    passivity_margin: Annotated[float, Bounds(gt=0.0, le=1.0), CEILING] = 0.8
    """Share of ``T - T_min`` one command may draw (covers measurement-to-actuation delay)."""


@dataclass
class Ur5eSafetyParams(ArmSafetyParams):
    """The arm's filter with the UR5e's limits (:mod:`sim2real.sim.arm.ur5e`): its six
    joints' ranges, speeds and torques, and a workspace box around its reach box."""

    workspace_low: Annotated[list[float], FLOOR] = field(default_factory=lambda: [0.25, -0.40, 0.05])
    """m, lower corner (x, y, z, base frame) of the box the flange's commands stay in
    (the reach box, 0.35..0.60 x -0.25..0.25 x 0.15..0.45, with 10 cm to spare)."""
    workspace_high: Annotated[list[float], CEILING] = field(default_factory=lambda: [0.70, 0.40, 0.60])
    """m, upper corner of that box."""
    joint_lower: Annotated[list[float], FLOOR] = field(default_factory=lambda: _list(UR5E.JOINT_LOWER))
    """rad, lower joint limits (the UR5e's: +-360 deg, the elbow +-180 deg)."""
    joint_upper: Annotated[list[float], CEILING] = field(default_factory=lambda: _list(UR5E.JOINT_UPPER))
    """rad, upper joint limits."""
    joint_max_velocity: Annotated[list[Positive], CEILING] = field(
        default_factory=lambda: _list(UR5E.VELOCITY_LIMIT))
    """rad/s, joint speed limits (180 deg/s on every UR5e joint)."""
    max_effort: Annotated[list[Positive], CEILING] = field(default_factory=lambda: _list(0.9 * UR5E.TORQUE_LIMIT))
    """Nm (``joint_torque`` mode, which the UR's driver does not offer: kept for the shape)."""
    hold_damping: list[NonNegative] = field(default_factory=lambda: _list(UR5E.JOINT_KD))
    """Nm s/rad (``joint_torque`` mode's hold; the UR holds by its position target)."""
    max_linear_speed: Annotated[float, Bounds(gt=0.0, le=ARM.CARTESIAN_SPEED_LIMIT), CEILING] = 0.5
    """m/s, per axis, of the flange's velocity command (the reach asks at most 0.25)."""


def build(space: CommandSpace, p: ArmSafetyParams, dt: float):
    max_dt = p.rate_max_dt_periods * dt
    age = p.state_timeout_periods * dt
    g: list = [
        guards.JointStateGuard(guards.JointStateGuardParams(
            p.joint_lower, p.joint_upper, p.joint_max_velocity, p.joint_position_margin, p.joint_velocity_ratio)),
        guards.WorkspaceGuard(guards.BoxGuardParams(
            _list(np.asarray(p.workspace_low) - p.workspace_guard_margin),
            _list(np.asarray(p.workspace_high) + p.workspace_guard_margin))),
    ]
    if space.action_mode == "ee_delta":
        hi = np.r_[np.full(3, p.max_linear_speed), np.full(3, p.max_angular_speed), p.gripper_max]
        lo = np.r_[-hi[:6], p.gripper_min]
        rate = np.r_[np.full(3, p.max_linear_accel), np.full(3, p.max_angular_accel), p.gripper_rate]
        jerk = np.r_[np.full(3, p.max_linear_jerk), np.full(3, 1e9), 1e9] if p.max_linear_jerk > 0 else None
        lim = [
            limits.RateLimit(limits.RateLimitParams(_list(rate), None if jerk is None else _list(jerk), max_dt),
                             space.size, "rate_limit"),
            limits.WorkspaceBox(limits.WorkspaceBoxParams(p.workspace_low, p.workspace_high, dt, age), space.size),
            limits.BoxLimit(limits.BoxLimitParams(_list(lo), _list(hi), hold=[0.0] * 6 + [p.gripper_max / 2]),
                            "velocity_limit"),
        ]
    elif space.action_mode == "ee_impedance":
        hi = np.r_[np.full(3, p.max_linear_speed), np.full(3, p.max_angular_speed), space.upper[6:12], p.gripper_max]
        lo = np.r_[-hi[:6], space.lower[6:12], p.gripper_min]
        rate = np.r_[np.full(3, p.max_linear_accel), np.full(3, p.max_angular_accel), np.full(6, 1e9), p.gripper_rate]
        hold = np.r_[np.zeros(6), space.lower[6:12], p.gripper_max / 2]
        lim = [
            limits.RateLimit(limits.RateLimitParams(_list(rate), None, max_dt), space.size, "rate_limit"),
            limits.WorkspaceBox(limits.WorkspaceBoxParams(p.workspace_low, p.workspace_high, dt, age), space.size),
            limits.BoxLimit(limits.BoxLimitParams(_list(lo), _list(hi), hold=_list(hold)), "velocity_limit"),
        ]
        if p.passivity_filter:  # last: no later filter may add energy back
            lim.append(passivity.PassivityLimit(passivity.PassivityLimitParams(
                p.tank_initial, p.tank_minimum, p.tank_maximum, p.passivity_margin,
                p.max_linear_speed, p.max_angular_speed), space))
    else:  # joint_torque
        hi = np.r_[p.max_effort, p.gripper_max]
        lo = np.r_[-np.asarray(p.max_effort), p.gripper_min]
        rate = np.r_[np.full(7, p.effort_rate), p.gripper_rate]
        lim = [
            limits.RateLimit(limits.RateLimitParams(_list(rate), None, max_dt), space.size, "rate_limit"),
            limits.BoxLimit(limits.BoxLimitParams(_list(lo), _list(hi), hold=[0.0] * 7 + [p.gripper_max / 2]),
                            "effort_limit"),
        ]
    return g, lim, fallback.ArmHold(space, np.asarray(p.hold_damping))


FRANKA = Preset(ArmSafetyParams, build)
UR5E_ARM = Preset(Ur5eSafetyParams, build)
