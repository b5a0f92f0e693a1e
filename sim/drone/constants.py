"""Physical constants of the Crazyflie-2.x-scale quadrotor, with sources.

Frames: body x forward, y left, z up (FLU); world z up. Rotors are numbered as on
the Crazyflie, clockwise seen from above starting front-right:

    M4 (front-left)  M1 (front-right)          x
              \\      /                          ^
               [body]                           |
              /      \\                    y <---+
    M3 (back-left)   M2 (back-right)

Diagonal pairs counter-rotate: M1 and M3 spin counter-clockwise seen from above,
M2 and M4 clockwise. A counter-clockwise rotor's drag torque turns the body
clockwise, i.e. its reaction torque about body +z is ``-k_yaw * thrust``.

Sources
-------
[F15] J. Förster, "System Identification of the Crazyflie 2.0 Nano Quadrocopter",
      BSc thesis, ETH Zurich, 2015: inertia (Ixx 1.657e-5, Iyy 1.666e-5,
      Izz 2.926e-5 kg m^2), thrust/torque maps (torque-to-thrust ratio ~0.006 m,
      max thrust ~0.15-0.16 N per motor), rotor-speed-proportional drag
      (K_xy 9.18e-7, K_z 10.31e-7 N s/m per rad/s of summed rotor speed).
[BC]  Bitcraze Crazyflie 2.1 datasheet: 27 g take-off weight, 92 mm
      motor-to-motor diagonal (46 mm arm), 45 mm propellers, 29 mm height.
[MEN] MuJoCo Menagerie ``bitcraze_crazyflie_2``: 27 g, hover thrust 0.265 N,
      yaw-torque gear 0.006 (numbers only; the model here is our own).
[L15] B. Landry, "Planning and Control for Quadrotor Flight through Cluttered
      Environments", MSc thesis, MIT, 2015: Ixx = Iyy ~1.4e-5, Izz ~2.2e-5;
      motor time constant tens of ms.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

MODEL_XML: Path = Path(__file__).with_name("drone.xml")
"""The robot and its arena (floor, landing pad, cameras); tasks add mocap bodies."""

GRAVITY: float = 9.81
"""m/s^2, MuJoCo's default ``opt.gravity`` magnitude."""

# -- mass properties ---------------------------------------------------------------
MASS: float = 0.027
"""kg, take-off mass with battery [BC], [MEN]."""
INERTIA: tuple[float, float, float] = (1.657e-5, 1.666e-5, 2.926e-5)
"""kg m^2, principal moments about the centre of mass [F15] (off-diagonals, <1e-6, dropped)."""

# -- geometry ------------------------------------------------------------------------
ARM_LENGTH: float = 0.046
"""m, centre to motor axis [BC] (92 mm diagonal / 2)."""
ROTOR_OFFSET: float = ARM_LENGTH / np.sqrt(2.0)
"""m, x and y offset of each motor in the X configuration."""
PROP_RADIUS: float = 0.0225
"""m, 45 mm propellers [BC]."""
ROTOR_XY: np.ndarray = ROTOR_OFFSET * np.array([[1.0, -1.0], [-1.0, -1.0], [-1.0, 1.0], [1.0, 1.0]])
"""Motor positions M1..M4 in the body frame (x, y), metres."""
ROTOR_SPIN: np.ndarray = np.array([1.0, -1.0, 1.0, -1.0])
"""+1: counter-clockwise seen from above (M1, M3); -1: clockwise (M2, M4)."""
COLLISION_HALF_SIZE: tuple[float, float, float] = (0.055, 0.055, 0.012)
"""m, half sizes of the one collision box: rotor discs and legs included."""

# -- rotors ----------------------------------------------------------------------------
MAX_THRUST: float = 0.15
"""N per rotor at full command [F15]; 4 x 0.15 N / (0.027 kg g) = 2.27 thrust-to-weight."""
YAW_TORQUE_RATIO: float = 0.006
"""m, reaction torque per newton of thrust [F15], [MEN]."""
MOTOR_TIME_CONSTANT: float = 0.04
"""s, first-order lag from command to thrust (middle of the 30-50 ms reported in [L15], [F15])."""
HOVER_THRUST: float = MASS * GRAVITY
"""N, total thrust that balances gravity (0.265 N [MEN])."""
HOVER_THRUST_BAND: tuple[float, float] = (0.85, 1.35)
"""The thrust a real drone of this description may need to hover, relative to
:data:`HOVER_THRUST`: from a lighter build or weaker drag (-15 %) to about 9 g of payload
or a sagging battery (+35 %; the Crazyflie 2.1 lifts up to 15 g, which needs its own
band). What a fallback that has not yet learned the thrust in flight must be safe for."""

