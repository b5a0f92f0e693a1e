"""From policy actions to actuator controls, for each action mode of the arm.

Runs once per control step for the whole batch (vectorised numpy); the control laws
themselves run at physics rate inside MuJoCo (see ``model.py``).

Setpoints are *integrated*: an action moves the previous setpoint (a zero action holds
it, so payloads or the null-space springs cause no drift), and the setpoint is then
kept within one step's maximum offset of the measured state, which bounds the force any
setpoint can wind up against an obstacle to ``K * EE_DELTA_POS_MAX`` (50 N at the
ee_delta stiffness, 100 N at the stiffest ee_impedance setting).
"""

from __future__ import annotations

import numpy as np

from sim2real.sim.arm import constants as C
from sim2real.sim.arm.model import CARTESIAN_MODES, damping_for
from sim2real.sim.arm.rotations import quat_conj, quat_mul, quat_to_rotvec, rotvec_to_quat

REF_QUAT = np.array([0.0, 1.0, 0.0, 0.0])
"""Orientation of the ``ref_rot`` site: gripper pointing down (180 deg about world x)."""

ACTION_LAYOUTS: dict[str, list[tuple[str, int]]] = {
    "ee_delta": [("ee_delta_pos", 3), ("ee_delta_rot", 3)],
    "ee_impedance": [("ee_delta_pos", 3), ("ee_delta_rot", 3), ("stiffness_pos", 3), ("stiffness_rot", 3)],
    "joint_position": [("joint_delta", 7)],
    "joint_torque": [("joint_torque", 7)],
}
"""Arm blocks of the action per mode (the gripper, when present, comes last)."""


def stiffness_from_action(a: np.ndarray) -> np.ndarray:
    """Per-axis stiffness ``[B, 6]`` from actions ``[B, 6]`` in [-1, 1], log-uniform over
    the translational and rotational ranges (equal resolution at soft and stiff settings)."""
    lo = np.array([C.IMPEDANCE_POS_STIFFNESS_RANGE[0]] * 3 + [C.IMPEDANCE_ROT_STIFFNESS_RANGE[0]] * 3)
    hi = np.array([C.IMPEDANCE_POS_STIFFNESS_RANGE[1]] * 3 + [C.IMPEDANCE_ROT_STIFFNESS_RANGE[1]] * 3)
    return lo * (hi / lo) ** ((np.clip(a, -1.0, 1.0) + 1.0) / 2.0)


def clip_norm(v: np.ndarray, limit: float) -> np.ndarray:
    """Scale rows of ``v`` down so their norm is at most ``limit`` (direction kept)."""
    norm = np.linalg.norm(v, axis=-1, keepdims=True)
    return v * np.minimum(1.0, limit / np.maximum(norm, 1e-12))


def cartesian_setpoint(
    setpoint_pos: np.ndarray,
    setpoint_quat: np.ndarray,
    ee_pos: np.ndarray,
    ee_quat: np.ndarray,
    delta_pos: np.ndarray,
    delta_rot: np.ndarray,
    workspace_low: np.ndarray = C.WORKSPACE_LOW,
    workspace_high: np.ndarray = C.WORKSPACE_HIGH,
    rot_limit: np.ndarray = C.ROT_LIMIT,
) -> tuple[np.ndarray, np.ndarray]:
    """Next setpoint ``(pos [B, 3], quat [B, 4])``: the previous one moved by ``delta_pos``
    and the world-frame rotation vector ``delta_rot``, pulled back to within
    ``EE_DELTA_POS_MAX`` / ``EE_DELTA_ROT_MAX`` of the measured pose, into the workspace
    box and within ``rot_limit`` (rotation vector from gripper-down, per axis) of gripper-down."""
    pos = setpoint_pos + delta_pos
    pos = ee_pos + clip_norm(pos - ee_pos, C.EE_DELTA_POS_MAX)
    pos = np.clip(pos, workspace_low, workspace_high)
    quat = quat_mul(rotvec_to_quat(delta_rot), setpoint_quat)
    offset = clip_norm(quat_to_rotvec(quat_mul(quat, quat_conj(ee_quat))), C.EE_DELTA_ROT_MAX)
    quat = quat_mul(rotvec_to_quat(offset), ee_quat)
    rot = np.clip(quat_to_rotvec(quat_mul(quat_conj(REF_QUAT), quat)), -rot_limit, rot_limit)
    return pos, quat_mul(REF_QUAT, rotvec_to_quat(rot))


def servo_coordinates(pos: np.ndarray, quat: np.ndarray) -> np.ndarray:
    """What the six Cartesian servos measure for a pose, ``[B, 6]``: the position in the
    world-aligned ``ref_pos`` frame and the rotation vector of ``REF_QUAT^-1 * quat``."""
    return np.concatenate([pos, quat_to_rotvec(quat_mul(quat_conj(REF_QUAT), quat))], axis=-1)


