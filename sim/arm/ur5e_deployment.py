"""The UR5e as a deployment sees it: ur_robot_driver's six joints on ``joint_states``,
the flange's pose and the backend's Cartesian setpoint (``ee_pose``, ``ee_pose_desired``);
the target comes on ``goal``. Driven by the ``ur`` backend (ur_robot_driver's
``forward_position_controller``) in the ``ee_delta`` command space."""

from __future__ import annotations

from typing import ClassVar

import mujoco

from sim2real.sim.arm import ur5e as U
from sim2real.sim.arm.deployment import CARTESIAN_OPERATOR, ee_delta_layout
from sim2real.sim.arm.ur5e_task import Ur5eReach
from sim2real.sim.core.commands import CommandLayout
from sim2real.sim.core.deployment import Measurements, RobotDeployment, StateWriter
from sim2real.sim.core.task import PhysicsBatch, Task


class Ur5eDeployment(RobotDeployment[Ur5eReach]):
    name = "ur5e"
    task = "Ur5eReach"
    action_mode = "ee_delta"
    task_class = Ur5eReach
    real_backend = "ur"
    joints = U.JOINTS
    has_ee = True
    measured = ("joint_pos", "joint_vel", "ee_pos", "ee_quat")
    observable = frozenset({"joint_pos", "joint_vel", "ee_pos", "target_rel_ee", "last_action"})
    block_inputs: ClassVar = {"target_rel_ee": "goal"}
    rest_poses: ClassVar = {"home": tuple(U.HOME_QPOS)}
    live_cameras = ("front", "side")
    operator = CARTESIAN_OPERATOR  # the gripper axis does nothing: a UR's tool is not the driver's
    command_modes = ("ee_delta",)

    def command_layout(self, action_mode: str, action_scale: float | None = None) -> CommandLayout | None:
        """The arm's ``ee_delta`` (the gripper element is carried; the UR ignores it)."""
        return ee_delta_layout() if action_mode == "ee_delta" else None

    def read_task(self, task: Ur5eReach, p: PhysicsBatch, out: Measurements) -> None:
        out.ee_pos, out.ee_quat = task.ee_pos(p)[0].copy(), task.ee_quat(p)[0].copy()
        out.ee_pos_desired, out.ee_quat_desired = task.setpoint_pos[0].copy(), task.setpoint_quat[0].copy()
        out.goal = task.targets(p)[0].copy()

    def state_writer(self, task: Task, model: mujoco.MjModel) -> StateWriter:
        task = self.robot_task(task)
        sensor = {model.sensor(i).name: slice(model.sensor_adr[i], model.sensor_adr[i] + model.sensor_dim[i])
                  for i in range(model.nsensor)}
        ee_pos, ee_quat = sensor["ee_pos"], sensor["ee_quat"]
        n = len(self.joints)

        def write(p: PhysicsBatch, m: Measurements) -> None:
            p.qpos[0, :n] = m.joint_pos
            p.qvel[0, :n] = m.joint_vel
            p.sensordata[0, ee_pos] = m.ee_pos
            p.sensordata[0, ee_quat] = m.ee_quat
            if m.goal is not None:
                p.mocap_pos[0, 0] = m.goal  # the target marker, where observe reads the target
            if m.ee_pos_desired is not None and m.ee_quat_desired is not None:
                task.setpoint_pos[0], task.setpoint_quat[0] = m.ee_pos_desired, m.ee_quat_desired

        return write
