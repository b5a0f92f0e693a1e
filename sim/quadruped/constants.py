"""Physical constants of the sim2real quadruped (Unitree Go2 scale).

Sources (numbers are repeated in ``xmls/quadruped.xml``; ``tests/sim/quadruped``
checks the compiled model against this file):

* [GO2-URDF] Unitree, ``unitree_ros/robots/go2_description`` (``xacro/const.xacro``
  and ``urdf/go2_description.urdf``): link masses, centres of mass and inertias,
  hip offsets (x = +-0.1934, y = +-0.0465), thigh lateral offset 0.0955, thigh and
  calf lengths 0.213, foot sphere radius 0.022, collision box of the trunk
  0.3762 x 0.0935 x 0.114, joint ranges, hip/thigh effort 23.7 Nm and 30.1 rad/s.
* [GO2-SPEC] Unitree Go2 product specification: total mass ~15 kg, knee (calf)
  peak torque ~45 Nm. The public URDF still lists the Go1 calf drive (35.55 Nm,
  20.07 rad/s); we use the Go2 figures, 45.43 Nm and 15.7 rad/s.
* [LEGGED-GYM] Rudin et al., "Learning to Walk in Minutes Using Massively
  Parallel Deep RL" (legged_gym): Kp 20 / Kd 0.5, action scale 0.25, 50 Hz policy
  over 200 Hz physics (decimation 4), reward terms and weights.
* [PLAYGROUND] MuJoCo Playground Go1 joystick: Kp 35 / Kd 0.5, action scale 0.5
  on [-1, 1] actions, home pose hip 0 / thigh 0.9 / calf -1.8.

Leg order everywhere is FR, FL, RR, RL (Unitree's low-level SDK order), joints
within a leg hip, thigh, calf.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

XML_PATH = Path(__file__).parent / "xmls" / "quadruped.xml"

LEGS: tuple[str, ...] = ("FR", "FL", "RR", "RL")
JOINTS_PER_LEG: tuple[str, ...] = ("hip", "thigh", "calf")
JOINT_NAMES: tuple[str, ...] = tuple(f"{leg}_{j}_joint" for leg in LEGS for j in JOINTS_PER_LEG)
ACTUATOR_NAMES: tuple[str, ...] = tuple(f"{leg}_{j}" for leg in LEGS for j in JOINTS_PER_LEG)
FOOT_GEOMS: tuple[str, ...] = tuple(f"{leg}_foot" for leg in LEGS)
TRUNK_BODY = "trunk"
NUM_JOINTS = 12

# -- mass (kg) [GO2-URDF] -----------------------------------------------------------
TRUNK_MASS = 6.921  # with battery
HIP_MASS = 0.678
THIGH_MASS = 1.152
CALF_MASS = 0.154
FOOT_MASS = 0.04  # merged into the calf body (the foot is a fixed link)
TOTAL_MASS = TRUNK_MASS + 4 * (HIP_MASS + THIGH_MASS + CALF_MASS + FOOT_MASS)  # 15.017 kg

# -- geometry (m) [GO2-URDF] --------------------------------------------------------
TRUNK_SIZE = (0.3762, 0.0935, 0.114)  # collision box, full lengths
HIP_OFFSET = (0.1934, 0.0465)  # |x|, |y| of the hip axes from the trunk centre
THIGH_OFFSET = 0.0955  # lateral offset of the thigh from the hip axis
THIGH_LENGTH = 0.213
CALF_LENGTH = 0.213
FOOT_RADIUS = 0.022

# -- joint limits (rad) [GO2-URDF] ----------------------------------------------------
HIP_RANGE = (-1.0472, 1.0472)
THIGH_RANGE_FRONT = (-1.5708, 3.4907)
THIGH_RANGE_REAR = (-0.5236, 4.5379)
CALF_RANGE = (-2.7227, -0.8378)

# -- drives [GO2-URDF], calf [GO2-SPEC] ---------------------------------------------
HIP_TORQUE = 23.7  # Nm
THIGH_TORQUE = 23.7
CALF_TORQUE = 45.43
HIP_VELOCITY = 30.1  # rad/s; MuJoCo has no speed limit, rewards penalise exceeding it
THIGH_VELOCITY = 30.1
CALF_VELOCITY = 15.7
# Reflected rotor inertia (kg m^2). Not published; 0.01 is the common estimate for this
# motor class, doubled on the calf for its extra reduction. It also keeps the light
# calf (0.19 kg) stable under the servo at a 5 ms step.
ARMATURE_HIP_THIGH = 0.01
ARMATURE_CALF = 0.02

# -- servo (position actuator inside MuJoCo, runs at physics rate) -------------------
# Kp 35 as in [PLAYGROUND]. Kd 1.0 is the top of the 0.5-1 range used by legged_gym
# and Playground: our model has no joint friction by default and with Kd 0.5 a 15 cm
# drop folds the legs (measured in tests/sim/quadruped/test_quadruped_model.py).
KP = 35.0
KV = 1.0
ACTION_SCALE = 0.5  # q_target = q_default + ACTION_SCALE * action, action in [-1, 1]

# -- timing ---------------------------------------------------------------------------
PHYSICS_DT = 0.005  # 200 Hz
CONTROL_DT = 0.02  # 50 Hz policy, decimation 4 as in [LEGGED-GYM]

# -- poses ----------------------------------------------------------------------------
DEFAULT_POSE = np.array([0.0, 0.9, -1.8] * 4)
"""Standing pose (hip, thigh, calf per leg) [PLAYGROUND]."""
CROUCH_POSE = DEFAULT_POSE + ACTION_SCALE * np.array([0.0, 1.0, -1.0] * 4)
"""The lowest pose the default action scale can command (thigh 1.4, calf -2.3)."""
# Kinematic trunk height of the default pose: feet straight under the hips.
STANDING_HEIGHT = THIGH_LENGTH * np.cos(0.9) + CALF_LENGTH * np.cos(0.9) + FOOT_RADIUS  # 0.287 m
TRUNK_HALF_HEIGHT = TRUNK_SIZE[2] / 2


def joint_ranges() -> np.ndarray:
    """``[12, 2]`` joint limits in actuator order."""
    rows = []
    for leg in LEGS:
        thigh = THIGH_RANGE_FRONT if leg[0] == "F" else THIGH_RANGE_REAR
        rows += [HIP_RANGE, thigh, CALF_RANGE]
    return np.array(rows)


def torque_limits() -> np.ndarray:
    """``[12]`` peak torques in actuator order."""
    return np.array([HIP_TORQUE, THIGH_TORQUE, CALF_TORQUE] * 4)


def velocity_limits() -> np.ndarray:
    """``[12]`` joint speed limits in actuator order."""
    return np.array([HIP_VELOCITY, THIGH_VELOCITY, CALF_VELOCITY] * 4)


def static_knee_offset(mass: float = TOTAL_MASS, kp: float = KP) -> np.ndarray:
    """Servo-target offsets ``[12]`` that cancel the sag of the default stance.

    In the default pose each foot is straight under its hip, so a quarter of the
    weight loads only the knee, with lever arm ``thigh_length * sin(0.9)``; the
    servo needs ``tau / kp`` of extra target (0.18 rad) to hold it at zero error.
    """
    knee_torque = mass * 9.81 / 4 * THIGH_LENGTH * np.sin(DEFAULT_POSE[1])
    return np.tile([0.0, 0.0, knee_torque / kp], 4)
