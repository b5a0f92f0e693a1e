"""The arm as a deployment sees it: joint states with the two fingers, the end-effector
pose and the Cartesian controller's setpoint; the target comes on ``goal``."""

from __future__ import annotations

from typing import ClassVar

import mujoco
import numpy as np

from sim2real.sim.arm import constants as C
from sim2real.sim.arm.base import ArmTask
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
