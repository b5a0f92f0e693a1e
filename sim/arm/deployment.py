"""The arm as a deployment sees it: joint states with the two fingers, the end-effector
pose and the Cartesian controller's setpoint; the target comes on ``goal``."""

from __future__ import annotations

from typing import ClassVar

import mujoco
import numpy as np

from sim2real.sim.arm import constants as C
from sim2real.sim.arm.base import ArmTask
from sim2real.sim.core.commands import CommandLayout
from sim2real.sim.core.deployment import Measurements, OperatorAxis, OperatorSpace, RobotDeployment, StateWriter
from sim2real.sim.core.task import PhysicsBatch, Task

CARTESIAN_OPERATOR = OperatorSpace(
    channel="teleop_command",
    axes=(OperatorAxis("vx", "m/s", 0.15, ("KeyW", "KeyS")), OperatorAxis("vy", "m/s", 0.15, ("KeyA", "KeyD")),
          OperatorAxis("vz", "m/s", 0.15, ("KeyR", "KeyF")), OperatorAxis("wx", "rad/s", 0.6, ("KeyL", "KeyJ")),
          OperatorAxis("wy", "rad/s", 0.6, ("KeyI", "KeyK")), OperatorAxis("wz", "rad/s", 0.6, ("KeyQ", "KeyE")),
          OperatorAxis("gripper", "m/s", 0.05, ("KeyO", "KeyC"))),
    hold=(0.0,) * 7,
)
"""What a person drives on an arm in the ``ee_delta`` space: Cartesian velocities well
below the controller's 1 m/s per unit action, rotation rates (roll and pitch to re-level
a tilted tool), and the gripper's opening speed (an arm without the driver's tool carries
the axis for the command layout)."""


ARM_TWIST = ("vx", "vy", "vz", "wx", "wy", "wz")
ARM_STIFFNESS = ("kx", "ky", "kz", "krx", "kry", "krz")
_GRIP_OFFSET = _GRIP_SCALE = C.GRIP_WIDTH_MAX / 2


def ee_delta_layout() -> CommandLayout:
    """``ee_delta``: the fingertip's velocity (vx vy vz m/s, wx wy wz rad/s) and the gripper
    width (m); shared by every arm whose commands move a setpoint by the arm's own law
    (:func:`sim2real.sim.arm.control.cartesian_setpoint`)."""
    lin, ang = C.EE_DELTA_POS_MAX / C.CONTROL_DT, C.EE_DELTA_ROT_MAX / C.CONTROL_DT
    return CommandLayout((*ARM_TWIST, "gripper"), ("m/s",) * 3 + ("rad/s",) * 3 + ("m",),
                         offset=np.r_[np.zeros(6), _GRIP_OFFSET],
                         scale=np.r_[np.full(3, lin), np.full(3, ang), _GRIP_SCALE], control_dt=C.CONTROL_DT)


class ArmDeployment(RobotDeployment[ArmTask]):
    name = "arm"
    task = "ArmReach"
    action_mode = "ee_delta"
    task_class = ArmTask
    real_backend = "ros2_control"
    joints = (*C.ARM_JOINTS, "finger_left", "finger_right")
    guarded_joints = len(C.ARM_JOINTS)  # the fingers are bounded by the gripper command
    has_ee = True
    measured = ("joint_pos", "joint_vel", "ee_pos", "ee_quat", "ee_pos_desired", "ee_quat_desired")
    observable = frozenset({"joint_pos", "joint_vel", "ee_pos", "ee_rot6d", "gripper_width", "setpoint_offset",
                            "target_rel_ee", "last_action"})
    block_inputs: ClassVar = {"target_rel_ee": "goal"}
    rest_poses: ClassVar = {"home": tuple(C.HOME_QPOS)}
    live_cameras = ("front", "wrist")
    operator = CARTESIAN_OPERATOR
    command_modes = ("ee_delta", "ee_impedance", "joint_torque")

    def command_layout(self, action_mode: str, action_scale: float | None = None) -> CommandLayout | None:
        if action_mode == "ee_delta":
            return ee_delta_layout()
        if action_mode == "ee_impedance":  # stiffnesses log-uniform: equal resolution soft and stiff
            twist = ee_delta_layout()
            k_lo = np.log([C.IMPEDANCE_POS_STIFFNESS_RANGE[0]] * 3 + [C.IMPEDANCE_ROT_STIFFNESS_RANGE[0]] * 3)
            k_hi = np.log([C.IMPEDANCE_POS_STIFFNESS_RANGE[1]] * 3 + [C.IMPEDANCE_ROT_STIFFNESS_RANGE[1]] * 3)
            return CommandLayout(
                (*ARM_TWIST, *ARM_STIFFNESS, "gripper"), ("m/s",) * 3 + ("rad/s",) * 3 + ("N/m",) * 3 + ("Nm/rad",) * 3
                + ("m",), offset=np.r_[np.zeros(6), (k_lo + k_hi) / 2, _GRIP_OFFSET],
                scale=np.r_[twist.scale[:6], (k_hi - k_lo) / 2, _GRIP_SCALE], control_dt=C.CONTROL_DT,
                log_elements=tuple(range(6, 12)))
        if action_mode == "joint_torque":
            return CommandLayout((*C.ARM_JOINTS, "gripper"), ("Nm",) * 7 + ("m",),
                                 offset=np.r_[np.zeros(7), _GRIP_OFFSET], scale=np.r_[C.TORQUE_LIMIT, _GRIP_SCALE],
                                 control_dt=C.CONTROL_DT)
        return None

    def read_task(self, task: ArmTask, p: PhysicsBatch, out: Measurements) -> None:
        out.ee_pos, out.ee_quat = task.ee_pos(p)[0].copy(), task.ee_quat(p)[0].copy()
        out.ee_pos_desired = task.mapper.setpoint_pos[0].copy()
        out.ee_quat_desired = task.mapper.setpoint_quat[0].copy()
        targets = getattr(task, "targets", None)  # the reach target (other arm tasks have no goal stream)
        if isinstance(targets, np.ndarray):
            out.goal = np.asarray(targets[0], dtype=np.float64).copy()

    def state_writer(self, task: Task, model: mujoco.MjModel) -> StateWriter:
        task = self.robot_task(task)
        sensor = {model.sensor(i).name: slice(model.sensor_adr[i], model.sensor_adr[i] + model.sensor_dim[i])
                  for i in range(model.nsensor)}
        ee_pos, ee_quat = sensor["ee_pos"], sensor["ee_quat"]
        body = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, "target")
        target = int(model.body_mocapid[body]) if body >= 0 and model.body_mocapid[body] >= 0 else None
        n = len(self.joints)
        mapper = task.mapper

        def write(p: PhysicsBatch, m: Measurements) -> None:
            p.qpos[0, :n] = m.joint_pos
            p.qvel[0, :n] = m.joint_vel
            p.sensordata[0, ee_pos] = m.ee_pos
            p.sensordata[0, ee_quat] = m.ee_quat
            if target is not None and m.goal is not None:
                p.mocap_pos[0, target] = m.goal
            mapper.setpoint_pos[0] = m.ee_pos_desired
            mapper.setpoint_quat[0] = m.ee_quat_desired

        return write
