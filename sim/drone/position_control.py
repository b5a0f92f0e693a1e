"""Cascaded PID for the quadrotor: position -> velocity -> attitude -> body rates.

It reads the drone tasks' policy observation (``pos_error``, ``lin_vel``,
``rot_mat``, ``body_rates``) and answers in the ``ctbr`` action mode (collective
thrust and body-rate setpoints), which the task's inner body-rate PID tracks.
It is the baseline for ``DroneHover`` and follows the current waypoint of
``DroneWaypoints`` unchanged (the observation's position error always points at
the active target).

Loops (all vectorised over the batch, run at the policy rate):

    v_des  = sat(kp_pos * e_p, v_max)                     e_p = target - position
    a_des  = kp_vel (v_des - v) + ki_pos * integral(e_p)  (horizontal part limited by max tilt)
    F      = m (a_des + g z)                              desired thrust vector, world frame
    T      = F . b3                                       collective along the current body z
    R_des  = [b1_d, b3_d x b1_d, b3_d],  b3_d = F/|F|, heading from target_yaw (or held)
    e_R    = 1/2 vee(R_des^T R - R^T R_des)               (Lee et al., CDC 2010)
    w_cmd  = -k_att * e_R                                 body rates for the inner loop

:class:`VelocityControl` is the same from ``a_des`` down, its ``a_des`` a PI on the error
to a velocity setpoint (the ``velocity`` action mode, and the PX4 emulator's velocity
setpoints), with the same gains and an integrator on the velocity error.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from sim2real.sim.core.layout import layout_slices
from sim2real.sim.drone import constants as C

REQUIRED_BLOCKS = ("pos_error", "lin_vel", "rot_mat", "body_rates")
HOVER_LAYOUT: list[tuple[str, int]] = [
    ("pos_error", 3), ("lin_vel", 3), ("rot_mat", 9), ("body_rates", 3), ("last_action", 4),
]
"""Observation layout of ``DroneHover`` (the default)."""


@dataclass
class CascadedPIDGains:
    """Gains of the outer loops (the body-rate loop lives in the task)."""

    kp_pos: np.ndarray = field(default_factory=lambda: np.array([1.6, 1.6, 2.0]))
    """1/s, position error to velocity setpoint."""
    ki_pos: np.ndarray = field(default_factory=lambda: np.array([3.0, 3.0, 6.0]))
    """1/s^3, integrated position error to acceleration (mass and thrust errors, wind). With
    kp_pos and kp_vel the slowest closed-loop pole sits near -0.8 (xy) and -1 (z) rad/s."""
    kp_vel: np.ndarray = field(default_factory=lambda: np.array([4.0, 4.0, 5.0]))
    """1/s, velocity error to acceleration."""
    k_att: np.ndarray = field(default_factory=lambda: np.array([8.0, 8.0, 3.0]))
    """1/s, attitude error to body-rate command (roll, pitch, yaw)."""
    max_speed: tuple[float, float] = (1.5, 1.0)
    """m/s, horizontal and vertical speed limits of the velocity setpoint."""
    max_tilt: float = np.deg2rad(35.0)
    """rad, largest tilt the horizontal acceleration may ask for."""
    integral_zone: tuple[float, float] = (0.5, 0.25)
    """(m, m/s): the integrator only runs while the distance to the target and the speed
    are both below these, i.e. near a steady state, so approaches and take-offs do not
    wind it up."""
    max_integral_accel: float = 4.0
    """m/s^2, clamp on the integrator's acceleration (anti-windup)."""


