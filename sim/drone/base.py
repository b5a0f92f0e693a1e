"""What every quadrotor task shares: model loading, action modes, the inner
rate loop, the common observation, crash detection and start states.

Action modes:

``ctbr`` (default): collective thrust and body rates, ``[-1, 1]^4``. Thrust
    ``(a0 + 1) / 2 * 0.6 N``; rates ``a1..3 * (6, 6, 3) rad/s``. A body-rate PID
    (:mod:`sim2real.sim.drone.rate_control`) runs every ``inner_dt`` (250 Hz) and
    mixes to rotor thrusts. Learned quadrotor controllers transfer best with this
    interface (Kaufmann et al., ICRA 2022), so it is the default.
``ctbr_residual``: ``ctbr`` commands computed as ``clip(pid + residual_scale * a)``,
    where ``pid`` is the cascaded position PID
    (:mod:`sim2real.sim.drone.position_control`) on the current observation: the
    policy learns corrections to a working controller (residual policy learning,
    Johannink et al., ICRA 2019; Silver et al., 2018). The sum is what the actuation
    latency delays, as when the policy node sends it to a robot. With
    ``residual_tilt_gate=(full, zero)`` (degrees) the residual's authority fades
    linearly from full at ``full`` degrees of tilt to none at ``zero``, so a tilted
    drone is recovered by the PID alone.
``velocity``: a world-frame velocity setpoint ``[-1, 1]^3`` times the airframe's speed
    limits (:attr:`~sim2real.sim.drone.airframe.Airframe.max_speed`), flown by a
    velocity loop (:class:`~sim2real.sim.drone.position_control.VelocityControl`) and the
    body-rate PID every ``inner_dt``, the heading held: what PX4 does with an offboard
    velocity setpoint. Resting on the ground and asked for no climb, the
    motors idle, as PX4's land detector does (so a zero command on the pad is motors off,
    and a landing ends with them off).
``rotor_thrust``: the four rotor commands directly, ``[-1, 1]`` mapped to
    ``[0, 0.15 N]``; no inner loop.

Per-env state lives in ``[B, ...]`` arrays that :meth:`reset_env` writes; the
observation reads only ``qpos``/``qvel``/``act``/``sensordata`` and those arrays.
"""

from __future__ import annotations

import abc
from collections.abc import Callable
from typing import Any, ClassVar

import mujoco
import numpy as np

from sim2real.sim.core.errors import ConfigError
from sim2real.sim.core.layout import layout_slices
from sim2real.sim.core.task import PhysicsBatch, Task
from sim2real.sim.drone import constants as C
from sim2real.sim.drone.airframe import CRAZYFLIE, Airframe
from sim2real.sim.drone.airframe import airframe as get_airframe
from sim2real.sim.drone.position_control import CascadedPID, VelocityControl, idles_on_ground, is_landed
from sim2real.sim.drone.randomize import DroneRandomization
from sim2real.sim.drone.rate_control import BodyRateController

START_MODES = ("ground", "air", "mixed")

HOVER_COMMAND: float = CRAZYFLIE.hover_command
"""Rotor command in ``[0, 1]`` that balances the Crazyflie's nominal weight."""


def _tilt_gate(value: tuple[float, float] | list[float] | None) -> tuple[float, float] | None:
    if value is None:
        return None
    try:
        full, zero = (float(v) for v in value)
    except (TypeError, ValueError):
        raise ConfigError("residual_tilt_gate", f"must be two angles [full, zero] in degrees, got {value!r}") from None
    if not (np.isfinite(full) and np.isfinite(zero) and 0.0 <= full < zero <= 90.0):
        raise ConfigError("residual_tilt_gate", f"needs 0 <= full < zero <= 90 degrees, got {value!r}")
    return full, zero


def quat_to_mat(quat: np.ndarray) -> np.ndarray:
    """Rotation matrices ``[B, 3, 3]`` (body to world) from ``[B, 4]`` (w, x, y, z) quaternions."""
    q = quat / np.linalg.norm(quat, axis=1, keepdims=True)
    w, x, y, z = q[:, 0], q[:, 1], q[:, 2], q[:, 3]
    out = np.empty((len(q), 3, 3))
    out[:, 0, 0] = 1 - 2 * (y * y + z * z)
    out[:, 0, 1] = 2 * (x * y - w * z)
    out[:, 0, 2] = 2 * (x * z + w * y)
    out[:, 1, 0] = 2 * (x * y + w * z)
    out[:, 1, 1] = 1 - 2 * (x * x + z * z)
    out[:, 1, 2] = 2 * (y * z - w * x)
    out[:, 2, 0] = 2 * (x * z - w * y)
    out[:, 2, 1] = 2 * (y * z + w * x)
    out[:, 2, 2] = 1 - 2 * (x * x + y * y)
    return out


