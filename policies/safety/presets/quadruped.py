"""The quadruped's safety parameters and chain (joint-target filters sized by the servo
gains the policy runs under)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Any

import numpy as np

from sim2real.policies.safety import fallback, guards, limits
from sim2real.policies.safety.presets.common import CommonParams, Periods, Preset, Tilt, _list
from sim2real.policies.safety.spaces import CommandSpace
from sim2real.policies.safety.tightening import CEILING, FLOOR
from sim2real.sim.core.errors import ConfigError
from sim2real.sim.core.schema import Bounds, NonNegative, Positive, PositiveInt
from sim2real.sim.quadruped import constants as QUAD


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


def policy_values(task_options: dict[str, Any]) -> dict[str, Any]:
    """The safety parameters a policy's own settings decide: the servo gains it was trained
    with and the robot runs under it (an imported quadruped policy's ``servo_kp`` /
    ``servo_kd`` task options; the Go2 backend sends the same gains). Empty for policies
    trained on our robot's servos. The filter models one gain for all joints: for gains
    that differ per joint it takes the stiffest (the smallest leads; ``deploy check`` warns).

    Raises:
        ConfigError: gains that are not one number or one per joint, or not positive.
    """
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


def build(space: CommandSpace, p: QuadrupedSafetyParams, dt: float):
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


QUADRUPED = Preset(QuadrupedSafetyParams, build, policy_values)
