"""The drones' safety parameters and chain (thrust and body-rate limits under a
geofence; the fallback hovers, then lands): the Crazyflie's, and the X500's with its own
thrust. The chain flies the robot's airframe (:attr:`DroneDeployment.airframe`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated

import numpy as np

from sim2real.policies.safety import aerial, guards, limits
from sim2real.policies.safety.presets.common import CommonParams, Preset, Tilt, _list, _xyz
from sim2real.policies.safety.spaces import CommandSpace
from sim2real.policies.safety.tightening import CEILING, FLOOR
from sim2real.sim import robot_deployment
from sim2real.sim.core.schema import Bounds, NonNegative, Positive
from sim2real.sim.drone import constants as DRONE
from sim2real.sim.drone.airframe import CRAZYFLIE, X500, Airframe
from sim2real.sim.drone.deployment import DroneDeployment


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
    max_speed: Annotated[list[Positive], CEILING] = field(default_factory=lambda: _list(CRAZYFLIE.speed_scale))
    """m/s, x, y and z speed limits of ``velocity`` commands (the command space's range)."""
    max_accel: Annotated[Positive, CEILING] = 4.0
    """m/s^2: how fast a ``velocity`` command may change."""
    fence_brake_s: Annotated[Positive, FLOOR] = 1.0
    """s: a ``velocity`` command may carry the drone no closer to the fence (less its
    0.3 m margin) than this many seconds at that velocity; it slows to a stop at the
    margin, so the geofence guard's look-ahead does not trip."""


@dataclass
class X500SafetyParams(DroneSafetyParams):
    """The drone's filter with the X500's thrust (:mod:`sim2real.sim.drone.x500`), the
    thrust slew scaled by its hover thrust, and PX4's default rate limits."""

    thrust_max: Annotated[float, Bounds(gt=0.0, le=X500.max_collective_thrust), CEILING] = (
        round(0.9 * X500.max_collective_thrust, 3))
    """N, largest collective thrust command (90 % of the four rotors at full)."""
    thrust_rate: Annotated[Positive, CEILING] = round(6.0 * X500.hover_thrust / CRAZYFLIE.hover_thrust, -1)
    """N/s: the Crazyflie's 6 N/s relative to its hover thrust (0 to hover in 44 ms)."""
    max_body_rate: Annotated[list[Positive], CEILING] = field(default_factory=lambda: [3.8, 3.8, 3.0])
    """rad/s: PX4's ``MC_ROLLRATE_MAX`` and ``MC_PITCHRATE_MAX`` (220 deg/s), the yaw at the
    command space's 3 rad/s (PX4's ``MC_YAWRATE_MAX`` is 200 deg/s)."""
    max_speed: Annotated[list[Positive], CEILING] = field(default_factory=lambda: [2.0, 2.0, 1.0])
    """m/s, x, y and z speed limits of ``velocity`` commands (within its command space's 3 and
    1.5 m/s, and PX4's ``MPC_Z_VEL_MAX_DN`` 1.5)."""


def build(space: CommandSpace, p: DroneSafetyParams, dt: float):
    # The geofence validates the fence (two 3-vectors) before the fallback reads it.
    g: list = [guards.Geofence(guards.BoxGuardParams(p.fence_low, p.fence_high, p.fence_lookahead))]
    landing = aerial.HoverThenLandParams(
        hover_seconds=p.hover_seconds, land_speed=p.land_speed, fence_low=_xyz(p.fence_low),
        fence_high=_xyz(p.fence_high), state_timeout=p.state_timeout_periods * dt,
        blind=aerial.BlindDescentParams(thrust_max=p.thrust_max))
    if space.action_mode == "velocity":
        return g, velocity_limits(space, p, dt), aerial.VelocityHoverThenLand(space, landing)
    rates = np.asarray(p.max_body_rate, float)
    lim = [
        limits.RateLimit(
            limits.RateLimitParams(_list(np.r_[p.thrust_rate, np.full(3, p.body_rate_accel)]), None,
                                   p.rate_max_dt_periods * dt), space.size, "rate_limit"),
        aerial.TiltLimit(aerial.TiltLimitParams(p.max_tilt, max_age=p.state_timeout_periods * dt)),
        limits.BoxLimit(limits.BoxLimitParams(_list(np.r_[p.thrust_min, -rates]), _list(np.r_[p.thrust_max, rates]),
                                              hold=[0.0, 0.0, 0.0, 0.0]), "thrust_rate_limit"),
    ]
    return g, lim, aerial.HoverThenLand(space, landing, _airframe(space.robot))


def velocity_limits(space: CommandSpace, p: DroneSafetyParams, dt: float) -> list:
    """``velocity``: the acceleration, the fence ahead (0.3 m inside it, reached no faster
    than in ``fence_brake_s``), then the speed box. No tilt limit: the vehicle's own
    controller flies the velocity within its own tilt (PX4's ``MPC_TILTMAX_AIR``)."""
    margin = aerial.FENCE_MARGIN
    return [
        limits.RateLimit(limits.RateLimitParams(p.max_accel, None, p.rate_max_dt_periods * dt), space.size,
                         "rate_limit"),
        limits.WorkspaceBox(limits.WorkspaceBoxParams(
            _list(np.asarray(p.fence_low) + margin), _list(np.asarray(p.fence_high) - margin), p.fence_brake_s,
            p.state_timeout_periods * dt, fields=("base_pos",)), space.size, "fence_ahead"),
        limits.BoxLimit(limits.BoxLimitParams(_list(-np.asarray(p.max_speed)), _list(p.max_speed),
                                              hold=[0.0, 0.0, 0.0]), "speed_limit"),
    ]


def _airframe(robot: str) -> Airframe:
    deployment = robot_deployment(robot)
    return deployment.airframe if isinstance(deployment, DroneDeployment) else CRAZYFLIE


DRONE_PRESET = Preset(DroneSafetyParams, build)
X500_PRESET = Preset(X500SafetyParams, build)
