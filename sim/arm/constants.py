"""Physical constants of the 7-DoF arm (Franka-Emika-Panda scale) and its tasks.

Sources
-------
* Kinematics (modified/Craig DH): Franka Control Interface documentation,
  "Robot and interface specifications", https://frankaemika.github.io/docs/control_parameters.html
  (d1=0.333, d3=0.316, a4=0.0825, a5=-0.0825, d5=0.384, a7=0.088, flange d=0.107,
  flange to fingertip 0.1034 m, hand rotated -pi/4 about the flange z axis).
* Joint position, velocity and torque limits: same page (Panda, "Limits for Panda").
* Link masses: C. Gaz, M. Cognetti, A. Oliva, P. Robuffo Giordano, A. De Luca,
  "Dynamic Identification of the Franka Emika Panda Robot With Retrieval of Feasible
  Parameters Using Penalty-Based Optimization", IEEE RA-L 4(4), 2019 (identified masses).
* Gripper: Franka Hand data sheet (stroke 0-0.04 m per finger, 70 N continuous force,
  0.73 kg hand mass incl. fingers).
* Joint impedance gains for the position mode: franka_ros ``joint_impedance_example``
  (k = 600,600,600,600,250,150,50; d = 50,50,50,20,20,20,10).
* Cartesian impedance defaults and ranges: between franka_ros ``cartesian_impedance_example``
  (a few hundred N/m, tens of Nm/rad, set at run time) and HIL-SERL's Franka configuration
  (2000 N/m, 150 Nm/rad).
* Armature (reflected rotor inertia) and viscous damping are engineering estimates of
  the order reported by Gaz et al. (viscous friction 0.03-0.2 Nm s/rad) plus the harmonic
  drive's reflected inertia (rotor ~1e-5 kg m^2 x ratio^2 ~ 1e4 -> ~0.1 kg m^2).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

BASE_XML = Path(__file__).resolve().parent / "arm.xml"
"""The robot and its table; the robot stands on the table top, the world's z = 0 plane."""

# --- timing -----------------------------------------------------------------
PHYSICS_DT = 0.002
"""500 Hz physics: contacts with mm clearances and Cartesian stiffness up to 2000 N/m on
2-12 kg apparent mass keep omega*dt < 0.1; half the cost of Franka's 1 kHz loop."""
CONTROL_DT = 0.05
"""20 Hz policy (decimation 25): the impedance law runs at physics rate inside MuJoCo, so
the policy only moves setpoints; HIL-SERL runs its Franka policy at 10 Hz."""

# --- arm --------------------------------------------------------------------
ARM_JOINTS = tuple(f"joint{i}" for i in range(1, 8))

JOINT_LOWER = np.array([-2.8973, -1.7628, -2.8973, -3.0718, -2.8973, -0.0175, -2.8973])
JOINT_UPPER = np.array([2.8973, 1.7628, 2.8973, -0.0698, 2.8973, 3.7525, 2.8973])
TORQUE_LIMIT = np.array([87.0, 87.0, 87.0, 87.0, 12.0, 12.0, 12.0])
VELOCITY_LIMIT = np.array([2.175, 2.175, 2.175, 2.175, 2.61, 2.61, 2.61])
# Cartesian limits of the end effector (Franka Control Interface documentation, "Limits for
# Panda"): the hard ceilings of the safety filter's Cartesian limits.
CARTESIAN_SPEED_LIMIT = 1.7
"""m/s, translation."""
CARTESIAN_ROTATION_SPEED_LIMIT = 2.5
"""rad/s."""
CARTESIAN_ACCEL_LIMIT = 13.0
"""m/s^2, translation."""
CARTESIAN_ROTATION_ACCEL_LIMIT = 25.0
"""rad/s^2."""
CARTESIAN_JERK_LIMIT = 6500.0
"""m/s^3, translation."""

LINK_MASSES = {
    "link1": 4.970684,
    "link2": 0.646926,
    "link3": 3.228604,
    "link4": 3.587895,
    "link5": 1.225946,
    "link6": 1.666555,
    "link7": 0.735522,
    "hand": 0.73,
}
"""Gaz et al. 2019 identified masses (kg). The hand value includes the fingers; the
model gives each finger 15 g and the hand body the rest."""

