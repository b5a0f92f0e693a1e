"""Drone-specific safety: the tilt limit on body-rate commands and the hover-then-land
safe action, in each of the drone's command spaces.

Commands are ``[thrust (N), roll rate, pitch rate, yaw rate (rad/s)]`` (``ctbr``) or
``[vx, vy, vz]`` (m/s, world ENU; ``velocity``, which the vehicle's own controller flies).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from sim2real.policies.safety.base import FilterParams, SafetyFilter
from sim2real.policies.safety.blind_descent import BlindDescent, BlindDescentParams, levelling_rates
from sim2real.policies.safety.fallback import Fallback
from sim2real.policies.safety.guards import tilt_angle
from sim2real.policies.safety.spaces import CommandSpace
from sim2real.policies.safety.thrust_model import ThrustGain
from sim2real.policies.safety.types import FilterReport, SafetyState, compare
from sim2real.sim.core.frames import rotation
from sim2real.sim.drone.airframe import CRAZYFLIE, Airframe


@dataclass
class TiltLimitParams(FilterParams):
    max_tilt: float
    """Tilt (rad) beyond which roll/pitch rate commands are replaced by levelling rates."""
    level_gain: float = 4.0
    """Levelling rate per unit of horizontal body-z component (rad/s)."""
    max_age: float = float("inf")
    """An attitude older than this (s) is not used: levelling a drone by an attitude it
    no longer has would turn it on and on."""

    def validate(self) -> None:
        if not 0 < self.max_tilt < np.pi / 2 or self.level_gain <= 0 or not self.max_age > 0:
            raise ValueError("max_tilt must be in (0, pi/2), level_gain and max_age > 0")


class TiltLimit(SafetyFilter):
    """Beyond ``max_tilt`` the roll and pitch rates become ``(-k R21, k R20)``, which make
    ``d(R22)/dt = R20 wy - R21 wx >= 0``: the body z axis turns toward world up (under
    rate tracking). Yaw rate and thrust pass. Without a fresh attitude it levels nothing
    and trips (fails closed): the safe action then flies on its own attitude estimate."""

    kind = "limit"
    name = "tilt_limit"

    def __init__(self, params: TiltLimitParams) -> None:
        params.validate()
        self.params = params

    def filter(self, command: np.ndarray, state: SafetyState) -> tuple[np.ndarray, FilterReport]:
        out = np.array(command, dtype=np.float64)
        quat = state.value("base_quat")
        if quat is None or np.linalg.norm(quat) < 1e-6:
            return out, FilterReport(self.name, tripped=True, reason="no attitude")
        if not state.fresh("base_quat", self.params.max_age):
            return out, FilterReport(self.name, tripped=True, reason=f"attitude stale ({state.age('base_quat'):.3f} s)")
        if tilt_angle(quat) <= self.params.max_tilt:
            return out, FilterReport(self.name)
        out[1], out[2] = levelling_rates(rotation(quat), self.params.level_gain)
        return out, compare(self.name, command[1:3], out[1:3], "tilted beyond the limit: levelling")


@dataclass
class HoverThenLandParams:
    hover_seconds: float = 2.0
    """Hold the position where the fallback engaged for this long, then land."""
    land_speed: float = 0.3
    """Descent rate of the landing setpoint (m/s)."""
    landed_clearance: float = 0.03
    """Below this height (m) above the airframe's resting height, while landing, the motors stop."""
    fence_low: tuple[float, float, float] = (-3.0, -3.0, 0.0)
    fence_high: tuple[float, float, float] = (3.0, 3.0, 2.5)
    """The hover point is pulled 0.3 m inside this box."""
    state_timeout: float = 0.04
    """Older odometry (s) counts as lost (blind descent); older attitude is dead-reckoned."""
    blind: BlindDescentParams = field(default_factory=BlindDescentParams)
    """The descent without odometry."""


