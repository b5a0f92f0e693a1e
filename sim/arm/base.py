"""Shared machinery of every arm task: model building, action modes, observations, resets.

A task subclasses :class:`ArmTask`, adds its objects in :meth:`ArmTask.add_scene`, places
them in :meth:`ArmTask.reset_task`, and implements its observation blocks and
:meth:`ArmTask.evaluate_task`; the base class adds the robot's observation blocks, the
action modes, the setpoint bookkeeping at resets and the joint-overspeed fault.
"""

from __future__ import annotations

import abc
from typing import Any, ClassVar

import mujoco
import numpy as np

from sim2real.sim.arm import constants as C
from sim2real.sim.arm.control import ACTION_LAYOUTS, ActionMapper
from sim2real.sim.arm.model import ACTION_MODES, CARTESIAN_AXES, CARTESIAN_MODES, load_arm_spec
from sim2real.sim.arm.passivity import ArmEnergyTank
from sim2real.sim.arm.randomize import ArmRandomization
from sim2real.sim.arm.rotations import quat_to_rot6d
from sim2real.sim.core.energy_tank import TankParams
from sim2real.sim.core.errors import ConfigError
from sim2real.sim.core.task import PhysicsBatch, StepResult, Task


def add_net_contact_sensor(spec: mujoco.MjSpec, name: str, body1: str, body2: str | None = None) -> None:
    """Contact sensor ``[count, net force xyz (world frame)]`` on ``body1``'s contacts
    (with ``body2`` only, when given)."""
    sensor = spec.add_sensor(
        name=name, type=mujoco.mjtSensor.mjSENS_CONTACT, objtype=mujoco.mjtObj.mjOBJ_BODY, objname=body1
    )
    if body2 is not None:
        sensor.reftype = mujoco.mjtObj.mjOBJ_BODY
        sensor.refname = body2
    # intprm: data fields bitmask (found=1 | force=2), reduction (3 = netforce), slots.
    sensor.intprm[:3] = [3, 3, 1]