class CascadedPID:
    """Batched cascaded PID producing ``ctbr`` actions.

    Args:
        num_envs: Batch size ``B``.
        observation_layout: The task's ``observation_layout()``; defaults to the
            hover layout. Must contain the blocks in :data:`REQUIRED_BLOCKS`.
        gains: Outer-loop gains.
        dt: Period of :meth:`act` in seconds (the task's ``control_dt``).
        mass: Mass the thrust feedforward assumes (the integrator absorbs errors); one
            value, or one per environment.
        target_yaw: Heading to hold in rad; ``None`` keeps the current heading.
        max_collective_thrust: N at collective action +1 (the airframe's four rotors at full).
    """

    def __init__(
        self,
        num_envs: int = 1,
        observation_layout: list[tuple[str, int]] | None = None,
        gains: CascadedPIDGains | None = None,
        dt: float = C.CONTROL_DT,
        mass: float | np.ndarray = C.MASS,
        target_yaw: float | None = 0.0,
        max_collective_thrust: float = C.MAX_COLLECTIVE_THRUST,
    ) -> None:
        self.max_collective_thrust = max_collective_thrust
        layout = observation_layout or HOVER_LAYOUT
        offsets = layout_slices(layout)
        missing = [b for b in REQUIRED_BLOCKS if b not in offsets]
        if missing:
            raise ValueError(f"observation_layout lacks {missing}; CascadedPID needs {list(REQUIRED_BLOCKS)}")
        self._slices = offsets
        self.obs_size = sum(size for _, size in layout)
        self.num_envs = num_envs
        self.gains = gains or CascadedPIDGains()
        self.dt = dt
        self.mass = np.broadcast_to(np.asarray(mass, dtype=np.float64), (num_envs,)).copy()
        self.target_yaw = target_yaw
        self.integral = np.zeros((num_envs, 3))

    def reset(self, env_ids: np.ndarray | list[int] | int | None = None) -> None:
        """Clear the position integrator of the given envs (default: all)."""
        self.integral[slice(None) if env_ids is None else env_ids] = 0.0

    def act(self, obs: np.ndarray) -> np.ndarray:
        """``ctbr`` actions ``[B, 4]`` in ``[-1, 1]`` from observations ``[B, O]`` (or ``[O]`` -> ``[4]``)."""
        obs = np.asarray(obs, dtype=np.float64)
        single = obs.ndim == 1
        if single:
            obs = obs[None]
        if obs.shape != (self.num_envs, self.obs_size):
            raise ValueError(f"obs has shape {obs.shape}, expected ({self.num_envs}, {self.obs_size})")
        g = self.gains
        s = self._slices
        e_p, vel = obs[:, s["pos_error"]], obs[:, s["lin_vel"]]
        rot = obs[:, s["rot_mat"]].reshape(-1, 3, 3)

        v_des = position_loop(e_p, g.kp_pos, g.max_speed)
        near = (np.linalg.norm(e_p, axis=1) < g.integral_zone[0]) & (np.linalg.norm(vel, axis=1) < g.integral_zone[1])
        limit = g.max_integral_accel / g.ki_pos
        self.integral = np.clip(self.integral + np.where(near[:, None], e_p, 0.0) * self.dt, -limit, limit)
        acc = g.kp_vel * (v_des - vel) + g.ki_pos * self.integral
        action = attitude_command(acc, rot, self.mass, self.target_yaw, g, self.max_collective_thrust)
        return action[0] if single else action


@dataclass
class VelocityGains:
    """Gains of the velocity loop: the cascaded PID's velocity and attitude gains
    (:class:`CascadedPIDGains`), with an integrator on the velocity error in place of
    the position integrator (as PX4's ``MPC_*_VEL_I_ACC``). PX4's own defaults
    (``MPC_XY_VEL_P_ACC`` 1.8) are tuned for its smoothed setpoints: under a stepped
    setpoint they settled a waypoint in 2-4 s where these take about 1 s."""

    kp_vel: np.ndarray = field(default_factory=lambda: np.array([4.0, 4.0, 5.0]))
    """1/s, velocity error to acceleration."""
    ki_vel: np.ndarray = field(default_factory=lambda: np.array([1.0, 1.0, 2.0]))
    """1/s^2, integrated velocity error to acceleration (mass and thrust errors, wind)."""
    k_att: np.ndarray = field(default_factory=lambda: np.array([8.0, 8.0, 3.0]))
    """1/s, attitude error to body-rate command (roll, pitch, yaw)."""
    max_tilt: float = np.deg2rad(35.0)
    """rad, largest tilt the horizontal acceleration may ask for."""
    max_integral_accel: float = 3.0
    """m/s^2, clamp on the integrator's acceleration (anti-windup)."""


class VelocityControl:
    """Batched velocity loop producing ``ctbr`` actions: a PI on the world-frame velocity
    error, then the thrust vector and the attitude as in the position loop
    (:func:`attitude_command`), the heading held where it is. What a flight controller
    runs under a velocity setpoint (PX4's offboard ``SET_POSITION_TARGET_LOCAL_NED``
    with the position ignored); the drone tasks' ``velocity`` action mode and the PX4
    emulator both fly it.

    Args:
        num_envs: Batch size ``B``.
        dt: Period of :meth:`act` in seconds.
        mass: Mass the thrust feedforward assumes (the integrator absorbs errors).
        max_collective_thrust: N at collective action +1.
    """

    def __init__(self, num_envs: int, dt: float, mass: float | np.ndarray, max_collective_thrust: float,
                 gains: VelocityGains | None = None) -> None:
        self.gains = gains or VelocityGains()
        self.dt = dt
        self.mass = np.broadcast_to(np.asarray(mass, dtype=np.float64), (num_envs,)).copy()
        self.max_collective_thrust = max_collective_thrust
        self.integral = np.zeros((num_envs, 3))

    def reset(self, env_ids: np.ndarray | list[int] | int | None = None) -> None:
        """Clear the velocity integrator of the given envs (default: all)."""
        self.integral[slice(None) if env_ids is None else env_ids] = 0.0

    def act(self, velocity_setpoint: np.ndarray, velocity: np.ndarray, rot: np.ndarray) -> np.ndarray:
        """``ctbr`` actions ``[B, 4]`` from setpoints and velocities ``[B, 3]`` (m/s, world)
        and attitudes ``[B, 3, 3]`` (body to world)."""
        g = self.gains
        error = np.asarray(velocity_setpoint, dtype=np.float64) - velocity
        limit = g.max_integral_accel / g.ki_vel
        self.integral = np.clip(self.integral + error * self.dt, -limit, limit)
        acc = g.kp_vel * error + g.ki_vel * self.integral
        return attitude_command(acc, rot, self.mass, None, g, self.max_collective_thrust)