class HoverThenLand(Fallback):
    """Hover at the (fenced) engage position, then descend and cut the motors on the
    ground, with the cascaded PID of :mod:`sim2real.policies.classical.drone`. Without
    fresh odometry it flies a :class:`~sim2real.policies.safety.blind_descent.BlindDescent`
    from the last known state: levelled, at a controlled speed, motors off only when the
    drone must be down. Odometry that comes back ends the blind descent: the drone lands
    from where it is then. ``airframe``: the vehicle (its mass, thrust, motor lag and
    resting height), the robot's own (``DroneDeployment.airframe``)."""

    def __init__(self, space: CommandSpace, params: HoverThenLandParams, airframe: Airframe = CRAZYFLIE) -> None:
        from sim2real.policies.classical.drone import CascadedPID

        super().__init__(space)
        self.params = params
        self.airframe = airframe
        self.landed_height = airframe.rest_height + params.landed_clearance
        params.blind.validate()
        self.pid = CascadedPID(num_envs=1, dt=space.control_dt, mass=airframe.mass,
                               max_collective_thrust=airframe.max_collective_thrust)
        self.hold: np.ndarray | None = None
        self.landed = False
        self.blind: BlindDescent | None = None
        self.thrust_gain = ThrustGain(airframe=airframe)
        self._last: tuple[float, np.ndarray] | None = None

    def observe_output(self, command: np.ndarray, state: SafetyState) -> None:
        self.thrust_gain.update(state, float(command[0]), self.params.state_timeout)

    def engage(self, state: SafetyState, last_output: np.ndarray | None) -> None:
        super().engage(state, last_output)
        self.blind = None
        self._hold_at(state)
        # Resting on the ground (e.g. no command yet): stay there with the motors off.
        pos, vel = state.value("base_pos"), state.value("base_lin_vel")
        self.landed = bool(pos is not None and vel is not None and pos[2] < self.landed_height
                           and np.linalg.norm(vel) < 0.2)
        self.pid.reset()
        self._last = None

    def _hold_at(self, state: SafetyState) -> None:
        self.hold = fenced_hold(state, self.params)

    def target(self, now: float) -> np.ndarray:
        assert self.hold is not None
        t = now - self.engaged_at - self.params.hover_seconds
        z = self.hold[2] if t <= 0 else max(self.airframe.rest_height, self.hold[2] - self.params.land_speed * t)
        return np.array([self.hold[0], self.hold[1], z])

    def command(self, state: SafetyState, causes: list[str], last_output: np.ndarray | None) -> np.ndarray:
        # The PID and the dead reckoning integrate per call: compute once per control period.
        if self._last is not None and state.now - self._last[0] < 0.999 * self.space.control_dt:
            return self._last[1].copy()
        out = self._compute(state, last_output)
        self._last = (state.now, out)
        return out.copy()

    def _compute(self, state: SafetyState, last_output: np.ndarray | None) -> np.ndarray:
        p = self.params
        if self.landed:
            return np.zeros(4)
        timeout = p.state_timeout
        base_pos, lin_vel, quat, ang_vel = (
            state.fresh_value(f, timeout) for f in ("base_pos", "base_lin_vel", "base_quat", "base_ang_vel"))
        if base_pos is None or lin_vel is None or quat is None or ang_vel is None or self.hold is None:
            if self.blind is None:
                self.blind = BlindDescent(p.blind, state, last_output, timeout, self.thrust_gain.band(), self.airframe)
            out = self.blind.step(state, last_output)
            self.landed = self.blind.motors_off  # down: odometry coming back must not restart the motors
            return out
        if self.blind is not None:  # odometry is back: land from here, now
            self.blind = None
            self._hold_at(state)
            self.engaged_at = state.now - p.hover_seconds
            self.hold[2] = min(self.hold[2], float(base_pos[2]))
            self.pid.reset()
        pos = np.asarray(base_pos, float)
        landing = state.now - self.engaged_at > p.hover_seconds
        if landing and pos[2] < self.landed_height and abs(float(lin_vel[2])) < 0.5:
            self.landed = True
            return np.zeros(4)
        obs = np.concatenate(
            [self.target(state.now) - pos, lin_vel, rotation(quat).reshape(9), ang_vel, np.zeros(4)]
        )
        return self.space.action_to_command(self.pid.act(obs))


FENCE_MARGIN = 0.3
"""m inside the geofence where the fallback hovers and a velocity command may bring the drone."""


def fenced_hold(state: SafetyState, params: HoverThenLandParams) -> np.ndarray | None:
    """Where the fallback hovers: the measured position pulled :data:`FENCE_MARGIN` inside
    the fence (``None`` without a position)."""
    pos = state.value("base_pos")
    if pos is None:
        return None
    lo, hi = np.asarray(params.fence_low) + FENCE_MARGIN, np.asarray(params.fence_high) - FENCE_MARGIN
    return np.clip(np.asarray(pos, float), lo, hi)


class VelocityHoverThenLand(Fallback):
    """Hover, then land, in the ``velocity`` space: with fresh odometry, a velocity back
    to the (fenced) engage point (``gain`` times the error, at most ``max_speed``) for
    ``hover_seconds``, then the same horizontally and ``land_speed`` down. Without it,
    zero velocity, then ``land_speed`` down: the vehicle flies a velocity on its own
    estimate (PX4's EKF), so a lost odometry stream on the host costs no levelling of
    its own, unlike :class:`HoverThenLand`. The command stays ``land_speed`` down after
    touchdown: the vehicle's land detector idles its motors (PX4 disarms after
    ``COM_DISARM_LAND``)."""

    def __init__(self, space: CommandSpace, params: HoverThenLandParams, gain: float = 1.0,
                 max_speed: float = 0.5) -> None:
        super().__init__(space)
        self.params = params
        self.gain = gain
        self.max_speed = max_speed
        self.hold: np.ndarray | None = None

    def engage(self, state: SafetyState, last_output: np.ndarray | None) -> None:
        super().engage(state, last_output)
        self.hold = fenced_hold(state, self.params)

    def command(self, state: SafetyState, causes: list[str], last_output: np.ndarray | None) -> np.ndarray:
        landing = state.now - self.engaged_at > self.params.hover_seconds
        pos = state.fresh_value("base_pos", self.params.state_timeout)
        out = np.zeros(3)
        if pos is not None:
            if self.hold is None:  # engaged blind: hover where the odometry came back
                self.hold = fenced_hold(state, self.params)
            assert self.hold is not None
            out = np.clip(self.gain * (self.hold - np.asarray(pos, float)), -self.max_speed, self.max_speed)
        if landing:
            out[2] = -self.params.land_speed
        return out
