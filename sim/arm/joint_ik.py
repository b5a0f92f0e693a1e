"""An arm's own kinematics for a joint-position interface: forward kinematics of the
fingertip (or flange) site and one damped-least-squares differential IK step, both on the
arm's MuJoCo model from ``sim/arm`` (the model the policy was trained on).

A joint-position interface takes joint positions, a policy commands end-effector
velocities: the ros2_control backends close that gap on the host (as MoveIt Servo does
for a real arm), and the simulated UR5e runs the same step in its ``ee_delta`` mode
(:mod:`.ur5e_task`), so the simulator and the robot's backend turn a command into joint
targets by one law. Using the simulator's own model means the pose the backend reports
(``ee_pose``) is the pose the simulator's sensor would report for the same joint angles,
which ``tests/hardware/test_ros2_control_kinematics.py`` checks.

The same code serves every arm with joint position control: a :class:`JointChain` names
the model and the limits (the Franka-scale arm's by default; the UR5e's:
:func:`ur5e_chain`).

Not thread-safe: every :class:`ArmKinematics` owns one ``MjData`` scratch; make one
per thread.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import mujoco
import numpy as np

from sim2real.sim.arm import constants as C
from sim2real.sim.arm import ur5e
from sim2real.sim.arm.model import load_arm_spec
from sim2real.sim.arm.rotations import quat_conj, quat_mul, quat_to_rotvec


@functools.cache
def arm_model() -> mujoco.MjModel:
    """The arm's model (joint-position actuators; compiled once per process, read-only)."""
    return load_arm_spec("joint_position").compile()


@dataclass(frozen=True)
class JointChain:
    """An arm's model and limits as its IK needs them: the first ``len(lower)`` joints of
    ``model`` are the arm's."""

    model: mujoco.MjModel
    lower: np.ndarray
    upper: np.ndarray
    velocity_limit: np.ndarray
    """rad/s per joint."""


@functools.cache
def franka_chain() -> JointChain:
    """The Franka-scale arm (7 joints; the simulated arm's model and limits)."""
    return JointChain(arm_model(), C.JOINT_LOWER, C.JOINT_UPPER, C.VELOCITY_LIMIT)


@functools.cache
def ur5e_chain() -> JointChain:
    """The UR5e (6 joints, :mod:`sim2real.sim.arm.ur5e`)."""
    return JointChain(ur5e.load_ur5e_spec().compile(), ur5e.JOINT_LOWER, ur5e.JOINT_UPPER, ur5e.VELOCITY_LIMIT)


@dataclass
class IkConfig:
    """How one differential IK step trades accuracy for safety."""

    damping: float = 0.05
    """Damping ``lambda`` of ``J^T (J J^T + lambda^2 I)^-1``: bounds joint steps near
    singularities (m; the rotation rows are scaled by ``rotation_weight``)."""
    rotation_weight: float = 0.5
    """Metres per radian when position and orientation errors share one least-squares
    problem (a fingertip 0.5 m from the wrist moves this much per radian)."""
    iterations: int = 4
    """Newton iterations per step (the target moves <= 5 cm per control period, so a
    few suffice; more only cost time)."""
    tolerance: float = 1e-4
    """Stop iterating below this weighted Cartesian error (m)."""
    posture_gain: float = 0.1
    """Null-space pull per step toward the reference posture (the redundant elbow DoF,
    held like the simulator's null-space springs hold the start posture)."""
    limit_margin: float = 0.02
    """Radians kept clear of every joint limit (Franka's own limit reflex trips at the
    limit itself)."""
    velocity_scale: float = 0.9
    """Fraction of each joint's velocity limit one step may use."""