def yaw_quat(yaw: float) -> np.ndarray:
    return np.array([np.cos(yaw / 2), 0.0, 0.0, np.sin(yaw / 2)])


def add_marker(spec: mujoco.MjSpec, name: str, rgba: tuple[float, float, float, float], tolerance: float = 0.1) -> None:
    """A visual-only mocap target (collides with nothing, weighs nothing): a small
    sphere at the point inside a faint shell of the success tolerance's radius."""
    body = spec.worldbody.add_body(name=name, mocap=True, pos=[0.0, 0.0, -1.0])
    for radius, alpha in ((0.012, 1.0), (tolerance, 0.15)):
        body.add_geom(type=mujoco.mjtGeom.mjGEOM_SPHERE, size=[radius, 0, 0], rgba=[*rgba[:3], alpha],
                      contype=0, conaffinity=0, group=1, density=0)


class DroneTask(Task):
    """Base class of the quadrotor tasks (not registered itself).

    Options:
        start: ``"ground"`` (resting on the landing pad, motors off), ``"air"``
            (near the task's start point with a small random tilt, velocity and
            motors at hover) or ``"mixed"`` (each half of the time).
        residual_scale: ``ctbr_residual`` only: the policy's share of the action range
            around the PID's action.
        residual_tilt_gate: ``ctbr_residual`` only: ``(full, zero)`` tilt angles in
            degrees, ``0 <= full < zero <= 90``; the residual counts fully up to ``full``
            degrees of tilt (angle between body z and world z), then fades linearly to
            nothing at ``zero``. ``None``: no gate. Large learned corrections at large tilts
            turned recoveries into tilt-overs under unseen disturbances; the PID alone
            recovers them (docs/BENCHMARKS.md, "Gating the residual by tilt").
        airframe: the quadrotor flown (:mod:`.airframe`): ``"crazyflie"`` (every shipped
            policy's) or ``"x500"`` (a PX4-class Holybro X500 V2); thrust, mixer and
            resting height follow it. Default: the robot's (:attr:`default_airframe`).
    """

    robot: ClassVar[str] = "drone"
    default_airframe: ClassVar[str] = "crazyflie"
    """The airframe of the task's robot (the ``x500`` robot's tasks fly the X500)."""
    action_modes: ClassVar[tuple[str, ...]] = ("ctbr", "rotor_thrust", "ctbr_residual", "velocity")
    physics_dt: ClassVar[float] = C.PHYSICS_DT
    control_dt: ClassVar[float] = C.CONTROL_DT
    inner_dt: float | None = C.INNER_DT
    render_camera: ClassVar[str | None] = "chase"
    dr_class: ClassVar[type[DroneRandomization]] = DroneRandomization
    push_dofs: ClassVar[tuple[int, int] | None] = (0, 3)  # gusts kick the world-frame linear velocity
    tolerance: ClassVar[float] = 0.10
    """m, distance counted as "at the target"."""
    success_hold_seconds: ClassVar[float] = 5.0
    crash_penalty: ClassVar[float] = 10.0

    def __init__(
        self, num_envs: int, action_mode: str | None = None, start: str = "ground", residual_scale: float = 0.3,
        residual_tilt_gate: tuple[float, float] | list[float] | None = None, airframe: str = "",
        **options: Any,
    ) -> None:
        super().__init__(num_envs, action_mode, **options)
        self.airframe: Airframe = get_airframe(airframe or self.default_airframe)
        af = self.airframe
        if start not in START_MODES:
            raise ConfigError("start", f"must be one of {list(START_MODES)}, got {start!r}")
        self.start = start
        if self.action_mode == "rotor_thrust":
            self.inner_dt = None  # the engine then holds the rotor commands over the control period
        B = num_envs
        self.target = np.zeros((B, 3))
        self.prev_action = np.zeros((B, 4))
        self.time_in_tolerance = np.zeros(B)
        self.prev_vel = np.zeros((B, 3))
        self.wind = np.zeros((B, 3))
        self.mass = np.full(B, af.mass)
        self.thrust_scale = np.ones((B, 4))
        self.rate_controller = BodyRateController(B, C.INNER_DT, inertia=af.inertia, max_thrust=af.max_thrust,
                                                  mixer=af.mixer)
        if not np.isfinite(residual_scale) or not 0.0 < residual_scale <= 2.0:
            raise ConfigError("residual_scale", f"must be in (0, 2], got {residual_scale}")
        self.residual_scale = float(residual_scale)
        self.residual_tilt_gate = _tilt_gate(residual_tilt_gate)
        self._rot_zz = layout_slices(self.observation_layout())["rot_mat"].start + 8  # row-major, last entry
        self.reference: CascadedPID | None = None
        if self.action_mode == "ctbr_residual":
            self.reference = CascadedPID(B, self.observation_layout(), dt=self.control_dt, mass=af.mass,
                                         max_collective_thrust=af.max_collective_thrust)
        self.velocity_loop: VelocityControl | None = None
        if self.action_mode == "velocity":
            self.velocity_loop = VelocityControl(B, C.INNER_DT, af.mass, af.max_collective_thrust)
        self._gyro = slice(0, 3)
        self._touch = 0
        self._drone = 1

    # -- model ---------------------------------------------------------------------------
    def build_model(self) -> mujoco.MjModel:
        spec = mujoco.MjSpec.from_file(str(C.MODEL_XML))
        if self.airframe is not CRAZYFLIE:  # drone.xml is the Crazyflie's, number for number
            self.airframe.apply(spec)
        self.add_task_bodies(spec)
        model = spec.compile()
        adr = model.sensor_adr[mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_SENSOR, "gyro")]
        self._gyro = slice(int(adr), int(adr) + 3)
        self._touch = int(model.sensor_adr[mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_SENSOR, "touch")])
        self._drone = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, "drone")
        return model

    def add_task_bodies(self, spec: mujoco.MjSpec) -> None:
        """Add the task's mocap bodies (markers, gates) to the arena."""

    @staticmethod
    def mocap_index(model: mujoco.MjModel, body: str) -> int:
        return int(model.body_mocapid[mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, body)])

    # -- spaces --------------------------------------------------------------------------
    def observation_layout(self) -> list[tuple[str, int]]:
        return [("pos_error", 3), ("lin_vel", 3), ("rot_mat", 9), ("body_rates", 3),
                ("last_action", self.action_size), *self.task_observation_layout()]

    def task_observation_layout(self) -> list[tuple[str, int]]:
        """Task-specific observation blocks appended after the common ones."""
        return []

    def action_layout(self) -> list[tuple[str, int]]:
        if self.action_mode == "velocity":
            return [("velocity", 3)]
        if self.action_mode != "rotor_thrust":
            return [("collective_thrust", 1), ("body_rates", 3)]
        return [("rotor_thrust", 4)]

    @property
    def action_size(self) -> int:
        return 3 if self.action_mode == "velocity" else 4

    def privileged_layout(self) -> list[tuple[str, int]]:
        return [("wind", 3), ("mass", 1), ("motor_state", 4), ("thrust_scale", 4)]

    def observation_noise(self) -> np.ndarray:
        # Motion-capture-grade position/velocity, IMU-grade attitude and gyro.
        common = np.r_[np.full(3, 0.005), np.full(3, 0.02), np.full(9, 0.01), np.full(3, 0.05),
                       np.zeros(self.action_size)]
        extra = sum(n for _, n in self.task_observation_layout())
        return np.r_[common, np.zeros(extra)]

    # -- episode -------------------------------------------------------------------------
    def reset_env(self, env_id: int, model: mujoco.MjModel, data: mujoco.MjData, rng: np.random.Generator) -> None:
        self.wind[env_id] = model.opt.wind
        self.mass[env_id] = model.body_mass[self._drone]
        self.thrust_scale[env_id] = model.actuator_gainprm[:, 0] / self.airframe.max_thrust
        self.sample_task(env_id, data, rng)
        on_ground = self.start == "ground" or (self.start == "mixed" and rng.random() < 0.5)
        if on_ground:
            xy = rng.uniform(-0.05, 0.05, 2)
            data.qpos[:3] = [xy[0], xy[1], self.airframe.rest_height]
            data.qpos[3:7] = yaw_quat(rng.uniform(-np.pi, np.pi))
        else:
            data.qpos[:3] = self.air_start_position(env_id, rng)
            tilt = rng.normal(scale=0.08, size=2)  # ~5 deg roll/pitch
            tilt_quat = np.r_[1.0, 0.5 * tilt, 0.0]
            heading = yaw_quat(rng.uniform(-np.pi, np.pi))
            mujoco.mju_mulQuat(data.qpos[3:7], heading, tilt_quat / np.linalg.norm(tilt_quat))
            data.qvel[:3] = rng.uniform(-0.2, 0.2, 3)
            data.qvel[3:6] = rng.uniform(-0.3, 0.3, 3)
            data.act[:] = self.airframe.hover_command
        self.time_in_tolerance[env_id] = 0.0
        self.prev_vel[env_id] = 0.0
        self.prev_action[env_id] = 0.0
        self.rate_controller.reset(env_id)
        if self.reference is not None:
            self.reference.reset(env_id)
        if self.velocity_loop is not None:
            self.velocity_loop.reset(env_id)

    def air_start_position(self, env_id: int, rng: np.random.Generator) -> np.ndarray:
        """Start position of an ``air`` start (default: within 0.4 m of the target, at
        least 0.3 m up). Called after :meth:`sample_task`."""
        pos = self.target[env_id] + rng.uniform(-0.4, 0.4, 3)
        pos[2] = max(pos[2], 0.3)
        return pos

    @abc.abstractmethod
    def sample_task(self, env_id: int, data: mujoco.MjData, rng: np.random.Generator) -> None:
        """Sample targets into the per-env arrays and place the mocap bodies (runs
        first in :meth:`reset_env`, before the start state is drawn)."""

    # -- control -------------------------------------------------------------------------
    def action_to_ctrl(self, action: np.ndarray, phys: PhysicsBatch) -> np.ndarray:
        # The engine updates phys.last_action after the physics, so here it still holds the
        # policy's previous action: keep it for the action-rate penalty.
        self.prev_action = phys.last_action.copy()
        if self.action_mode == "rotor_thrust":
            return 0.5 * (action + 1.0)
        if self.action_mode == "velocity":
            return action * self.airframe.speed_scale
        collective = 0.5 * (action[:, 0] + 1.0) * self.airframe.max_collective_thrust
        return np.column_stack([collective, action[:, 1:] * C.MAX_BODY_RATE])

    def _with_reference(self, action: np.ndarray, obs: np.ndarray) -> np.ndarray:
        """``clip(pid(obs) + residual_scale * gate(obs) * action)``; the action itself
        without a reference."""
        if self.reference is None:
            return action
        scale = self.residual_scale * self.residual_gate(obs)[..., None]
        return np.clip(self.reference.act(obs) + scale * action, -1.0, 1.0)

    def residual_gate(self, obs: np.ndarray) -> np.ndarray:
        """Share of the residual's authority from the observed tilt, one per observation
        row (``[B]`` from ``[B, obs]``, a scalar array from one observation); 1 without a gate."""
        if self.residual_tilt_gate is None:
            return np.ones(obs.shape[:-1])
        full, zero = self.residual_tilt_gate
        # The body-to-world z-z entry is the cosine of the tilt.
        tilt = np.degrees(np.arccos(np.clip(obs[..., self._rot_zz], -1.0, 1.0)))
        return np.clip((zero - tilt) / (zero - full), 0.0, 1.0)

    def compose_action(self, action: np.ndarray, phys: PhysicsBatch) -> np.ndarray:
        return action if self.reference is None else self._with_reference(action, self.observe(phys))

    def deploy_command(
        self, action: np.ndarray, obs: np.ndarray, to_command: Callable[[np.ndarray], np.ndarray]
    ) -> np.ndarray:
        return to_command(self._with_reference(action, obs))

    def inner_control(self, setpoint: np.ndarray, phys: PhysicsBatch) -> np.ndarray:
        idle = None
        if self.velocity_loop is not None:
            setpoint, idle = self._fly_velocity(setpoint, phys)
        # The gyro, as on the real flight controller (one physics step old, see task.py).
        thrust = self.rate_controller(setpoint[:, 0], setpoint[:, 1:], phys.sensordata[:, self._gyro])
        if idle is not None and idle.any():
            thrust[idle] = 0.0
            self.rate_controller.reset(np.flatnonzero(idle))
        return thrust / self.airframe.max_thrust

    def _fly_velocity(self, velocity: np.ndarray, phys: PhysicsBatch) -> tuple[np.ndarray, np.ndarray]:
        """The velocity loop's thrust and rates (N, rad/s) for setpoints ``velocity``, and
        which drones rest landed (:func:`is_landed`) asked for no climb: PX4's land
        detector idles their motors and clears the loop's integrator."""
        assert self.velocity_loop is not None
        rot = quat_to_mat(phys.qpos[:, 3:7])
        vel = phys.qvel[:, :3]
        action = self.velocity_loop.act(velocity, vel, rot)
        idle = idles_on_ground(is_landed(self.airframe.clearance(phys.qpos[:, 2], rot), vel), velocity[:, 2])
        if idle.any():
            self.velocity_loop.reset(np.flatnonzero(idle))
        collective = 0.5 * (action[:, 0] + 1.0) * self.airframe.max_collective_thrust
        return np.column_stack([collective, action[:, 1:] * C.MAX_BODY_RATE]), idle

    # -- observation ---------------------------------------------------------------------
    def observe(self, phys: PhysicsBatch) -> np.ndarray:
        B = phys.batch_size
        rot = quat_to_mat(phys.qpos[:, 3:7]).reshape(B, 9)
        common = [self.target - phys.qpos[:, :3], phys.qvel[:, :3], rot, phys.qvel[:, 3:6], phys.last_action]
        return np.concatenate([*common, *self.task_observation(phys)], axis=1)

    def task_observation(self, phys: PhysicsBatch) -> list[np.ndarray]:
        return []

    def privileged(self, phys: PhysicsBatch) -> np.ndarray:
        return np.concatenate([self.wind, self.mass[:, None], phys.act, self.thrust_scale], axis=1)

    # -- evaluation helpers ----------------------------------------------------------------
    def detect_crash(self, phys: PhysicsBatch) -> np.ndarray:
        """Flipped, outside the geofence, touching anything above the ground (gates),
        or hitting the ground too fast: descending into the ground band faster than
        ``CRASH_SPEED``, or touching down while sliding faster than it.

        Impacts are judged on the faster of this and the previous control step's
        velocity: a hard landing can bounce or stop the drone within one 20 ms
        step, so the current velocity alone would miss it.
        """
        pos, vel = phys.qpos[:, :3], phys.qvel[:, :3]
        rot = quat_to_mat(phys.qpos[:, 3:7])
        up_z = rot[:, 2, 2]
        # By the hull's lowest corner, not its centre: an X500 tilting 6 degrees as it left
        # the pad touched it with a corner while its centre was above the band ("touching
        # something above the ground": a crash at take-off in 2 of 7 emulated runs).
        near_ground = self.airframe.clearance(pos[:, 2], rot) < C.GROUND_BAND
        touching = phys.sensordata[:, self._touch] > 0.0
        sink = np.maximum(-vel[:, 2], -self.prev_vel[:, 2])
        slide = np.maximum(np.linalg.norm(vel[:, :2], axis=1), np.linalg.norm(self.prev_vel[:, :2], axis=1))
        hard_landing = near_ground & ((sink > C.CRASH_SPEED) | (touching & (slide > C.CRASH_SPEED)))
        outside = (np.abs(pos[:, :2]).max(axis=1) > C.GEOFENCE_HALF_EXTENT) | (pos[:, 2] > C.GEOFENCE_CEILING)
        self.prev_vel = vel.copy()
        return hard_landing | (up_z < 0.0) | outside | (touching & ~near_ground)

    def update_tolerance(self, error: np.ndarray) -> np.ndarray:
        """Advance the per-env "continuously within tolerance" clock; returns it in seconds."""
        self.time_in_tolerance = np.where(error < self.tolerance, self.time_in_tolerance + self.control_dt, 0.0)
        return self.time_in_tolerance

    def smoothness_penalty(self, phys: PhysicsBatch) -> np.ndarray:
        """Small costs on body rates and action changes that keep learned flight smooth."""
        rates = np.sum(phys.qvel[:, 3:6] ** 2, axis=1)
        return 0.01 * rates + 0.05 * np.sum((phys.last_action - self.prev_action) ** 2, axis=1)

    def task_state(self, env_id: int) -> dict[str, Any]:
        return {"target": np.round(self.target[env_id], 4).tolist()}
