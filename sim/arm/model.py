"""Build the arm's MuJoCo model for one action mode with ``mujoco.MjSpec`` edits.

Every mode starts from ``arm.xml`` (robot, table, cameras, sensors, no actuators) and
adds its actuators. All control laws run inside MuJoCo at physics rate, so the batched
engine can step every environment with ``mujoco.rollout`` and Python only writes ``ctrl``
once per control step:

``joint_torque``
    7 motors, ``ctrl`` in Nm within the torque limits.
``joint_position``
    7 joint servos ``tau = kp (q_target - q) - kd qdot`` (franka_ros joint impedance gains).
``ee_delta``
    6 Cartesian servos on the fingertip site, measured against reference sites
    (site transmission with ``refsite``)::

        F_i = K_i (x_target_i - x_i) - D_i xdot_i,   i in {x, y, z, rx, ry, rz}

    with fixed ``K`` (EE_POS/ROT_STIFFNESS) and critical damping ``D = 2 sqrt(K m_i)``.
    ``x_i`` for the translation axes is the fingertip position in the world-aligned
    ``ref_pos`` frame; for the rotation axes it is the rotation vector of
    ``R_ref^T R_ee`` (``ref_rot`` = gripper pointing down) and ``xdot_i`` the angular
    velocity in that frame. MuJoCo maps the wrench to joint torques with ``J^T``.
``ee_impedance``
    The same law with stiffness chosen by the policy. A product ``K * x`` is not an
    affine function of one control, so each axis uses three actuators whose forces
    are linear in their controls and add up to the law::

        setpoint:  F = u_f                      (gain 1;         u_f = K x_target)
        spring:    F = -x    * u_k              (gain -length;   u_k = K)
        damper:    F = -xdot * u_d              (gain -velocity; u_d = D = 2 sqrt(K m_i))

In both Cartesian modes weak joint springs (``NULLSPACE_STIFFNESS``, referenced to each
episode's start posture by ``ArmTask.reset_env``) hold the redundant (elbow) DoF, and
every joint clamps the *sum* of its actuator torques, gravity compensation included, to
the Panda torque limits (``actuatorfrcrange`` with ``actuatorgravcomp``), like the real
robot's firmware.
"""

from __future__ import annotations

import mujoco
import numpy as np

from sim2real.sim.arm import constants as C
from sim2real.sim.core.errors import ConfigError

ACTION_MODES: tuple[str, ...] = ("ee_delta", "ee_impedance", "joint_position", "joint_torque")
"""Supported action modes; the first is the default."""
CARTESIAN_AXES: tuple[str, ...] = ("x", "y", "z", "rx", "ry", "rz")
CARTESIAN_MODES = ("ee_delta", "ee_impedance")


def damping_for(stiffness: np.ndarray, inertia: np.ndarray = C.APPARENT_INERTIA) -> np.ndarray:
    """Damping giving ``DAMPING_RATIO`` on the nominal apparent inertia of each axis."""
    return 2.0 * C.DAMPING_RATIO * np.sqrt(np.asarray(stiffness) * inertia)


def load_arm_spec(action_mode: str) -> mujoco.MjSpec:
    """The arm and table with the actuators of ``action_mode``; tasks add their objects."""
    if action_mode not in ACTION_MODES:
        raise ConfigError(
            "action_mode", f"{action_mode!r} is not an arm action mode; choose one of {list(ACTION_MODES)}"
        )
    spec = mujoco.MjSpec.from_file(str(C.BASE_XML))
    spec.option.timestep = C.PHYSICS_DT
    for i, name in enumerate(C.ARM_JOINTS):
        joint = spec.joint(name)
        joint.actgravcomp = True
        joint.actfrclimited = mujoco.mjtLimited.mjLIMITED_TRUE
        joint.actfrcrange = [-C.TORQUE_LIMIT[i], C.TORQUE_LIMIT[i]]
        joint.armature = C.ARMATURE[i]
        joint.damping = [C.DAMPING[i], 0.0, 0.0]  # linear, quadratic, cubic
    builders = {
        "joint_torque": _add_joint_motors,
        "joint_position": _add_joint_servos,
        "ee_delta": _add_cartesian_servos,
        "ee_impedance": _add_variable_impedance,
    }
    builders[action_mode](spec)
    if action_mode in CARTESIAN_MODES:
        _add_nullspace_springs(spec)
    _add_gripper(spec)
    return spec


def _add_joint_motors(spec: mujoco.MjSpec) -> None:
    for i, name in enumerate(C.ARM_JOINTS):
        act = spec.add_actuator(name=f"motor{i + 1}", target=name, trntype=mujoco.mjtTrn.mjTRN_JOINT)
        act.set_to_motor()
        act.ctrlrange = [-C.TORQUE_LIMIT[i], C.TORQUE_LIMIT[i]]