class ArmKinematics:
    """FK of the ``ee`` site and differential IK over the arm's joints (the Franka-scale
    arm's 7 unless ``chain`` says otherwise)."""

    def __init__(self, config: IkConfig | None = None, site: str = "ee", chain: JointChain | None = None) -> None:
        self.config = config or IkConfig()
        chain = chain or franka_chain()
        self.model = chain.model
        self.n = len(chain.lower)
        self.velocity_limit = chain.velocity_limit
        self.data = mujoco.MjData(self.model)
        self.site = self.model.site(site).id
        self._body = int(self.model.site_bodyid[self.site])
        self.lower = chain.lower + self.config.limit_margin
        self.upper = chain.upper - self.config.limit_margin
        self._jp = np.zeros((3, self.model.nv))
        self._jr = np.zeros((3, self.model.nv))

    def _set(self, q: np.ndarray) -> None:
        self.data.qpos[:self.n] = q
        mujoco.mj_kinematics(self.model, self.data)

    def _pose(self) -> tuple[np.ndarray, np.ndarray]:
        pos = self.data.site_xpos[self.site].copy()
        # As MuJoCo's framequat sensor computes it (body quaternion times the site's), so
        # the sign matches the simulator's ee_quat exactly.
        quat = np.zeros(4)
        mujoco.mju_mulQuat(quat, self.data.xquat[self._body], self.model.site_quat[self.site])
        return pos, quat

    def forward(self, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Fingertip position (m, world) and orientation (w, x, y, z) at joint angles ``q``."""
        self._set(np.asarray(q, dtype=np.float64)[:self.n])
        return self._pose()

    def error(self, q: np.ndarray, pos: np.ndarray, quat: np.ndarray) -> np.ndarray:
        """``[dx, dy, dz, rx, ry, rz]``: target minus the pose at ``q`` (world-frame
        rotation vector from the current to the target orientation)."""
        p, r = self.forward(q)
        return np.concatenate([pos - p, quat_to_rotvec(quat_mul(quat, quat_conj(r)))])

    def jacobian(self, q: np.ndarray) -> np.ndarray:
        """``[6, n]`` site Jacobian (linear rows, then angular, world frame)."""
        self._set(q)
        mujoco.mj_comPos(self.model, self.data)
        mujoco.mj_jacSite(self.model, self.data, self._jp, self._jr, self.site)
        return np.vstack([self._jp, self._jr])[:, :self.n]

    def step(self, q: np.ndarray, pos: np.ndarray, quat: np.ndarray, dt: float,
             posture: np.ndarray | None = None) -> np.ndarray:
        """Joint angles moving the fingertip from its pose at ``q`` toward ``(pos, quat)``
        within one period ``dt``: every joint within its limits (less the margin) and
        within ``velocity_scale * VELOCITY_LIMIT * dt`` of ``q`` (a step too fast for a
        joint is scaled down as a whole, keeping its direction). Never raises: an
        unreachable target gives the closest feasible step (a singular arm stays put)."""
        cfg = self.config
        q0 = np.clip(np.asarray(q, dtype=np.float64)[:self.n], self.lower, self.upper)
        step_max = cfg.velocity_scale * self.velocity_limit * dt
        w = np.array([1.0, 1.0, 1.0, cfg.rotation_weight, cfg.rotation_weight, cfg.rotation_weight])
        qk = q0.copy()
        for _ in range(max(1, cfg.iterations)):
            e = self.error(qk, pos, quat) * w
            if float(np.linalg.norm(e)) < cfg.tolerance:
                break
            jac = self.jacobian(qk) * w[:, None]
            dq = jac.T @ np.linalg.solve(jac @ jac.T + cfg.damping**2 * np.eye(6), e)
            if posture is not None:
                null = np.eye(self.n) - np.linalg.pinv(jac) @ jac
                dq += cfg.posture_gain * null @ (np.asarray(posture)[:self.n] - qk)
            # Too fast for a joint: the whole step shrinks, so the hand still moves along
            # the commanded direction, only slower (clipping per joint would bend its path).
            delta = qk + dq - q0
            ratio = float(np.max(np.abs(delta) / step_max))
            qk = np.clip(q0 + (delta / ratio if ratio > 1.0 else delta), self.lower, self.upper)
        if not np.all(np.isfinite(qk)):  # a degenerate solve: stay where we are
            return q0
        return qk


def within_reach(q_target: np.ndarray, q_measured: np.ndarray,
                 delta_max: np.ndarray = C.JOINT_DELTA_MAX) -> np.ndarray:
    """``q_target`` at most one period's motion (``delta_max``: the velocity limits times
    the period) ahead of the measured
    joints, as the simulator bounds its setpoints, so a blocked arm winds up no force.
    Scaled back as a whole toward the measured joints, never clipped joint by joint: a
    per-joint clip changes the direction of the step and so bends the hand's path (a
    15 cm move along x through the emulated arm sank 1-4 cm; scaled, 0.2-0.6 cm)."""
    ahead = q_target - q_measured
    ratio = float(np.max(np.abs(ahead) / delta_max))
    return q_measured + ahead / ratio if ratio > 1.0 else q_target