ARMATURE = np.array([0.1, 0.1, 0.1, 0.1, 0.05, 0.05, 0.05])
"""Reflected rotor inertia per joint (kg m^2)."""
DAMPING = np.array([1.0, 1.0, 1.0, 1.0, 0.5, 0.5, 0.5])
"""Viscous joint damping (Nm s/rad)."""

FAULT_SPEED_RATIO = 1.5
"""A joint faster than this multiple of its velocity limit ends the episode (the real
robot's controller aborts on velocity-limit violations)."""
FAULT_PENALTY = 1.0

HOME_QPOS = np.array([0.0, -math.pi / 4, 0.0, -3 * math.pi / 4, 0.0, math.pi / 2, math.pi / 4])
"""Franka's "ready" pose: fingertips ~0.31 m in front, ~0.49 m above the base, pointing down."""

# Joint-space PD (joint_position mode), franka_ros joint_impedance_example.
JOINT_KP = np.array([600.0, 600.0, 600.0, 600.0, 250.0, 150.0, 50.0])
JOINT_KD = np.array([50.0, 50.0, 50.0, 20.0, 20.0, 20.0, 10.0])
JOINT_DELTA_MAX = VELOCITY_LIMIT * CONTROL_DT
"""Largest joint-target offset per control step: the velocity limit times the period."""

NULLSPACE_STIFFNESS = np.array([0.5, 0.5, 0.5, 0.5, 0.2, 0.2, 0.2])
"""Weak joint springs (Nm/rad) toward the episode's start posture in the Cartesian modes:
they hold the 7th (redundant) DoF, the elbow, which the 6-axis Cartesian law leaves free,
at the cost of < 1 mm static Cartesian error."""

# --- gripper ----------------------------------------------------------------
FINGER_STROKE = 0.04
GRIP_WIDTH_MAX = 2 * FINGER_STROKE
GRIP_FORCE = 70.0
GRIP_KP = 3000.0
"""N/m on the width: a closed command on a 2.5 cm object already saturates at 70 N."""
GRIP_KV = 100.0
FINGERTIP_OFFSET = 0.1034
"""Flange to fingertip (the ``ee`` site), Franka's default F_T_EE."""

# --- Cartesian control --------------------------------------------------------
EE_DELTA_POS_MAX = 0.05
"""Largest commanded translation per control step (m); LeRobot refuses > 5 cm."""
EE_DELTA_ROT_MAX = 0.15
"""Largest commanded rotation per control step (rad)."""
EE_POS_STIFFNESS = 1000.0
"""ee_delta translational stiffness (N/m)."""
EE_ROT_STIFFNESS = 50.0
"""ee_delta rotational stiffness (Nm/rad)."""
APPARENT_INERTIA = np.array([10.0, 4.0, 5.0, 0.15, 0.5, 0.05])
"""Nominal diagonal of the operational-space inertia (kg for x, y, z; kg m^2 for the three
rotation axes of the reference frame) at HOME_QPOS (measured: 11.9, 3.9, 5.3, 0.17, 0.63,
0.05). Turns a stiffness k into the damping d = 2 * DAMPING_RATIO * sqrt(k * m)."""
DAMPING_RATIO = 1.0
EE_FORCE_LIMIT = 100.0
"""Per-axis Cartesian force limit of the fixed-stiffness servo (N)."""
EE_TORQUE_LIMIT = 15.0
"""Per-axis Cartesian torque limit of the fixed-stiffness servo (Nm)."""

IMPEDANCE_POS_STIFFNESS_RANGE = (100.0, 2000.0)
"""ee_impedance translational stiffness range (N/m), mapped log-uniformly from [-1, 1]."""
IMPEDANCE_ROT_STIFFNESS_RANGE = (5.0, 100.0)
"""ee_impedance rotational stiffness range (Nm/rad), mapped log-uniformly from [-1, 1]."""

WORKSPACE_LOW = np.array([0.25, -0.45, -0.02])
WORKSPACE_HIGH = np.array([0.80, 0.45, 0.60])
"""Box (world frame, m) that every Cartesian target is clipped into (table top is z=0)."""
ROT_LIMIT = np.array([0.8, 0.8, 2.5])
"""Bounds on the target orientation's rotation vector relative to the reference
(gripper pointing down) per axis (rad): tilts beyond ~45 deg are refused."""
