"""A Universal Robots UR5e (e-Series): its published numbers, its MuJoCo model with joint
position servos, its DH forward kinematics, and the reach it is deployed on.

The Franka-scale arm's tasks (``ArmTask``: 7 joints, a gripper, Cartesian impedance
servos) are not this robot's; the UR5e runs behind ``ur_robot_driver`` with joint
position streaming (``forward_position_controller``), which its own controller tracks, so
its model has joint position servos only, and its reach is driven by the classical
controller of :mod:`sim2real.policies.classical.ur_reach` through the backend's
damped-least-squares IK.

Sources
-------
* DH parameters and link masses with their centres of mass: Universal Robots, "DH
  parameters for calculations of kinematics and dynamics" (universal-robots.com, UR5e
  row): d1 0.1625, a2 -0.425, a3 -0.3922, d4 0.1333, d5 0.0997, d6 0.0996 m; masses
  3.761, 8.058, 2.846, 1.37, 1.3, 0.365 kg.
* Joint limits: UR5e User Manual (e-Series, 5.x), technical specifications: every joint
  +-360 deg, 180 deg/s (pi rad/s) each; joint torques 150 Nm (sizes 3, the first three
  joints) and 28 Nm (size 1, the wrists), UR's "Max. joint torques" article. The same
  numbers are in ur_description's ``config/ur5e/joint_limits.yaml``, which also limits the
  elbow to +-180 deg (the upper arm is in its way beyond), as the model does.
* Armature, damping and servo gains: engineering estimates (a ~100:1 harmonic drive's
  reflected rotor inertia; gains critically damped or slower at the 2 ms step).
"""

from __future__ import annotations

import math
from pathlib import Path

import mujoco
import numpy as np

XML = Path(__file__).resolve().parent / "ur5e.xml"

JOINTS = ("shoulder_pan_joint", "shoulder_lift_joint", "elbow_joint", "wrist_1_joint", "wrist_2_joint",
          "wrist_3_joint")
"""As ``ur_robot_driver`` publishes them (``tf_prefix`` empty), in the chain's order."""

DH_D = np.array([0.1625, 0.0, 0.0, 0.1333, 0.0997, 0.0996])
DH_A = np.array([0.0, -0.425, -0.3922, 0.0, 0.0, 0.0])
DH_ALPHA = np.array([math.pi / 2, 0.0, 0.0, math.pi / 2, -math.pi / 2, 0.0])
LINK_MASSES = np.array([3.761, 8.058, 2.846, 1.37, 1.3, 0.365])
"""kg, shoulder to wrist 3 (the links each joint moves)."""

JOINT_LOWER = np.array([-2 * math.pi, -2 * math.pi, -math.pi, -2 * math.pi, -2 * math.pi, -2 * math.pi])
JOINT_UPPER = -JOINT_LOWER
VELOCITY_LIMIT = np.full(6, math.pi)
"""rad/s: 180 deg/s on every UR5e joint."""
TORQUE_LIMIT = np.array([150.0, 150.0, 150.0, 28.0, 28.0, 28.0])

JOINT_KP = np.array([3000.0, 3000.0, 2000.0, 500.0, 500.0, 300.0])
JOINT_KD = np.array([150.0, 150.0, 100.0, 20.0, 20.0, 10.0])
"""Position servos (Nm/rad, Nm s/rad) on gravity-compensated links (``gravcomp`` in the
MJCF, routed through the actuators so it counts against the torque limits), as the
robot's own joint controller tracks its targets: a 0.2 rad step settles in ~0.2 s."""

PHYSICS_DT = 0.002
CONTROL_DT = 0.05
"""The reach's command period (20 Hz, the arm policies' rate)."""
JOINT_DELTA_MAX = VELOCITY_LIMIT * CONTROL_DT
"""Largest joint-target offset ahead of the measured joints per control period."""

HOME_QPOS = np.array([math.pi, -math.pi / 2, math.pi / 2, -math.pi / 2, -math.pi / 2, 0.0])
"""UR's usual start pose turned to face +x (the pan joint at pi): the flange ~0.49 m in
front of the base, 0.43 m up, pointing down (the reach's tool orientation)."""

REACH_LOW = np.array([0.35, -0.25, 0.15])
REACH_HIGH = np.array([0.60, 0.25, 0.45])
"""The reach's target box (m, base frame), inside the arm's reach with the flange down."""
REACH_RADIUS = 0.02
"""A reach succeeds with the flange within this of the target."""
REACH_SECONDS = 8.0
"""A reach that has not succeeded by then has failed."""


def load_ur5e_spec() -> mujoco.MjSpec:
    """The UR5e with position servos on its six joints (targets in ``ctrl``, rad) and a
    ``target`` marker (a mocap body) for the reach."""
    spec = mujoco.MjSpec.from_file(str(XML))
    spec.option.timestep = PHYSICS_DT
    for i, name in enumerate(JOINTS):
        joint = spec.joint(name)
        joint.actgravcomp = True
        joint.actfrclimited = mujoco.mjtLimited.mjLIMITED_TRUE
        joint.actfrcrange = [-TORQUE_LIMIT[i], TORQUE_LIMIT[i]]
        act = spec.add_actuator(name=f"servo_{name}", target=name, trntype=mujoco.mjtTrn.mjTRN_JOINT)
        act.set_to_position(kp=JOINT_KP[i], kv=JOINT_KD[i])
        act.ctrlrange = [JOINT_LOWER[i], JOINT_UPPER[i]]
        act.forcerange = [-TORQUE_LIMIT[i], TORQUE_LIMIT[i]]
    body = spec.worldbody.add_body(name="target", mocap=True, pos=[0.5, 0.0, 0.3])
    body.add_geom(name="target", type=mujoco.mjtGeom.mjGEOM_SPHERE, size=[REACH_RADIUS, 0, 0], contype=0,
                  conaffinity=0, rgba=[0.1, 0.8, 0.2, 0.5])
    return spec


def dh_forward(q: np.ndarray) -> np.ndarray:
    """The flange's pose (4x4, base frame) at joint angles ``q`` by UR's DH chain,
    ``prod_i Rz(q_i) Tz(d_i) Tx(a_i) Rx(alpha_i)``: the reference the model is checked against."""
    pose = np.eye(4)
    for theta, d, a, alpha in zip(np.asarray(q, dtype=np.float64), DH_D, DH_A, DH_ALPHA, strict=True):
        ct, st, ca, sa = math.cos(theta), math.sin(theta), math.cos(alpha), math.sin(alpha)
        pose = pose @ np.array([[ct, -st * ca, st * sa, a * ct],
                                [st, ct * ca, -ct * sa, a * st],
                                [0.0, sa, ca, d],
                                [0.0, 0.0, 0.0, 1.0]])
    return pose


def draw_target(rng: np.random.Generator) -> np.ndarray:
    """One reach target (m, base frame), uniform in the target box."""
    return rng.uniform(REACH_LOW, REACH_HIGH)