class ActionMapper:
    """Actions ``[B, A]`` in [-1, 1] -> controls ``[B, nu]`` for one mode, with per-env setpoints.

    Args:
        mode: One of the arm's action modes.
        num_envs: Batch size.
        gripper: Whether the last action element commands the gripper width; if not,
            the gripper is always commanded to ``fixed_gripper_width``.
        workspace_low, workspace_high: Box the Cartesian setpoint is clipped into.
        rot_limit: Largest rotation vector (rad, per axis) of the Cartesian setpoint
            from gripper-down.
    """

    def __init__(
        self,
        mode: str,
        num_envs: int,
        gripper: bool = True,
        fixed_gripper_width: float = 0.0,
        workspace_low: np.ndarray = C.WORKSPACE_LOW,
        workspace_high: np.ndarray = C.WORKSPACE_HIGH,
        rot_limit: np.ndarray = C.ROT_LIMIT,
    ) -> None:
        self.mode = mode
        self.rot_limit = np.asarray(rot_limit, dtype=np.float64)
        self.gripper = gripper
        self.fixed_gripper_width = fixed_gripper_width
        self.workspace_low, self.workspace_high = workspace_low, workspace_high
        # Actuator counts of the models load_arm_spec(mode) builds (arm + gripper).
        self.nu = {"ee_delta": 7, "ee_impedance": 19, "joint_position": 8, "joint_torque": 8}[mode]
        self.setpoint_pos = np.zeros((num_envs, 3))
        self.setpoint_quat = np.tile(REF_QUAT, (num_envs, 1))
        self.joint_setpoint = np.tile(C.HOME_QPOS, (num_envs, 1))

    @property
    def setpoint_size(self) -> int:
        """Size of :meth:`setpoint_offset` (0 in joint_torque mode, which has no setpoint)."""
        return 6 if self.mode in CARTESIAN_MODES else 7 if self.mode == "joint_position" else 0

    def reset(self, env_id: int, q: np.ndarray, ee_pos: np.ndarray, ee_quat: np.ndarray) -> None:
        """Set env ``env_id``'s setpoint to its measured state (holds the reset pose)."""
        self.joint_setpoint[env_id] = q
        self.setpoint_pos[env_id] = ee_pos
        self.setpoint_quat[env_id] = ee_quat

    def hold_ctrl(self, env_id: int, gripper_width: float) -> np.ndarray:
        """Controls ``[nu]`` that hold env ``env_id`` at its setpoint (written into
        ``data.ctrl`` at reset, so the first sensor readings see a robot at rest)."""
        ctrl = np.zeros(self.nu)
        if self.mode == "joint_position":
            ctrl[:7] = self.joint_setpoint[env_id]
        elif self.mode in CARTESIAN_MODES:
            target = servo_coordinates(self.setpoint_pos[env_id], self.setpoint_quat[env_id])
            if self.mode == "ee_delta":
                ctrl[:6] = target
            else:
                k = stiffness_from_action(np.zeros(6))
                ctrl[:18] = np.concatenate([k * target, k, damping_for(k)])
        ctrl[-1] = gripper_width if self.gripper else self.fixed_gripper_width
        return ctrl

    def __call__(self, action: np.ndarray, q: np.ndarray, ee_pos: np.ndarray, ee_quat: np.ndarray) -> np.ndarray:
        ctrl = np.zeros((action.shape[0], self.nu))
        a = action
        if self.mode == "joint_torque":
            ctrl[:, :7] = a[:, :7] * C.TORQUE_LIMIT
        elif self.mode == "joint_position":
            target = np.clip(
                self.joint_setpoint + a[:, :7] * C.JOINT_DELTA_MAX, q - C.JOINT_DELTA_MAX, q + C.JOINT_DELTA_MAX
            )
            self.joint_setpoint = np.clip(target, C.JOINT_LOWER, C.JOINT_UPPER)
            ctrl[:, :7] = self.joint_setpoint
        else:
            self.setpoint_pos, self.setpoint_quat = cartesian_setpoint(
                self.setpoint_pos,
                self.setpoint_quat,
                ee_pos,
                ee_quat,
                a[:, 0:3] * C.EE_DELTA_POS_MAX,
                a[:, 3:6] * C.EE_DELTA_ROT_MAX,
                self.workspace_low,
                self.workspace_high,
                self.rot_limit,
            )
            target = servo_coordinates(self.setpoint_pos, self.setpoint_quat)
            if self.mode == "ee_delta":
                ctrl[:, :6] = target
            else:
                k = stiffness_from_action(a[:, 6:12])
                ctrl[:, 0:6] = k * target  # setpoint actuators: u = K x_target
                ctrl[:, 6:12] = k  # spring actuators: F = -x * K
                ctrl[:, 12:18] = damping_for(k)  # damper actuators: F = -xdot * D
        if self.gripper:
            ctrl[:, -1] = (a[:, -1] + 1.0) * 0.5 * C.GRIP_WIDTH_MAX
        else:
            ctrl[:, -1] = self.fixed_gripper_width
        return ctrl

    def setpoint_offset(self, q: np.ndarray, ee_pos: np.ndarray, ee_quat: np.ndarray) -> np.ndarray:
        """Setpoint minus measured state: Cartesian modes ``[B, 6]`` (translation in m, then
        the world-frame rotation vector from measured to commanded orientation);
        joint_position ``[B, 7]`` (rad); joint_torque ``[B, 0]``."""
        if self.mode == "joint_position":
            return self.joint_setpoint - q
        if self.mode == "joint_torque":
            return np.zeros((len(q), 0))
        rot = quat_to_rotvec(quat_mul(self.setpoint_quat, quat_conj(ee_quat)))
        return np.concatenate([self.setpoint_pos - ee_pos, rot], axis=1)