def position_loop(error: np.ndarray, kp: np.ndarray | float, max_speed: tuple[float, float]) -> np.ndarray:
    """Velocity setpoints ``[B, 3]`` toward the targets: ``kp`` times the position errors
    ``[B, 3]``, the horizontal norm capped at ``max_speed[0]`` and the vertical part at
    ``max_speed[1]`` (m/s). The cascaded PID's outer loop, and on its own the ``velocity``
    mode's classical policy."""
    v_des = kp * np.asarray(error, dtype=np.float64)
    v_des[:, :2] = _limit_norm(v_des[:, :2], max_speed[0])
    v_des[:, 2] = np.clip(v_des[:, 2], -max_speed[1], max_speed[1])
    return v_des


TAKEOFF_SPEED: float = 0.1
"""m/s: a velocity setpoint asking less climb than this leaves a landed vehicle's motors idle."""
LANDED_SPEED: float = 0.3
"""m/s: a vehicle at the ground slower than this counts as landed."""


def is_landed(clearance: np.ndarray | float, velocity: np.ndarray) -> np.ndarray:
    """PX4's land detector, one rule for the simulated drone and the PX4 emulator: the
    hull's lowest point ``clearance`` (m, :meth:`Airframe.clearance`) within
    ``GROUND_BAND`` of the ground it rests on, and slower than :data:`LANDED_SPEED`.
    By height, not by contact: a touchdown bounces the hull off its pad for a physics
    step or two, and its motors must not restart for each bounce."""
    speed = np.linalg.norm(np.asarray(velocity, dtype=np.float64), axis=-1)
    return (np.asarray(clearance, dtype=np.float64) < C.GROUND_BAND) & (speed < LANDED_SPEED)


def idles_on_ground(landed: np.ndarray | bool, climb: np.ndarray | float) -> np.ndarray:
    """PX4's land detector under a velocity setpoint, one rule for the simulated
    ``velocity`` mode and the PX4 emulator: a vehicle that is landed and asked to climb
    slower than :data:`TAKEOFF_SPEED` (m/s, up) idles its motors."""
    return np.asarray(landed, dtype=bool) & (np.asarray(climb, dtype=np.float64) < TAKEOFF_SPEED)


def attitude_command(acc: np.ndarray, rot: np.ndarray, mass: np.ndarray, target_yaw: float | None,
                     gains: CascadedPIDGains | VelocityGains, max_collective_thrust: float) -> np.ndarray:
    """``ctbr`` actions ``[B, 4]`` in ``[-1, 1]`` that give the world-frame accelerations
    ``acc`` ``[B, 3]`` (gravity not included) from attitudes ``rot`` ``[B, 3, 3]``: the
    thrust vector, tilted at most ``gains.max_tilt`` and never below a fifth of hover,
    and the body rates toward it (Lee et al., CDC 2010), the heading at ``target_yaw``
    (``None``: held where it is). Shared by the position and the velocity loop."""
    acc = np.array(acc, dtype=np.float64)
    acc[:, 2] = np.maximum(acc[:, 2], -0.8 * C.GRAVITY)  # never ask for less than a fifth of hover thrust
    acc[:, :2] = _limit_norm(acc[:, :2], np.tan(gains.max_tilt) * (acc[:, 2] + C.GRAVITY))
    force = mass[:, None] * (acc + np.array([0.0, 0.0, C.GRAVITY]))

    b3 = rot[:, :, 2]
    collective = np.maximum(np.einsum("bi,bi->b", force, b3), 0.0)
    b3_des = force / np.linalg.norm(force, axis=1, keepdims=True)
    yaw = np.arctan2(rot[:, 1, 0], rot[:, 0, 0]) if target_yaw is None else np.full(len(acc), target_yaw)
    b1_heading = np.stack([np.cos(yaw), np.sin(yaw), np.zeros_like(yaw)], axis=1)
    b2_des = np.cross(b3_des, b1_heading)
    b2_des /= np.linalg.norm(b2_des, axis=1, keepdims=True)
    rot_des = np.stack([np.cross(b2_des, b3_des), b2_des, b3_des], axis=2)

    err = np.einsum("bji,bjk->bik", rot_des, rot)  # R_des^T R
    skew = err - np.swapaxes(err, 1, 2)
    e_rot = 0.5 * np.stack([skew[:, 2, 1], skew[:, 0, 2], skew[:, 1, 0]], axis=1)
    rates = np.clip(-gains.k_att * e_rot, -C.MAX_BODY_RATE, C.MAX_BODY_RATE)
    action = np.column_stack([2.0 * collective / max_collective_thrust - 1.0, rates / C.MAX_BODY_RATE])
    return np.clip(action, -1.0, 1.0)


def _limit_norm(v: np.ndarray, limit: np.ndarray | float) -> np.ndarray:
    norm = np.linalg.norm(v, axis=1, keepdims=True)
    limit = np.reshape(limit, (-1, 1)) if np.ndim(limit) else limit
    return v * np.minimum(1.0, limit / np.maximum(norm, 1e-9))
