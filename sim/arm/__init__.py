"""The arm robot: a 7-DoF torque-controlled arm of Franka-Panda scale with a parallel
gripper, its tasks, Cartesian impedance action modes and randomization.

Public API: the task classes below, ``ArmTask`` (``base``), ``ArmRandomization``
(``randomize``), ``ActionMapper`` / ``stiffness_from_action`` (``control``) and
``load_arm_spec`` / ``ACTION_MODES`` (``model``). See docs/robots/arm.md.
"""

from sim2real.sim.arm.deployment import ArmDeployment
from sim2real.sim.arm.maze import ArmMaze
from sim2real.sim.arm.peg_insert import ArmPegInsert
from sim2real.sim.arm.push import ArmPush
from sim2real.sim.arm.reach import ArmReach
from sim2real.sim.core.task import Task

TASKS: list[type[Task]] = [
    ArmReach,
    ArmPush,
    ArmPegInsert,
    ArmMaze,
]

DEPLOYMENT = ArmDeployment()
"""What deploying the arm needs to know of it (``deployment.py``)."""