class ArmTask(Task):
    """Base of the arm tasks (7-DoF arm, parallel gripper, table)."""

    robot: ClassVar[str] = "arm"
    action_modes: ClassVar[tuple[str, ...]] = ACTION_MODES
    physics_dt: ClassVar[float] = C.PHYSICS_DT
    control_dt: ClassVar[float] = C.CONTROL_DT
    render_camera: ClassVar[str | None] = "front"
    dr_class: ClassVar[type[ArmRandomization]] = ArmRandomization
    uses_gripper: ClassVar[bool] = True
    """False when the task keeps the gripper closed on a tool (no gripper action then)."""
    fixed_gripper_width: ClassVar[float] = 0.0
    """Width command (m) when the task has no gripper action."""
    init_joint_noise: float = 0.05
    """Uniform noise (rad) on the initial joint angles."""
    fault_penalty: ClassVar[float] = C.FAULT_PENALTY
    """Reward penalty of the joint-overspeed fault (it also ends the episode)."""
    workspace_low: ClassVar[np.ndarray] = C.WORKSPACE_LOW
    workspace_high: ClassVar[np.ndarray] = C.WORKSPACE_HIGH
    """Box the Cartesian setpoint of the controlled site is clipped into (world frame)."""

    impedance_options: ClassVar[tuple[str, ...]] = ("energy_tank", "passivity_filter")
    """Options of every arm task in ``ee_impedance`` mode: the energy tank's levels
    (a mapping of ``initial``/``minimum``/``maximum`` in J) and whether the passivity
    filter shrinks commands the tank cannot pay for (see ``passivity.py``)."""

    @classmethod
    def known_options(cls) -> list[str]:
        return sorted(set(super().known_options()) | set(cls.impedance_options))

    def __init__(self, num_envs: int, action_mode: str | None = None, tilt_limit: float | None = None,
                 init_joint_noise: float | None = None, **options: Any) -> None:
        """``tilt_limit``: largest tilt (rad) of a Cartesian mode's setpoint from
        gripper-down, about the world x and y axes (default ``ROT_LIMIT``'s 0.8; 0 keeps
        the gripper pointing straight down, turning only about the vertical). It is a
        task option, so it travels with a policy's metadata and binds wherever the
        task's action mapper runs: training, evaluation, the emulators and deployment.
        A vision reward's policies turned the wrist to point its camera at the target
        from afar (docs/vlm_rewards.md); with 0 they cannot.

        ``init_joint_noise``: half-width (rad) of the uniform noise on each initial joint
        angle (default the class's ``init_joint_noise``, 0.05). Wide starts (0.5) show a
        reward model the arm in postures a scripted reach never takes, which the
        policies trained on it otherwise find (docs/vlm_rewards.md)."""
        impedance = {k: options[k] for k in self.impedance_options if k in options}
        super().__init__(num_envs, action_mode, **options)
        self.energy: ArmEnergyTank | None = None
        if self.action_mode == "ee_impedance":
            flag = impedance.get("passivity_filter", False)
            if not isinstance(flag, bool):
                raise ConfigError("passivity_filter", f"must be true or false, got {flag!r}")
            self.energy = ArmEnergyTank(num_envs, TankParams.from_dict(impedance.get("energy_tank")), flag)
            self.wants_substeps = True
        elif impedance:
            raise ConfigError(next(iter(impedance)), "applies to the ee_impedance action mode only")
        if init_joint_noise is not None:
            self.init_joint_noise = _angle_option("init_joint_noise", init_joint_noise, np.pi)
        rot_limit = C.ROT_LIMIT.copy()
        if tilt_limit is not None:
            rot_limit[:2] = _angle_option("tilt_limit", tilt_limit, float(C.ROT_LIMIT[0]))
            if self.action_mode not in CARTESIAN_MODES:
                raise ConfigError("tilt_limit", "applies to the Cartesian action modes only")
        self.mapper = ActionMapper(
            self.action_mode,
            num_envs,
            self.uses_gripper,
            self.fixed_gripper_width,
            self.workspace_low,
            self.workspace_high,
            rot_limit,
        )
        self.action_size = sum(n for _, n in self.action_layout())
        self.model: mujoco.MjModel | None = None

    # -- model ---------------------------------------------------------------
    def add_scene(self, spec: mujoco.MjSpec) -> None:
        """Add the task's objects, markers and sensors to the arm spec."""

    def on_model(self, model: mujoco.MjModel) -> None:
        """Cache ids/addresses of task objects in the compiled model."""

    def build_model(self) -> mujoco.MjModel:
        spec = load_arm_spec(self.action_mode)
        self.add_scene(spec)
        model = spec.compile()
        self.model = model
        self._sensor = {
            model.sensor(i).name: slice(model.sensor_adr[i], model.sensor_adr[i] + model.sensor_dim[i])
            for i in range(model.nsensor)
        }
        self._ee_site = model.site("ee").id
        if self.energy is not None:
            first = model.sensor_adr[model.sensor(f"imp_{CARTESIAN_AXES[0]}_vel").id]
            self._axis_velocity = slice(first, first + 6)
        self.on_model(model)
        return model

    def sensor(self, phys: PhysicsBatch, name: str) -> np.ndarray:
        """Sensor ``name`` for the batch, ``[B, dim]``."""
        return phys.sensordata[:, self._sensor[name]]

    # -- spaces --------------------------------------------------------------
    def action_layout(self) -> list[tuple[str, int]]:
        layout = list(ACTION_LAYOUTS[self.action_mode])
        return [*layout, ("gripper", 1)] if self.uses_gripper else layout

    def task_observation_layout(self) -> list[tuple[str, int]]:
        """Task blocks, placed between the robot state and the last action."""
        return []

    def observation_layout(self) -> list[tuple[str, int]]:
        setpoint = [("setpoint_offset", self.mapper.setpoint_size)] if self.mapper.setpoint_size else []
        return [
            ("joint_pos", 7),
            ("joint_vel", 7),
            ("ee_pos", 3),
            ("ee_rot6d", 6),
            ("gripper_width", 1),
            *setpoint,
            *self.task_observation_layout(),
            ("last_action", self.action_size),
        ]

    def task_observation_noise(self) -> dict[str, float]:
        """Noise std at scale 1 per task block name (default 0)."""
        return {}

    def observation_noise(self) -> np.ndarray:
        std = {
            "joint_pos": 0.002,
            "joint_vel": 0.03,
            "ee_pos": 0.002,
            "ee_rot6d": 0.005,
            "gripper_width": 0.001,
            "setpoint_offset": 0.002,
        }
        std.update(self.task_observation_noise())
        return np.concatenate([np.full(n, std.get(name, 0.0)) for name, n in self.observation_layout()])

    def task_privileged_layout(self) -> list[tuple[str, int]]:
        return []

    def privileged_layout(self) -> list[tuple[str, int]]:
        return [("wrist_force", 3), ("wrist_torque", 3), ("finger_touch", 2), *self.task_privileged_layout()]

    # -- robot state ---------------------------------------------------------
    def ee_pos(self, phys: PhysicsBatch) -> np.ndarray:
        """Controlled site (fingertip centre, or the task's tool tip) position, ``[B, 3]``."""
        return self.sensor(phys, "ee_pos")

    def ee_quat(self, phys: PhysicsBatch) -> np.ndarray:
        return self.sensor(phys, "ee_quat")

    def gripper_width(self, phys: PhysicsBatch) -> np.ndarray:
        return phys.qpos[:, 7:9].sum(axis=1, keepdims=True)

    # -- control -------------------------------------------------------------
    def action_to_ctrl(self, action: np.ndarray, phys: PhysicsBatch) -> np.ndarray:
        # `action` is what the actuators receive (after latency); the observation reports
        # the policy's own last action (phys.last_action), as a real robot's policy knows it.
        ctrl = self.mapper(action, phys.qpos[:, :7], self.ee_pos(phys), self.ee_quat(phys))
        if self.energy is not None:
            ctrl = self.energy.command(ctrl, self.mapper, self.ee_pos(phys), self.ee_quat(phys))
        return ctrl

    def on_substeps(self, sensordata: np.ndarray, dt: float) -> None:
        if self.energy is not None:
            self.energy.substeps(sensordata[:, :, self._axis_velocity], dt)

    # -- observations ----------------------------------------------------------
    def task_observe(self, phys: PhysicsBatch) -> np.ndarray:
        return np.zeros((phys.batch_size, 0))

    def observe(self, phys: PhysicsBatch) -> np.ndarray:
        ee_pos, ee_quat, q = self.ee_pos(phys), self.ee_quat(phys), phys.qpos[:, :7]
        return np.concatenate(
            [
                q,
                phys.qvel[:, :7],
                ee_pos,
                quat_to_rot6d(ee_quat),
                self.gripper_width(phys),
                self.mapper.setpoint_offset(q, ee_pos, ee_quat),
                self.task_observe(phys),
                phys.last_action,
            ],
            axis=1,
        )

    def task_privileged(self, phys: PhysicsBatch) -> np.ndarray:
        return np.zeros((phys.batch_size, 0))

    def privileged(self, phys: PhysicsBatch) -> np.ndarray:
        touch = np.concatenate([self.sensor(phys, "touch_left"), self.sensor(phys, "touch_right")], axis=1)
        return np.concatenate(
            [self.sensor(phys, "wrist_force"), self.sensor(phys, "wrist_torque"), touch, self.task_privileged(phys)],
            axis=1,
        )

    # -- evaluation ------------------------------------------------------------
    @abc.abstractmethod
    def evaluate_task(self, phys: PhysicsBatch, action: np.ndarray) -> StepResult:
        """Task reward, termination, success and metrics."""

    def evaluate(self, phys: PhysicsBatch, action: np.ndarray) -> StepResult:
        result = self.evaluate_task(phys, action)
        # The real arm stops itself (a "reflex") when a joint overspeeds; so does the sim,
        # as a failed episode. Only reachable in joint_torque mode with large torques.
        speed_ratio = np.max(np.abs(phys.qvel[:, :7]) / C.VELOCITY_LIMIT, axis=1)
        fault = speed_ratio > C.FAULT_SPEED_RATIO
        result.terminated = result.terminated | fault
        result.success = result.success & ~fault
        result.reward = result.reward - self.fault_penalty * fault
        result.metrics["joint_speed_ratio"] = speed_ratio
        if self.energy is not None:
            result.metrics.update(self.energy.metrics())
        return result

    # -- resets ----------------------------------------------------------------
    @abc.abstractmethod
    def reset_task(self, env_id: int, model: mujoco.MjModel, data: mujoco.MjData, rng: np.random.Generator) -> None:
        """Write the env's initial arm/object state (use :meth:`place_arm`) and sample its
        task variables."""

    def reset_scene(self, env_id: int, model: mujoco.MjModel, data: mujoco.MjData, rng: np.random.Generator) -> None:
        """What a person does between a real arm's episodes: the objects and targets as at
        an episode's start, the arm left where it is (it is never teleported). The
        emulators of a real arm call this; a task whose tool lives in the hand puts it
        back there."""
        scratch = mujoco.MjData(model)
        self.reset_task(env_id, model, scratch, rng)
        arm_q, arm_v = 9, 9  # seven joints and two fingers come first (place_arm)
        data.qpos[arm_q:] = scratch.qpos[arm_q:]
        data.qvel[arm_v:] = 0.0
        data.mocap_pos[:] = scratch.mocap_pos
        data.mocap_quat[:] = scratch.mocap_quat

    def reset_env(self, env_id: int, model: mujoco.MjModel, data: mujoco.MjData, rng: np.random.Generator) -> None:
        self.reset_task(env_id, model, data, rng)
        mujoco.mj_kinematics(model, data)
        q = data.qpos[:7].copy()
        quat = np.zeros(4)
        mujoco.mju_mat2Quat(quat, data.site_xmat[self._ee_site])
        self.mapper.reset(env_id, q, data.site_xpos[self._ee_site].copy(), quat)
        data.ctrl[:] = self.mapper.hold_ctrl(env_id, float(data.qpos[7:9].sum()))
        if self.energy is not None:
            self.energy.reset(env_id, self.mapper.setpoint_pos[env_id], self.mapper.setpoint_quat[env_id], data.ctrl)
        if self.action_mode in CARTESIAN_MODES:
            # Null-space springs hold the start posture (as Franka's Cartesian impedance
            # example holds its initial q), so they exert no force at the start pose.
            model.qpos_spring[:7] = q

    def place_arm(
        self,
        data: mujoco.MjData,
        rng: np.random.Generator,
        qpos: np.ndarray | None = None,
        finger: float = 0.02,
        noise: bool = True,
    ) -> None:
        """Arm at ``qpos`` (default HOME_QPOS) plus uniform joint noise, each finger at ``finger``."""
        q = C.HOME_QPOS if qpos is None else qpos
        if noise:
            q = q + rng.uniform(-self.init_joint_noise, self.init_joint_noise, 7)
        data.qpos[:7] = np.clip(q, C.JOINT_LOWER, C.JOINT_UPPER)
        data.qpos[7:9] = finger


def _angle_option(name: str, value: Any, high: float) -> float:
    """A task option that is an angle in ``[0, high]`` rad, as a float (else ``ConfigError``)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= value <= high:
        raise ConfigError(name, f"must be a number in [0, {high:.4g}] rad, got {value!r}")
    return float(value)
