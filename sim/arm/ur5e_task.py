"""The UR5e's reach: bring the flange within 2 cm of a target in the reach box, commanded
as ur_robot_driver's host is (:class:`~sim2real.hardware.ros2_control.ur.UrArm`).

The robot's driver streams joint positions (``forward_position_controller``); the command
is the flange's velocity (``ee_delta``: vx vy vz in m/s, wx wy wz in rad/s, and a gripper
width the UR has no use for, carried so the command layout is the arm's). Each command
moves a Cartesian setpoint as the backend moves it (:func:`~sim2real.sim.arm.control.cartesian_setpoint`),
and one damped-least-squares IK step on the UR5e's model (:mod:`.joint_ik`, the backend's
own) turns it into the joint targets the servos track, at most one period's motion ahead
of the measured joints (:func:`~sim2real.sim.arm.joint_ik.within_reach`). So the simulated
robot and the real one turn a command into joint targets by one law; what differs is
that the backend interpolates the targets at its stream rate where the simulator jumps
to them once per period.

Observation: joint positions and velocities, the flange's position, the target relative
to it (read from the ``target`` marker, which the deployment writes from ``goal``) and
the last action. The reach box, radius and time are :mod:`.ur5e`'s.
"""

from __future__ import annotations

from typing import Any, ClassVar

import mujoco
import numpy as np

from sim2real.sim.arm import constants as ARM
from sim2real.sim.arm import ur5e as U
from sim2real.sim.arm.control import cartesian_setpoint
from sim2real.sim.arm.joint_ik import ArmKinematics, JointChain, within_reach
from sim2real.sim.core.task import PhysicsBatch, StepResult, Task

EE_DELTA_SCALE = np.r_[np.full(3, ARM.EE_DELTA_POS_MAX), np.full(3, ARM.EE_DELTA_ROT_MAX)]
"""Setpoint motion (m, rad) per control period at action 1: the arm's ``ee_delta`` scales,
which the deployment's command space (m/s, rad/s) shares with the backend."""
INIT_JOINT_NOISE = 0.05
"""rad, uniform noise on each joint of the start pose."""
CELL_CAMERAS = {
    "front": {"pos": [1.6, 0.0, 0.9], "xyaxes": [0.0, 1.0, 0.0, -0.377, 0.0, 0.926], "fovy": 55.0},
    "side": {"pos": [0.3, 1.5, 0.45], "xyaxes": [-1.0, 0.0, 0.0, 0.0, 0.0, 1.0], "fovy": 50.0},
}
"""The cell's cameras a person watches the reach through (the console's two views): the
front, looking down at the arm and the reach box, and one level across the reach box
(from the front alone a flange anywhere on the camera ray through the target looks like
it touches it)."""