def _add_joint_servos(spec: mujoco.MjSpec) -> None:
    for i, name in enumerate(C.ARM_JOINTS):
        act = spec.add_actuator(name=f"servo{i + 1}", target=name, trntype=mujoco.mjtTrn.mjTRN_JOINT)
        act.set_to_position(kp=C.JOINT_KP[i], kv=C.JOINT_KD[i])
        act.ctrlrange = [C.JOINT_LOWER[i], C.JOINT_UPPER[i]]
        act.forcerange = [-C.TORQUE_LIMIT[i], C.TORQUE_LIMIT[i]]


def _site_actuator(spec: mujoco.MjSpec, name: str, axis: int) -> mujoco.MjsActuator:
    """An actuator on the fingertip site measuring Cartesian axis ``axis`` (0-5)."""
    gear = np.zeros(6)
    gear[axis] = 1.0
    act = spec.add_actuator(
        name=name,
        target="ee",
        refsite="ref_pos" if axis < 3 else "ref_rot",
        trntype=mujoco.mjtTrn.mjTRN_SITE,
    )
    act.gear = gear.tolist()
    return act


def _add_cartesian_servos(spec: mujoco.MjSpec) -> None:
    stiffness = np.array([C.EE_POS_STIFFNESS] * 3 + [C.EE_ROT_STIFFNESS] * 3)
    damping = damping_for(stiffness)
    for axis, label in enumerate(CARTESIAN_AXES):
        act = _site_actuator(spec, f"ee_{label}", axis)
        act.set_to_position(kp=stiffness[axis], kv=damping[axis])
        limit = C.EE_FORCE_LIMIT if axis < 3 else C.EE_TORQUE_LIMIT
        act.forcerange = [-limit, limit]


def _add_variable_impedance(spec: mujoco.MjSpec) -> None:
    k_max = np.array([C.IMPEDANCE_POS_STIFFNESS_RANGE[1]] * 3 + [C.IMPEDANCE_ROT_STIFFNESS_RANGE[1]] * 3)
    d_max = damping_for(k_max)
    # Controls are grouped by role (all setpoints, then springs, then dampers) so the
    # action mapping writes contiguous slices.
    for axis, label in enumerate(CARTESIAN_AXES):
        act = _site_actuator(spec, f"imp_{label}_setpoint", axis)
        act.gaintype = mujoco.mjtGain.mjGAIN_FIXED
        act.gainprm[0] = 1.0
        act.ctrllimited = mujoco.mjtLimited.mjLIMITED_FALSE
    for axis, label in enumerate(CARTESIAN_AXES):
        act = _site_actuator(spec, f"imp_{label}_spring", axis)
        act.gaintype = mujoco.mjtGain.mjGAIN_AFFINE
        act.gainprm[:3] = [0.0, -1.0, 0.0]
        act.ctrlrange = [0.0, k_max[axis]]
    for axis, label in enumerate(CARTESIAN_AXES):
        act = _site_actuator(spec, f"imp_{label}_damper", axis)
        act.gaintype = mujoco.mjtGain.mjGAIN_AFFINE
        act.gainprm[:3] = [0.0, 0.0, -1.0]
        act.ctrlrange = [0.0, d_max[axis]]
    # Axis velocities at every physics step: the energy tank integrates the dampers'
    # dissipation from them (sim/arm/passivity.py).
    for label in CARTESIAN_AXES:
        spec.add_sensor(
            name=f"imp_{label}_vel",
            type=mujoco.mjtSensor.mjSENS_ACTUATORVEL,
            objtype=mujoco.mjtObj.mjOBJ_ACTUATOR,
            objname=f"imp_{label}_setpoint",
        )


def _add_nullspace_springs(spec: mujoco.MjSpec) -> None:
    for i, name in enumerate(C.ARM_JOINTS):
        joint = spec.joint(name)
        joint.stiffness = [C.NULLSPACE_STIFFNESS[i], 0.0, 0.0]
        joint.springref = C.HOME_QPOS[i]


def _add_gripper(spec: mujoco.MjSpec) -> None:
    act = spec.add_actuator(name="gripper", target="grip", trntype=mujoco.mjtTrn.mjTRN_TENDON)
    act.set_to_position(kp=C.GRIP_KP, kv=C.GRIP_KV)
    act.ctrlrange = [0.0, C.GRIP_WIDTH_MAX]
    act.forcerange = [-C.GRIP_FORCE, C.GRIP_FORCE]