# -- air -------------------------------------------------------------------------------------
AIR_DENSITY: float = 1.2
"""kg/m^3, sea-level air; drives MuJoCo's quadratic (blunt-body) drag."""
LINEAR_DRAG: float = 6.8e-3
"""N s/m: [F15]'s rotor drag K_xy x summed hover rotor speed (~7450 rad/s)."""
DRAG_RADIUS: float = float(np.mean(COLLISION_HALF_SIZE))
"""m, MuJoCo's equivalent-sphere radius of the drag ellipsoid (mean semi-axis)."""
EFFECTIVE_VISCOSITY: float = LINEAR_DRAG / (6.0 * np.pi * DRAG_RADIUS)
"""Pa s. Rotor drag (blade flapping, induced drag) grows linearly with airspeed, which
MuJoCo's Stokes term 6 pi mu r v reproduces; mu is chosen so it equals [F15]'s drag
(~460x the molecular viscosity of air, which would be negligible)."""

# -- timing ----------------------------------------------------------------------------------
PHYSICS_DT: float = 0.002
"""s, 500 Hz physics: 20 steps per motor time constant."""
INNER_DT: float = 0.004
"""s, 250 Hz body-rate loop. The Crazyflie runs its rate PID at 500 Hz, but the 40 ms
motor lag caps the loop's bandwidth near 6 Hz; 250 Hz is still 40x faster than that and
halves the Python calls per physics step in the batched engine."""
CONTROL_DT: float = 0.02
"""s, 50 Hz policy: fast against the ~1 Hz position dynamics, the common rate of
learned quadrotor controllers (gym-pybullet-drones runs 30-48 Hz)."""

# -- action scaling ----------------------------------------------------------------------------
MAX_BODY_RATE: np.ndarray = np.array([6.0, 6.0, 3.0])
"""rad/s commanded at |action| = 1 in ``ctbr`` mode (roll, pitch, yaw)."""
MAX_COLLECTIVE_THRUST: float = 4.0 * MAX_THRUST
"""N commanded at collective action +1 in ``ctbr`` mode (-1 commands 0 N)."""


def allocation_matrix(
    rotor_xy: np.ndarray = ROTOR_XY, spin: np.ndarray = ROTOR_SPIN, yaw_ratio: float = YAW_TORQUE_RATIO
) -> np.ndarray:
    """``[4, 4]`` map from rotor thrusts (N) to (collective N, roll, pitch, yaw torque N m).

    Roll torque = sum(y_i f_i), pitch torque = -sum(x_i f_i) (thrust along +z at
    (x, y)), yaw torque = sum(-spin_i k f_i).
    """
    return np.stack([np.ones(4), rotor_xy[:, 1], -rotor_xy[:, 0], -spin * yaw_ratio])


ALLOCATION: np.ndarray = allocation_matrix()
MIXER: np.ndarray = np.linalg.inv(ALLOCATION)
"""``[4, 4]`` map from (collective, roll, pitch, yaw torque) to rotor thrusts."""

# -- task arena ----------------------------------------------------------------------------------
GEOFENCE_HALF_EXTENT: float = 8.0
"""m, |x| and |y| beyond this end the episode as a crash (gate courses reach ~6 m)."""
GEOFENCE_CEILING: float = 4.0
"""m, altitude above this ends the episode as a crash."""
CRASH_SPEED: float = 1.0
"""m/s, touching the ground faster than this is a crash, slower is a landing."""
REST_HEIGHT: float = 0.005 + COLLISION_HALF_SIZE[2]
"""m, body-frame origin height when resting on the 5 mm landing pad."""
GROUND_BAND: float = 0.03
"""m above ``REST_HEIGHT`` within which the drone counts as at the ground (for the
crash-speed test) and contacts count as ground contacts rather than obstacle hits."""
