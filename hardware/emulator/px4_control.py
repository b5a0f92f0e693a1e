"""What PX4's controllers do with each mode, over the simulated drone.

OFFBOARD with ``SET_ATTITUDE_TARGET``: body rates (FRD, rad/s, turned into our FLU) and a
normalized collective thrust (0..1 of the rotors' full thrust) go to the simulator's own
body-rate PID and mixer (:class:`~sim2real.sim.drone.rate_control.BodyRateController`,
the ``ctbr`` path), as PX4's rate controller takes them. OFFBOARD with
``SET_POSITION_TARGET_LOCAL_NED`` with a position (optionally a velocity feedforward),
AUTO.LOITER,
POSCTL without sticks (hold where the mode began), AUTO.LAND (hold x, y; descend at
``MPC_LAND_SPEED``) and AUTO.RTL (back over home at its altitude, then land) go through the simulator's cascaded PID
(:class:`~sim2real.sim.drone.position_control.CascadedPID`) on the true state, standing
in for PX4's position and velocity loops; a velocity alone goes through the velocity loop
the simulated ``velocity`` action mode flies
(:class:`~sim2real.sim.drone.position_control.VelocityControl`), the heading held.
Disarmed, or landed outside OFFBOARD, or landed under a velocity that asks no climb (the
land detector): motors off.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sim2real.sim.core.frames import rotation
from sim2real.sim.drone import constants as C
from sim2real.sim.drone.airframe import CRAZYFLIE, Airframe
from sim2real.sim.drone.position_control import CascadedPID, VelocityControl, idles_on_ground
from sim2real.sim.drone.rate_control import BodyRateController

RTL_ARRIVED = 0.2
"""m from over home at which AUTO.RTL starts its landing (PX4's acceptance radius, roughly)."""
ATTITUDE_P = np.array([6.5, 6.5, 2.8])
"""1/s, attitude error -> body rate (PX4's ``MC_ROLL_P``, ``MC_PITCH_P``, ``MC_YAW_P`` defaults)."""


@dataclass(frozen=True)
class AttitudeTarget:
    """A decoded ``SET_ATTITUDE_TARGET``: body rates in our FLU (rad/s) and thrust 0..1, or
    an attitude (ours, FLU to ENU, w x y z) that the attitude loop turns into rates."""

    rates: np.ndarray
    thrust: float
    attitude: np.ndarray | None = None


def attitude_rates(quat: np.ndarray, target: np.ndarray) -> np.ndarray:
    """Body rates (FLU, rad/s) towards ``target`` from ``quat``: PX4's quaternion attitude
    controller without its yaw de-weighting (error q^-1 * q_sp, the shorter way round)."""
    w1, x1, y1, z1 = (float(v) for v in quat)
    w2, x2, y2, z2 = (float(v) for v in target)
    # conj(q) * q_sp
    w = w1 * w2 + x1 * x2 + y1 * y2 + z1 * z2
    v = np.array([w1 * x2 - x1 * w2 - y1 * z2 + z1 * y2,
                  w1 * y2 + x1 * z2 - y1 * w2 - z1 * x2,
                  w1 * z2 - x1 * y2 + y1 * x2 - z1 * w2])
    return 2.0 * (1.0 if w >= 0 else -1.0) * v * ATTITUDE_P


@dataclass(frozen=True)
class PositionTarget:
    """A decoded ``SET_POSITION_TARGET_LOCAL_NED``, in our world ENU (m, m/s): a position
    with a velocity feed-forward (zero when not given), or (position None) a velocity alone."""

    position: np.ndarray | None
    velocity: np.ndarray


Target = AttitudeTarget | PositionTarget


class Px4Control:
    """The rotor thrusts (N) for one tick of one mode."""

    def __init__(self, tick: float, airframe: Airframe = CRAZYFLIE, home: np.ndarray | None = None) -> None:
        self.rates = BodyRateController(1, tick, inertia=airframe.inertia, max_thrust=airframe.max_thrust,
                                        mixer=airframe.mixer)
        # The integrator only near a steady state (the simulator's default zone): a wider one
        # wound up on the landing's constant velocity offset and doubled its sink rate.
        self.position = CascadedPID(1, dt=tick, mass=airframe.mass,
                                    max_collective_thrust=airframe.max_collective_thrust)
        self.velocity = VelocityControl(1, tick, airframe.mass, airframe.max_collective_thrust)
        self.max_collective_thrust = airframe.max_collective_thrust
        self.home = np.zeros(3) if home is None else np.asarray(home, dtype=np.float64)
        """Where AUTO.RTL returns to (world ENU): where the vehicle booted."""
        self.hold: np.ndarray | None = None
        """Where the current hold or landing began (world ENU)."""
        self._over_home = False
        """AUTO.RTL has arrived over home: it lands there."""
        self._mode = ""

    def reset(self) -> None:
        self.rates.reset()
        self.position.reset()
        self.velocity.reset()

    def thrusts(self, mode: str, armed: bool, landed: bool, target: Target | None, land_speed: float,
                position: np.ndarray, velocity: np.ndarray, quat: np.ndarray, gyro: np.ndarray) -> np.ndarray:
        if mode != self._mode or self.hold is None:
            self._mode, self.hold = mode, np.array(position, dtype=np.float64)
            self._over_home = False
        if not armed or (landed and mode != "OFFBOARD"):
            self.reset()
            self.hold = np.array(position, dtype=np.float64)
            return np.zeros(4)
        gyro = np.asarray(gyro, dtype=np.float64)
        if mode == "OFFBOARD":
            if isinstance(target, AttitudeTarget):
                collective = float(np.clip(target.thrust, 0.0, 1.0)) * self.max_collective_thrust
                rates = target.rates if target.attitude is None else np.clip(  # PX4's MC_*RATE_MAX
                    attitude_rates(quat, target.attitude), -C.MAX_BODY_RATE, C.MAX_BODY_RATE)
                return self.rates(np.array([collective]), rates[None], gyro[None])[0]
            if isinstance(target, PositionTarget) and target.position is not None:
                return self._track(target.position, target.velocity, position, velocity, quat, gyro)
            if isinstance(target, PositionTarget):  # a velocity alone: PX4's velocity loop
                if idles_on_ground(landed, target.velocity[2]):  # its land detector: idle on the ground
                    self.reset()
                    return np.zeros(4)
                action = self.velocity.act(target.velocity[None], np.asarray(velocity)[None],
                                           rotation(quat)[None])[0]
                return self._fly(action, gyro)
            return np.zeros(4)
        if mode == "AUTO.RTL":  # back over home at the altitude it began at, then land there
            self._over_home |= bool(np.hypot(*(position[:2] - self.home[:2])) < RTL_ARRIVED)
            if not self._over_home:
                goal = np.array([self.home[0], self.home[1], self.hold[2]])
                return self._track(goal, np.zeros(3), position, velocity, quat, gyro)
            self.hold[:2] = self.home[:2]
        if mode in ("AUTO.LAND", "AUTO.RTL"):  # hold x, y; descend at land_speed (the velocity loop's setpoint)
            goal = np.array([self.hold[0], self.hold[1], position[2]])
            return self._track(goal, np.array([0.0, 0.0, -land_speed]), position, velocity, quat, gyro)
        # AUTO.LOITER, and the pilot's modes (POSCTL, ALTCTL, MANUAL) with the sticks centred:
        # hold where the mode began (the emulator has no sticks to move, nor a manual drift).
        return self._track(self.hold, np.zeros(3), position, velocity, quat, gyro)

    def _track(self, goal: np.ndarray, feedforward: np.ndarray, position: np.ndarray, velocity: np.ndarray,
               quat: np.ndarray, gyro: np.ndarray) -> np.ndarray:
        gains = self.position.gains
        error = np.asarray(goal) - position + np.asarray(feedforward) / gains.kp_pos
        obs = np.concatenate([error, velocity, rotation(quat).reshape(9), gyro, np.zeros(4)])
        return self._fly(self.position.act(obs), gyro)

    def _fly(self, action: np.ndarray, gyro: np.ndarray) -> np.ndarray:
        """Rotor thrusts for one ``ctbr`` action (in [-1, 1]) through the rate loop and mixer."""
        thrust = (action[0] + 1.0) / 2.0 * self.max_collective_thrust
        return self.rates(np.array([thrust]), (action[1:] * C.MAX_BODY_RATE)[None], gyro[None])[0]
