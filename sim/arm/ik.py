"""Damped-least-squares inverse kinematics for placing the arm at reset."""

from __future__ import annotations

import mujoco
import numpy as np

from sim2real.sim.arm import constants as C


def solve_ik(
    model: mujoco.MjModel,
    data: mujoco.MjData,
    target_pos: np.ndarray,
    target_quat: np.ndarray,
    q0: np.ndarray = C.HOME_QPOS,
    site: str = "ee",
    iterations: int = 100,
    tolerance: float = 1e-4,
    damping: float = 1e-3,
    posture_gain: float = 0.05,
) -> np.ndarray:
    """Joint angles putting ``site`` at ``target_pos`` with orientation ``target_quat``.

    Uses ``data`` as scratch (its arm ``qpos`` is overwritten; other coordinates are
    kept) and leaves the solution in ``data.qpos[:7]``. A small pull toward ``q0`` in the
    null space keeps the elbow near the start posture. Raises ``RuntimeError`` when the
    pose is out of reach.
    """
    site_id = model.site(site).id
    data.qpos[:7] = q0
    jac_pos = np.zeros((3, model.nv))
    jac_rot = np.zeros((3, model.nv))
    err = np.zeros(6)
    site_quat = np.zeros(4)
    neg = np.zeros(4)
    diff = np.zeros(4)
    for _ in range(iterations):
        mujoco.mj_kinematics(model, data)
        err[:3] = target_pos - data.site_xpos[site_id]
        mujoco.mju_mat2Quat(site_quat, data.site_xmat[site_id])
        mujoco.mju_negQuat(neg, site_quat)
        mujoco.mju_mulQuat(diff, target_quat, neg)
        mujoco.mju_quat2Vel(err[3:], diff, 1.0)
        if np.linalg.norm(err) < tolerance:
            return data.qpos[:7].copy()
        mujoco.mj_comPos(model, data)
        mujoco.mj_jacSite(model, data, jac_pos, jac_rot, site_id)
        jac = np.vstack([jac_pos, jac_rot])[:, :7]
        jjt = jac @ jac.T + damping * np.eye(6)
        dq = jac.T @ np.linalg.solve(jjt, err)
        # Null-space posture term: (I - J^+ J) with the exact pseudo-inverse pulls toward q0
        # without moving the site (the damped inverse would leave a fixed residual).
        dq += posture_gain * (np.eye(7) - np.linalg.pinv(jac) @ jac) @ (q0 - data.qpos[:7])
        data.qpos[:7] = np.clip(data.qpos[:7] + dq, C.JOINT_LOWER, C.JOINT_UPPER)
    raise RuntimeError(
        f"IK did not converge for site {site!r} at {np.round(target_pos, 3)} (residual {np.linalg.norm(err):.2e})"
    )