class Ur5eReach(Task):
    """Dense reward ``-distance``; the episode ends when the flange is within
    ``REACH_RADIUS`` of the target (a mocap marker drawn in the reach box)."""

    robot: ClassVar[str] = "ur5e"
    name: ClassVar[str] = "reach"
    action_modes: ClassVar[tuple[str, ...]] = ("ee_delta",)
    physics_dt: ClassVar[float] = U.PHYSICS_DT
    control_dt: ClassVar[float] = U.CONTROL_DT
    episode_seconds: ClassVar[float] = U.REACH_SECONDS
    render_camera: ClassVar[str | None] = "front"

    def __init__(self, num_envs: int, action_mode: str | None = None, **options: Any) -> None:
        super().__init__(num_envs, action_mode, **options)  # it has none: the base refuses any
        self.model: mujoco.MjModel | None = None
        self._ik: ArmKinematics | None = None
        self.q_cmd = np.tile(U.HOME_QPOS, (num_envs, 1))
        """The joint targets of each environment (where its IK steps from, as the backend's)."""
        self.posture = np.tile(U.HOME_QPOS, (num_envs, 1))
        """The start posture each environment's IK pulls the null space toward."""
        self.setpoint_pos = np.zeros((num_envs, 3))
        self.setpoint_quat = np.tile([0.0, 1.0, 0.0, 0.0], (num_envs, 1))
        """The Cartesian setpoint the commands move (published as ``ee_pose_desired``)."""

    # -- model ---------------------------------------------------------------
    def build_model(self) -> mujoco.MjModel:
        spec = U.load_ur5e_spec()
        for name, cam in CELL_CAMERAS.items():
            camera = spec.worldbody.add_camera(name=name, pos=cam["pos"], fovy=cam["fovy"])
            camera.alt.type = mujoco.mjtOrientation.mjORIENTATION_XYAXES
            camera.alt.xyaxes = cam["xyaxes"]
        model = spec.compile()
        self.model = model
        self._sensor = {model.sensor(i).name: slice(model.sensor_adr[i], model.sensor_adr[i] + model.sensor_dim[i])
                        for i in range(model.nsensor)}
        self._ik = ArmKinematics(chain=JointChain(model, U.JOINT_LOWER, U.JOINT_UPPER, U.VELOCITY_LIMIT))
        return model

    def ee_pos(self, phys: PhysicsBatch) -> np.ndarray:
        """The flange's position ``[B, 3]`` (m, base frame)."""
        return phys.sensordata[:, self._sensor["ee_pos"]]

    def ee_quat(self, phys: PhysicsBatch) -> np.ndarray:
        return phys.sensordata[:, self._sensor["ee_quat"]]

    @staticmethod
    def targets(phys: PhysicsBatch) -> np.ndarray:
        """Each environment's target ``[B, 3]``: the marker's position (the only mocap body)."""
        return phys.mocap_pos[:, 0]

    # -- spaces --------------------------------------------------------------
    def action_layout(self) -> list[tuple[str, int]]:
        return [("ee_delta_pos", 3), ("ee_delta_rot", 3), ("gripper", 1)]

    def observation_layout(self) -> list[tuple[str, int]]:
        return [("joint_pos", 6), ("joint_vel", 6), ("ee_pos", 3), ("target_rel_ee", 3), ("last_action", 7)]

    def observation_noise(self) -> np.ndarray:
        std = {"joint_pos": 0.002, "joint_vel": 0.03, "ee_pos": 0.002, "target_rel_ee": 0.002}
        return np.concatenate([np.full(n, std.get(name, 0.0)) for name, n in self.observation_layout()])

    # -- control -------------------------------------------------------------
    def action_to_ctrl(self, action: np.ndarray, phys: PhysicsBatch) -> np.ndarray:
        assert self._ik is not None, "build_model() first"
        delta = np.clip(action[:, :6], -1.0, 1.0) * EE_DELTA_SCALE
        pos, quat = cartesian_setpoint(self.setpoint_pos, self.setpoint_quat, self.ee_pos(phys), self.ee_quat(phys),
                                       delta[:, :3], delta[:, 3:6])
        self.setpoint_pos, self.setpoint_quat = pos, quat
        q_meas = phys.qpos[:, :6]
        for i in range(phys.batch_size):  # one IK step per environment and control period
            q = self._ik.step(self.q_cmd[i], pos[i], quat[i], self.control_dt, self.posture[i])
            self.q_cmd[i] = within_reach(q, q_meas[i], U.JOINT_DELTA_MAX)
        return self.q_cmd.copy()

    # -- observations ----------------------------------------------------------
    def observe(self, phys: PhysicsBatch) -> np.ndarray:
        ee = self.ee_pos(phys)
        return np.concatenate([phys.qpos[:, :6], phys.qvel[:, :6], ee, self.targets(phys) - ee, phys.last_action],
                              axis=1)

    def distance(self, phys: PhysicsBatch) -> np.ndarray:
        return np.linalg.norm(self.targets(phys) - self.ee_pos(phys), axis=1)

    def evaluate(self, phys: PhysicsBatch, action: np.ndarray) -> StepResult:
        d = self.distance(phys)
        success = d < U.REACH_RADIUS
        return StepResult(reward=-d + success.astype(float), terminated=success, success=success,
                          metrics={"ee_distance": d})

    # -- resets ----------------------------------------------------------------
    def reset_env(self, env_id: int, model: mujoco.MjModel, data: mujoco.MjData, rng: np.random.Generator) -> None:
        q = U.HOME_QPOS + rng.uniform(-INIT_JOINT_NOISE, INIT_JOINT_NOISE, 6)
        data.qpos[:6], data.qvel[:6] = q, 0.0
        data.ctrl[:6] = q
        data.mocap_pos[0] = U.draw_target(rng)
        mujoco.mj_kinematics(model, data)
        site = model.site("ee").id
        quat = np.zeros(4)
        mujoco.mju_mat2Quat(quat, data.site_xmat[site])
        self.q_cmd[env_id], self.posture[env_id] = q, q
        self.setpoint_pos[env_id], self.setpoint_quat[env_id] = data.site_xpos[site], quat
