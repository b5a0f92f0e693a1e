"""Physical constants of a PX4-class quadrotor, the Holybro X500 V2, with sources.

Frames, rotor numbering and spin directions as in :mod:`.constants` (our M1..M4, not
PX4's motor order: the airframe is symmetric, only the geometry and constants differ).

Sources
-------
[HB]  Holybro X500 V2 kit specification (holybro.com, "X500 V2 Kits"): 500 mm
      wheelbase, 10" (1045) propellers, 2216 KV920 motors, take-off weight with a
      4S 5000 mAh battery about 1.5-2.0 kg.
[GZ]  PX4's Gazebo model of this airframe, ``x500`` / ``x500_base`` ``model.sdf``
      (PX4-gazebo-models, the ``make px4_sitl gz_x500`` vehicle): base_link mass 2.0 kg,
      inertia Ixx = Iyy 0.021667, Izz 0.04 kg m^2; MulticopterMotorModel
      ``motorConstant`` 8.54858e-06 N/(rad/s)^2 (thrust = k w^2), ``maxRotVelocity``
      1000 rad/s, ``momentConstant`` 0.016 m (drag torque per newton of thrust),
      ``timeConstantUp`` 0.0125 s and ``timeConstantDown`` 0.025 s,
      ``rotorDragCoefficient`` 8.06428e-05 N s/m per rad/s.
[PX]  PX4 airframe ``4001_gz_x500`` (ROMFS): rotors at ``CA_ROTOR*_PX/PY`` +-0.175 m.
"""

from __future__ import annotations

import numpy as np

MASS: float = 2.0
"""kg, take-off mass with battery [GZ] (the top of [HB]'s range: a camera or companion computer on board)."""
INERTIA: tuple[float, float, float] = (0.021667, 0.021667, 0.04)
"""kg m^2, principal moments [GZ]."""
ROTOR_OFFSET: float = 0.175
"""m, x and y offset of each motor [PX] (arm 0.247 m, motor-to-motor diagonal 0.495 m: [HB]'s 500 mm)."""
PROP_RADIUS: float = 0.127
"""m, 10-inch propellers [HB]."""
MOTOR_CONSTANT: float = 8.54858e-06
"""N/(rad/s)^2, thrust per squared rotor speed [GZ]."""
MAX_ROTOR_SPEED: float = 1000.0
"""rad/s at full command [GZ]."""
MAX_THRUST: float = MOTOR_CONSTANT * MAX_ROTOR_SPEED**2
"""N per rotor at full command (8.55 N; 4 x 8.55 N / (2.0 kg g) = 1.74 thrust-to-weight)."""
YAW_TORQUE_RATIO: float = 0.016
"""m, reaction torque per newton of thrust [GZ] (``momentConstant``)."""
MOTOR_TIME_CONSTANT: float = 0.02
"""s, one first-order lag for both directions: between [GZ]'s 12.5 ms up and 25 ms down."""
HOVER_ROTOR_SPEED: float = float(np.sqrt(MASS * 9.81 / (4.0 * MOTOR_CONSTANT)))
"""rad/s per rotor at hover (757 rad/s)."""
LINEAR_DRAG: float = 4.0 * 8.06428e-05 * HOVER_ROTOR_SPEED
"""N s/m: [GZ]'s rotor drag coefficient x rotor speed, summed over the four rotors at hover (0.24)."""
COLLISION_HALF_SIZE: tuple[float, float, float] = (0.3, 0.3, 0.12)
"""m, half sizes of the one collision box: rotor discs (0.175 + 0.127) and the 0.24 m landing gear."""
BATTERY_CELLS: int = 4
"""LiPo cells in series: [HB]'s 4S 5000 mAh pack."""
MAX_SPEED: tuple[float, float] = (3.0, 1.5)
"""m/s, horizontal and vertical speed of its ``velocity`` command space: well inside PX4's
``MPC_XY_VEL_MAX`` (12) and ``MPC_Z_VEL_MAX_UP`` (3), at its ``MPC_Z_VEL_MAX_DN`` (1.5)."""
