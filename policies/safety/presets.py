"""Per-robot safety parameters (one flat dataclass per robot, so each field maps onto
one ROS 2 parameter) and the chains built from them.

Defaults come from the robots' published limits in ``sim2real.sim.<robot>.constants``,
which also cap them where the robot publishes a ceiling (the arm's Cartesian limits,
the drone's thrust); ``config/<robot>.yaml`` repeats them in ``ros__parameters`` form for
deployment. Each limit's type says which way it tightens (:mod:`.tightening`): while the
filter runs, limits may only be tightened; the rest are fixed at configure.
Timeouts are in control periods so one file serves any rate.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Any

import numpy as np

from sim2real.policies.safety import aerial, fallback, guards, limits, passivity
from sim2real.policies.safety.chain import SafetyChain
from sim2real.policies.safety.mux import CommandSource
from sim2real.policies.safety.spaces import CommandSpace
from sim2real.policies.safety.tightening import CEILING, FLOOR
from sim2real.sim.arm import constants as ARM
from sim2real.sim.arm import ur5e as UR5E
from sim2real.sim.core.errors import ConfigError
from sim2real.sim.core.schema import Bounds, NonNegative, Positive, PositiveInt, from_dict
from sim2real.sim.drone import constants as DRONE
from sim2real.sim.quadruped import constants as QUAD

Periods = Annotated[float, Bounds(ge=0.5, le=100.0)]
"""A time in control periods (half a period at least: a watchdog needs one tick)."""
Tilt = Annotated[float, Bounds(gt=0.0, le=1.57)]
"""A tilt angle in rad, up to 90 deg."""


def _list(a: np.ndarray | list[float]) -> list[float]:
    return [float(x) for x in a]


def _xyz(a: list[float]) -> tuple[float, float, float]:
    """A point as a 3-tuple (``a`` already checked to hold 3 values, e.g. by a guard's params)."""
    x, y, z = a
    return float(x), float(y), float(z)


@dataclass
class CommonParams:
    command_timeout_periods: Annotated[Periods, CEILING] = 2.0
    """A command older than this many control periods is stale. With the node checking
    every quarter period, the safe action starts within 2.25 periods of the last command."""
    state_timeout_periods: Annotated[Periods, CEILING] = 2.0
    """A state stream older than this many control periods is stale (safe action)."""
    latch_watchdog: Annotated[bool, FLOOR] = False
    """Keep the safe action after a timeout until an explicit reset. Off by default: the
    policy resumes on its next fresh command (a watchdog trip from scheduling jitter must
    not end a run); turn it on where a started landing or stand-down must complete."""
    rate_max_dt_periods: Annotated[Periods, CEILING] = 2.0
    """Elapsed time credited to the rate limit is capped at this many periods."""


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


@dataclass
class QuadrupedSafetyParams(CommonParams):
    joint_lower: Annotated[list[float], FLOOR] = field(default_factory=lambda: _list(QUAD.joint_ranges()[:, 0]))
    """rad, lower joint limits (FR, FL, RR, RL; hip, thigh, calf)."""
    joint_upper: Annotated[list[float], CEILING] = field(default_factory=lambda: _list(QUAD.joint_ranges()[:, 1]))
    """rad, upper joint limits."""
    joint_max_velocity: Annotated[list[Positive], CEILING] = (
        field(default_factory=lambda: _list(QUAD.velocity_limits())))
    """rad/s, joint speed limits."""
    joint_position_margin: Annotated[NonNegative, CEILING] = 0.2
    """rad beyond a joint's range before the joint guard trips (a sensor fault or a fall)."""
    joint_velocity_ratio: Annotated[float, Bounds(ge=1.0), CEILING] = 1.5
    """A measured joint faster than this multiple of its speed limit trips the joint guard."""
    target_horizon_periods: Annotated[Periods, CEILING] = 2.0
    """Targets may lead the measured joints by ``max_velocity`` times this many periods at
    the stiffness it was tuned for (kp 35 Nm/rad); a servo of stiffness ``servo_kp`` gets
    35 / ``servo_kp`` times that lead (the same pull ``kp x lead``), never one the torque limit forbids."""
    max_target_rate: Annotated[Positive, CEILING] = 40.0
    """rad/s, change of the joint targets."""
    max_effort: Annotated[list[Positive], CEILING] = field(default_factory=lambda: _list(QUAD.torque_limits()))
    """Nm, joint torque limits (the PD servo's torque is kept under them)."""
    servo_kp: Positive = QUAD.KP
    """Nm/rad, the position gain the robot's servos run (predicts the torque of a target and
    scales the target lead); ``deploy`` and the launch files set those a policy was trained with."""
    servo_kd: NonNegative = QUAD.KV
    """Nm s/rad, the velocity gain the robot's servos run."""
    max_tilt: Annotated[Tilt, CEILING] = 1.0
    """rad (57 deg): beyond it the robot has fallen (latched)."""
    max_body_rate: Annotated[Positive, CEILING] = 10.0
    """rad/s: a faster body rotation counts as falling."""
    effort_guard_ratio: Annotated[float, Bounds(gt=0.0, le=1.0), CEILING] = 0.98
    """A joint torque above this share of its limit counts towards the effort guard."""
    effort_guard_samples: Annotated[PositiveInt, CEILING] = 50
    """Consecutive state samples above it that trip the effort guard."""
    stand_down_pose: list[float] = field(default_factory=lambda: _list(QUAD.CROUCH_POSE))
    """rad, the joint targets the stand-down ends in (a crouch)."""
    stand_down_seconds: Positive = 1.5
    """s, duration of the stand-down's move to that pose."""


@dataclass
class DroneSafetyParams(CommonParams):
    thrust_min: NonNegative = 0.0
    """N, smallest collective thrust command."""
    thrust_max: Annotated[float, Bounds(gt=0.0, le=DRONE.MAX_COLLECTIVE_THRUST), CEILING] = (
        0.9 * DRONE.MAX_COLLECTIVE_THRUST)
    """N, largest collective thrust command."""
    thrust_rate: Annotated[Positive, CEILING] = 6.0
    """N/s."""
    max_body_rate: Annotated[list[Positive], CEILING] = field(default_factory=lambda: _list(DRONE.MAX_BODY_RATE))
    """rad/s, roll, pitch and yaw rate command limits."""
    body_rate_accel: Annotated[Positive, CEILING] = 200.0
    """rad/s^2: rate limit of the body-rate commands."""
    max_tilt: Annotated[Tilt, CEILING] = 0.8
    """rad (46 deg): beyond it roll/pitch commands are replaced by levelling rates."""
    fence_low: Annotated[list[float], FLOOR] = field(default_factory=lambda: [-3.0, -3.0, -0.5])
    """m, lower corner (x, y, z, odometry frame) of the geofence."""
    fence_high: Annotated[list[float], CEILING] = field(default_factory=lambda: [3.0, 3.0, 2.5])
    """m, upper corner of the geofence."""
    fence_lookahead: Annotated[NonNegative, FLOOR] = 0.5
    """s: the position this far ahead at the current velocity must stay inside the fence."""
    hover_seconds: NonNegative = 2.0
    """s the fallback hovers before it lands."""
    land_speed: Annotated[float, Bounds(gt=0.0, le=2.0)] = 0.3
    """m/s, the fallback's descent speed with odometry."""


PARAMS: dict[str, type[CommonParams]] = {
    "arm": ArmSafetyParams,
    "ur5e": Ur5eSafetyParams,
    "quadruped": QuadrupedSafetyParams,
    "drone": DroneSafetyParams,
}


def params_from_dict(robot: str, values: dict[str, Any]) -> CommonParams:
    """The robot's parameter dataclass with ``values`` applied, through the strict
    loader (unknown keys, wrong types and values out of range raise ConfigError)."""
    params = from_dict(PARAMS[robot], values)
    assert isinstance(params, CommonParams)
    return params


TUNED_KP = QUAD.KP
"""Nm/rad: the servo stiffness ``target_horizon_periods`` was tuned for (our policies')."""


def target_lead(p: QuadrupedSafetyParams, dt: float) -> np.ndarray:
    """rad, per joint: how far a position target may lead the measured joint.

    The servo pulls with ``kp * lead``. The lead tuned at :data:`TUNED_KP`
    (``joint_max_velocity * target_horizon_periods`` periods) is scaled by
    ``TUNED_KP / servo_kp`` so the pull it allows stays the same whatever the stiffness: a
    policy trained on softer servos (legged_gym's kp 20) commands proportionally larger
    leads (about 1 rad) for the same motion, a stiffer one smaller. It never exceeds the
    lead at which the servo would reach the robot's torque limit (``max_effort / servo_kp``).
    """
    tuned = np.asarray(p.joint_max_velocity, float) * p.target_horizon_periods * dt
    return np.minimum(tuned * TUNED_KP / p.servo_kp, np.asarray(p.max_effort, float) / p.servo_kp)


def policy_safety_values(robot: str, task_options: dict[str, Any]) -> dict[str, Any]:
    """The safety parameters a policy's own settings decide: the servo gains it was trained
    with and the robot runs under it (an imported quadruped policy's ``servo_kp`` /
    ``servo_kd`` task options; the Go2 backend sends the same gains). Empty for policies
    trained on our robot's servos. The filter models one gain for all joints: for gains
    that differ per joint it takes the stiffest (the smallest leads; ``deploy check`` warns).

    Raises:
        ConfigError: gains that are not one number or one per joint, or not positive.
    """
    if robot != "quadruped":
        return {}
    out: dict[str, Any] = {}
    for option in ("servo_kp", "servo_kd"):
        if task_options.get(option) is None:
            continue
        gains = np.asarray(task_options[option], dtype=float).reshape(-1)
        if gains.size not in (1, QUAD.NUM_JOINTS) or not np.all(np.isfinite(gains)) or np.any(gains < 0):
            raise ConfigError(f"task_options.{option}", f"needs 1 or {QUAD.NUM_JOINTS} finite gains >= 0, "
                                                         f"got {task_options[option]!r}")
        out[option] = float(gains.max())
    return out


def make_chain(space: CommandSpace, params: CommonParams | None = None, sources: list[CommandSource] | None = None,
               estop: guards.EStop | None = None) -> SafetyChain:
    """The robot's filter chain (see docs/deployment.md, "Safety-filter reference").

    Args:
        sources: The command mux's inputs (default: the policy alone).
        estop: An e-stop to carry over (its latch survives the rebuild)."""
    p = params if params is not None else PARAMS[space.robot]()
    dt = space.control_dt
    watchdog = guards.Watchdog(
        guards.WatchdogParams(p.command_timeout_periods * dt, p.state_timeout_periods * dt, p.latch_watchdog)
    )
    builder = {"arm": _arm, "ur5e": _arm, "quadruped": _quadruped, "drone": _drone}[space.robot]
    g, lim, fb = builder(space, p, dt)
    return SafetyChain(space, watchdog, g, lim, fb, sources=sources, estop=estop)


def _arm(space: CommandSpace, p: ArmSafetyParams, dt: float):
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


def _quadruped(space: CommandSpace, p: QuadrupedSafetyParams, dt: float):
    g: list = [
        # Overspeed (and joints far beyond their range): a reading no servo can produce is a
        # fault, and the effort limit would otherwise trust it.
        guards.JointStateGuard(guards.JointStateGuardParams(
            p.joint_lower, p.joint_upper, p.joint_max_velocity, p.joint_position_margin, p.joint_velocity_ratio)),
        guards.AttitudeGuard(guards.AttitudeGuardParams(p.max_tilt, p.max_body_rate)),
        guards.EffortGuard(guards.EffortGuardParams(p.max_effort, p.effort_guard_ratio, p.effort_guard_samples)),
    ]
    n = space.size
    lim = [
        limits.RateLimit(limits.RateLimitParams(p.max_target_rate, None, p.rate_max_dt_periods * dt, "joint_pos"),
                         n, "rate_limit"),
        # The lead as a speed over the horizon: the limit bounds |target - q| by speed x horizon.
        limits.TargetVelocityLimit(limits.TargetVelocityLimitParams(
            _list(target_lead(p, dt) / (p.target_horizon_periods * dt)), p.target_horizon_periods * dt), n),
        limits.ServoEffortLimit(limits.ServoEffortLimitParams(p.max_effort, p.servo_kp, p.servo_kd), n),
        limits.BoxLimit(limits.BoxLimitParams(p.joint_lower, p.joint_upper, hold=p.stand_down_pose),
                        "joint_position_limit"),
    ]
    fb = fallback.StandDown(space, fallback.StandDownParams(p.stand_down_pose, p.stand_down_seconds))
    return g, lim, fb


def _drone(space: CommandSpace, p: DroneSafetyParams, dt: float):
    # The geofence validates the fence (two 3-vectors) before the fallback reads it.
    g: list = [guards.Geofence(guards.BoxGuardParams(p.fence_low, p.fence_high, p.fence_lookahead))]
    rates = np.asarray(p.max_body_rate, float)
    lim = [
        limits.RateLimit(
            limits.RateLimitParams(_list(np.r_[p.thrust_rate, np.full(3, p.body_rate_accel)]), None,
                                   p.rate_max_dt_periods * dt), space.size, "rate_limit"),
        aerial.TiltLimit(aerial.TiltLimitParams(p.max_tilt, max_age=p.state_timeout_periods * dt)),
        limits.BoxLimit(limits.BoxLimitParams(_list(np.r_[p.thrust_min, -rates]), _list(np.r_[p.thrust_max, rates]),
                                              hold=[0.0, 0.0, 0.0, 0.0]), "thrust_rate_limit"),
    ]
    fb = aerial.HoverThenLand(space, aerial.HoverThenLandParams(
        hover_seconds=p.hover_seconds, land_speed=p.land_speed, fence_low=_xyz(p.fence_low),
        fence_high=_xyz(p.fence_high), state_timeout=p.state_timeout_periods * dt))
    return g, lim, fb
