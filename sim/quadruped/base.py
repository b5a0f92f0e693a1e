"""What every quadruped task shares: the model, the servo mapping, proprioception,
locomotion penalties and fall detection.

The policy drives 12 position servos that run inside MuJoCo at physics rate:
``q_target = q_default + action_scale * action``. Everything on the control path
reads ``qpos``/``qvel``/``sensordata`` only, so the same code serves one env
(``mj_step``) and a batch (``mujoco.rollout``).
"""

from __future__ import annotations

import abc
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

import mujoco
import numpy as np

from sim2real.sim.core.errors import ConfigError
from sim2real.sim.core.history import ObservationHistory
from sim2real.sim.core.layout import SignedPermutation
from sim2real.sim.core.task import PhysicsBatch, Task
from sim2real.sim.quadruped import constants as c
from sim2real.sim.quadruped import frames, rewards
from sim2real.sim.quadruped.gait import TrotReference
from sim2real.sim.quadruped.mirror import layout_mirror
from sim2real.sim.quadruped.onboard import OnboardEstimate, check_source
from sim2real.sim.quadruped.randomize import QuadrupedRandomization
from sim2real.sim.quadruped.scene import add_flat_floor, add_lighting, robot_spec

CONTACT_THRESHOLD = 1.0
"""Touch-sensor force (N) above which a foot or the trunk counts as in contact."""
MOVING_THRESHOLD = 0.1
"""Commands below this (m/s or rad/s) count as 'stand still'."""
MAX_TILT_COS = 0.5
"""A trunk tilted more than 60 degrees (gravity z in body frame above -0.5) has fallen."""

_SQUARED_TERM_STARTS = np.array([0, 1, 3, 5, 17, 29])  # see QuadrupedTask.locomotion_terms

OBSERVATION_NOISE: dict[str, float] = {
    # legged_gym's noise scales at noise_level 1, in SI units
    "base_lin_vel": 0.1,
    "base_ang_vel": 0.2,
    "projected_gravity": 0.05,
    "joint_pos": 0.01,
    "joint_vel": 1.5,
}


@dataclass
class BaseState:
    """Floating-base state of the batch, derived from ``qpos``/``qvel``."""

    pos: np.ndarray  # [B, 3] world position of the trunk origin
    quat: np.ndarray  # [B, 4]
    lin_vel: np.ndarray  # [B, 3] body frame
    ang_vel: np.ndarray  # [B, 3] body frame
    gravity: np.ndarray  # [B, 3] unit gravity in the body frame
    yaw: np.ndarray  # [B]
    joint_pos: np.ndarray  # [B, 12]
    joint_vel: np.ndarray  # [B, 12]


def _gains(name: str, value: Any) -> np.ndarray | None:
    """A servo gain option: None, one non-negative number, or 12 of them."""
    if value is None:
        return None
    try:
        gains = np.broadcast_to(np.asarray(value, dtype=float), (c.NUM_JOINTS,)).copy()
    except (TypeError, ValueError):
        raise ConfigError(name, f"must be one number or {c.NUM_JOINTS}, got {value!r}") from None
    if not np.all(np.isfinite(gains)) or np.any(gains < 0) or (name == "servo_kp" and np.any(gains == 0)):
        raise ConfigError(name, f"must be finite and {'> 0' if name == 'servo_kp' else '>= 0'}, got {value!r}")
    return gains


class QuadrupedTask(Task):
    """Base of the quadruped tasks (not registered itself).

    Options:
        action_scale: Radians of servo target per unit action (default 0.5).
        reward_weights: Overrides of :attr:`REWARD_WEIGHTS` entries (per second).
        init_joint_noise: Half-width (rad) of the uniform noise on the initial pose.
        init_velocity_noise: Half-width (m/s, rad/s) of the initial base velocity noise.
        only_positive_rewards: Clip each step's reward (all terms but termination) at
            zero, as legged_gym does (:class:`~sim2real.sim.quadruped.rewards.RewardWeights`).
        gait_frequency_hz, gait_step_height: The trot reference of the
            ``gait_residual`` action mode (:mod:`~sim2real.sim.quadruped.gait`).
        history_steps: Append the joint positions, velocities and actions the
            policy saw at the previous ``history_steps`` control steps (a
            ``history`` block, :mod:`~sim2real.sim.core.history`), so the policy
            can infer payload, friction and motor strength from how the legs
            responded. 0 (default): no history.
        history_blocks: Which observation blocks the history remembers (default
            joint_pos, joint_vel, last_action). An imported policy that reads a stack
            of whole past observations (HIMLoco) remembers all of its terms' blocks.
        servo_kp, servo_kd: The joint servos' stiffness (Nm/rad) and damping (Nm s/rad),
            one value or 12 (leg order FR, FL, RR, RL). Default: the model's (Kp 35,
            Kd 1). A policy trained with other gains (an imported one) runs with its own.
        base_velocity: ``true`` (default): ``base_lin_vel`` is the simulator's; ``estimated``:
            the Go2 backend's own leg odometry fed with the simulated lowstate each physics
            step (:mod:`~sim2real.sim.quadruped.onboard`), as the robot will give it.
        estimator_seed: Seed of that lowstate's sensor noise.

    Action modes: ``joint_pos`` (servo targets around the default pose) and, in
    tasks that command a body twist, ``gait_residual`` (the same targets added to
    a trot reference; the observation then ends with the reference's clock, and
    the air-time bonus is off because the reference sets the swing timing).
    """

    robot: ClassVar[str] = "quadruped"
    action_modes: ClassVar[tuple[str, ...]] = ("joint_pos", "gait_residual")
    physics_dt: ClassVar[float] = c.PHYSICS_DT
    control_dt: ClassVar[float] = c.CONTROL_DT
    episode_seconds: ClassVar[float] = 20.0
    render_camera: ClassVar[str | None] = "tracking"
    dr_class: ClassVar[type[QuadrupedRandomization]] = QuadrupedRandomization
    push_dofs: ClassVar[tuple[int, int] | None] = (0, 2)

    CONTROLLER_OPTIONS: ClassVar[frozenset[str]] = frozenset({
        "action_scale", "gait_frequency_hz", "gait_step_height", "history_steps", "history_blocks",
        "servo_kp", "servo_kd"})
    """Options that set how a controller's actions and observations are read, not the
    episode: a policy runs under the ones it was trained with (the oracle, in a study of a
    policy trained under others)."""

    REWARD_WEIGHTS: ClassVar[dict[str, float]] = dict(rewards.LOCOMOTION_WEIGHTS)
    TRUNK_CONTACT_ENDS_EPISODE: ClassVar[bool] = True
    """Flat and rough ground: a trunk touching anything has fallen. Confined spaces
    override it (brushing a ceiling is allowed and penalised instead)."""

    def __init__(
        self,
        num_envs: int,
        action_mode: str | None = None,
        action_scale: float = c.ACTION_SCALE,
        reward_weights: dict[str, float] | None = None,
        init_joint_noise: float = 0.1,
        init_velocity_noise: float = 0.2,
        only_positive_rewards: bool = True,
        gait_frequency_hz: float = 3.0,
        gait_step_height: float = 0.08,
        history_steps: int = 0,
        history_blocks: list[str] | None = None,
        servo_kp: float | list[float] | None = None,
        servo_kd: float | list[float] | None = None,
        base_velocity: str = "true",
        estimator_seed: int = 0,
        **options: Any,
    ) -> None:
        super().__init__(num_envs, action_mode, **options)
        try:
            self.base_velocity = check_source(base_velocity)
        except ValueError as exc:
            raise ConfigError("base_velocity", str(exc)) from None
        self.estimator_seed = int(estimator_seed)
        self.onboard: OnboardEstimate | None = None
        self.wants_substeps = self.base_velocity == "estimated"
        for name, value, high in (
            ("action_scale", action_scale, 2.0),
            ("init_joint_noise", init_joint_noise, 1.0),
            ("init_velocity_noise", init_velocity_noise, 5.0),
        ):
            if not np.isfinite(value) or not 0.0 <= value <= high or (name == "action_scale" and value == 0):
                raise ConfigError(name, f"must be in {'(0' if name == 'action_scale' else '[0'}, {high}], got {value}")
        if isinstance(history_steps, bool) or not isinstance(history_steps, int) or not 0 <= history_steps <= 50:
            raise ConfigError("history_steps", f"must be a whole number in [0, 50], got {history_steps!r}")
        self.history_steps = history_steps
        blocks = self.HISTORY_BLOCKS if history_blocks is None else history_blocks
        if isinstance(blocks, str) or not blocks or not all(isinstance(b, str) for b in blocks) \
                or len(set(blocks)) != len(blocks):
            raise ConfigError("history_blocks", f"must be a list of distinct observation block names, got {blocks!r}")
        self.history_blocks = tuple(blocks)
        self.servo_gains = {"servo_kp": _gains("servo_kp", servo_kp), "servo_kd": _gains("servo_kd", servo_kd)}
        self.history: ObservationHistory | None = None
        self.action_scale = float(action_scale)
        self.init_joint_noise = float(init_joint_noise)
        self.init_velocity_noise = float(init_velocity_noise)
        defaults = dict(self.REWARD_WEIGHTS)
        self.gait: TrotReference | None = None
        if self.action_mode == "gait_residual":
            try:
                self.gait = TrotReference(num_envs, gait_frequency_hz, gait_step_height)
            except ValueError as exc:
                raise ConfigError("gait_frequency_hz/gait_step_height", str(exc)) from None
            defaults["feet_air_time"] = 0.0  # the reference sets the swing's timing
        self.weights = rewards.RewardWeights(defaults, reward_weights, only_positive_rewards)

        B = num_envs
        self.last_action = np.zeros((B, c.NUM_JOINTS))
        self.prev_joint_vel = np.zeros((B, c.NUM_JOINTS))
        self.air = rewards.AirTimeTracker(B)
        self.dynamics = np.zeros((B, 17))  # friction, payload, com shift (3), motor strength (12)
        self._state_cache: tuple[bytes, BaseState] | None = None
        self.last_terms: dict[str, np.ndarray] = {}
        """Unweighted reward terms of the latest step, for inspection and tuning."""

    # -- model -------------------------------------------------------------------------
    def build_model(self) -> mujoco.MjModel:
        spec = robot_spec()
        add_lighting(spec)
        self.build_world(spec)
        model = spec.compile()
        self._index(model)
        ids = [model.actuator(n).id for n in c.ACTUATOR_NAMES]
        if self.servo_gains["servo_kp"] is not None:  # MuJoCo's position servo: force = kp (target - q) - kd qdot
            model.actuator_gainprm[ids, 0] = self.servo_gains["servo_kp"]
            model.actuator_biasprm[ids, 1] = -self.servo_gains["servo_kp"]
        if self.servo_gains["servo_kd"] is not None:
            model.actuator_biasprm[ids, 2] = -self.servo_gains["servo_kd"]
        return model

    def build_world(self, spec: mujoco.MjSpec) -> None:
        """Add the task's world (ground, terrain, obstacles, extra sensors)."""
        add_flat_floor(spec)

    def _index(self, model: mujoco.MjModel) -> None:
        self.sensor_slices = {
            model.sensor(i).name: slice(model.sensor_adr[i], model.sensor_adr[i] + model.sensor_dim[i])
            for i in range(model.nsensor)
        }
        qadr = [model.jnt_qposadr[model.joint(n).id] for n in c.JOINT_NAMES]
        if qadr != list(range(7, 19)) or model.jnt_type[0] != mujoco.mjtJoint.mjJNT_FREE:
            raise RuntimeError("quadruped model: expected a free joint followed by the 12 leg joints in order")
        # Sensor groups read every step, as one index array each.
        self.touch_idx = self._sensor_index([f"{leg}_touch" for leg in c.LEGS])
        self.torque_idx = self._sensor_index([f"{n}_torque" for n in c.ACTUATOR_NAMES])
        self.foot_pos_idx = self._sensor_index([f"{leg}_pos" for leg in c.LEGS])
        self.foot_vel_idx = self._sensor_index([f"{leg}_linvel" for leg in c.LEGS])
        self.ctrl_low = model.actuator_ctrlrange[:, 0].copy()
        self.ctrl_high = model.actuator_ctrlrange[:, 1].copy()
        self.joint_low, self.joint_high = self.ctrl_low, self.ctrl_high  # ctrlrange inherits the joint range
        # Soft limits (the central 90 %) of joint positions and speeds, for the limit penalties.
        mid, half = 0.5 * (self.joint_low + self.joint_high), 0.45 * (self.joint_high - self.joint_low)
        self.soft_low, self.soft_high = mid - half, mid + half
        self.soft_velocity = 0.9 * c.velocity_limits()
        self.trunk_id = model.body(c.TRUNK_BODY).id
        self.foot_geom_ids = np.array([model.geom(n).id for n in c.FOOT_GEOMS])
        self._nominal_trunk_mass = float(model.body_mass[self.trunk_id])
        self._nominal_com = model.body_ipos[self.trunk_id].copy()
        self._nominal_forcerange = model.actuator_forcerange[:, 1].copy()
        if self.wants_substeps and self.onboard is None:
            self.onboard = OnboardEstimate(self.last_action.shape[0], self._sensor_index, seed=self.estimator_seed)

    def _sensor_index(self, names: list[str]) -> np.ndarray | slice:
        idx = np.concatenate([np.arange(self.sensor_slices[n].start, self.sensor_slices[n].stop) for n in names])
        contiguous = np.all(np.diff(idx) == 1)
        return slice(int(idx[0]), int(idx[-1]) + 1) if contiguous else idx

    def sensor(self, phys: PhysicsBatch, name: str) -> np.ndarray:
        """One named sensor's readings, ``[B, dim]``."""
        return phys.sensordata[:, self.sensor_slices[name]]

    def action_layout(self) -> list[tuple[str, int]]:
        return [("joint_pos_target", c.NUM_JOINTS)]

    def mirror(self) -> tuple[SignedPermutation, SignedPermutation]:
        """Legs swapped left-right (:mod:`sim2real.sim.quadruped.mirror`); a block whose
        reflection is not known (a height scan, say) is refused."""
        steps = self.history_steps
        return (layout_mirror(self.observation_layout(), self.history_blocks if steps else (), steps),
                layout_mirror(self.action_layout()))

    def observation_noise(self) -> np.ndarray:
        return np.concatenate([np.full(n, OBSERVATION_NOISE.get(name, 0.0)) for name, n in self.observation_layout()])

    # -- episode -----------------------------------------------------------------------
    def reset_env(self, env_id: int, model: mujoco.MjModel, data: mujoco.MjData, rng: np.random.Generator) -> None:
        self._state_cache = None
        self.reset_task(env_id, model, data, rng)
        position, heading = self.spawn(env_id, rng)
        data.qpos[0:3] = position
        data.qpos[3:7] = frames.yaw_quat(heading)
        joints = c.DEFAULT_POSE + rng.uniform(-self.init_joint_noise, self.init_joint_noise, c.NUM_JOINTS)
        data.qpos[7:19] = np.clip(joints, self.joint_low, self.joint_high)
        data.qvel[0:6] = rng.uniform(-self.init_velocity_noise, self.init_velocity_noise, 6)
        data.ctrl[:] = data.qpos[7:19]
        self.last_action[env_id] = 0.0
        self.prev_joint_vel[env_id] = 0.0
        if self.gait is not None:
            self.gait.reset(env_id, rng.uniform())
        self.air.reset(env_id)
        if self.onboard is not None:
            self.onboard.reset(env_id)
        # The randomized model of this env: what the critic may know about it.
        self.dynamics[env_id, 0] = model.geom_friction[self.foot_geom_ids[0], 0]
        self.dynamics[env_id, 1] = model.body_mass[self.trunk_id] - self._nominal_trunk_mass
        self.dynamics[env_id, 2:5] = model.body_ipos[self.trunk_id] - self._nominal_com
        self.dynamics[env_id, 5:17] = model.actuator_forcerange[:, 1] / self._nominal_forcerange

    def reset_task(self, env_id: int, model: mujoco.MjModel, data: mujoco.MjData, rng: np.random.Generator) -> None:
        """Sample the task variables of one env (commands, terrain, layout)."""

    def spawn(self, env_id: int, rng: np.random.Generator) -> tuple[np.ndarray, float]:
        """Initial trunk position and heading; default: origin, random heading."""
        return np.array([0.0, 0.0, c.STANDING_HEIGHT + 0.01]), float(rng.uniform(-np.pi, np.pi))

    def on_substeps(self, sensordata: np.ndarray, dt: float) -> None:
        if self.onboard is not None:
            self.onboard.feed(sensordata, dt)

    def action_to_ctrl(self, action: np.ndarray, phys: PhysicsBatch) -> np.ndarray:
        target = c.DEFAULT_POSE + self.action_scale * action
        if self.gait is not None:
            target = target + self.gait.joint_offsets(self.reference_twist(), self.reference_crouch())
        # minimum/maximum: np.clip's argument handling costs more than the arithmetic here
        return np.minimum(np.maximum(target, self.ctrl_low), self.ctrl_high)

    def action_scaling(self) -> dict[str, Any]:
        """For the export metadata: how an action becomes servo targets."""
        out: dict[str, Any] = {
            "formula": "q_target = default_pose + action_scale * action"
            + (" + gait_reference(phase, command)" if self.gait is not None else ""),
            "default_pose": c.DEFAULT_POSE.tolist(),
            "action_scale": self.action_scale,
        }
        if self.gait is not None:
            out["gait_reference"] = {
                "implementation": "sim2real.sim.quadruped.gait.TrotReference",
                "frequency_hz": self.gait.frequency,
                "step_height": self.gait.step_height,
                "phase_advance": "frequency_hz * control_dt per control step; observation block gait_clock",
            }
        return out

    # -- gait reference ---------------------------------------------------------------
    def reference_twist(self) -> np.ndarray:
        """``[B, 3]`` body twist (vx, vy, yaw rate) the gait reference steps for;
        tasks that support ``gait_residual`` return their command."""
        raise ConfigError("action_mode", f"{self.name} has no commanded twist for the gait_residual mode")

    def reference_crouch(self) -> np.ndarray | None:
        """``[B]`` metres the gait reference lowers the hips by (None: standing height)."""
        return None

    def height_target(self) -> np.ndarray | float:
        """Trunk height (m) the ``base_height`` term asks for: standing, less the
        reference's commanded crouch (a crouch is a command, never the default gait)."""
        crouch = self.reference_crouch()
        return c.STANDING_HEIGHT if crouch is None else c.STANDING_HEIGHT - crouch

    def advance_reference(self) -> None:
        """Run the gait clock one control period (call once per control step)."""
        if self.gait is not None:
            twist = self.reference_twist()
            self.gait.advance(self.control_dt, np.asarray((np.abs(twist) > MOVING_THRESHOLD).any(axis=1)))

    def deploy_command(
        self, action: np.ndarray, obs: np.ndarray, to_command: Callable[[np.ndarray], np.ndarray]
    ) -> np.ndarray:
        """Joint targets for ``action``; in ``gait_residual`` mode plus the gait
        reference of this control period, after which the clock advances one period."""
        command = to_command(action)
        if self.gait is None:
            return command
        command = command + self.gait.joint_offsets(self.reference_twist(), self.reference_crouch())[0]
        self.advance_reference()
        return command

    # -- state ------------------------------------------------------------------------
    def base_state(self, phys: PhysicsBatch) -> BaseState:
        """Derived once per control step and shared by evaluate/observe/privileged:
        only physics steps (which advance ``time``) and resets change the state."""
        key = phys.time.tobytes()
        if self._state_cache is not None and self._state_cache[0] == key:
            return self._state_cache[1]
        quat = phys.qpos[:, 3:7]
        rot = frames.rotation_matrices(quat)
        state = BaseState(
            pos=phys.qpos[:, 0:3],
            quat=quat,
            lin_vel=np.matmul(phys.qvel[:, None, 0:3], rot)[:, 0],  # R^T v
            ang_vel=phys.qvel[:, 3:6],  # a free joint's angular velocity is already in the body frame
            gravity=-rot[:, 2, :],  # R^T (0, 0, -1)
            yaw=np.arctan2(rot[:, 1, 0], rot[:, 0, 0]),
            joint_pos=phys.qpos[:, 7:19],
            joint_vel=phys.qvel[:, 6:18],
        )
        self._state_cache = (key, state)
        return state

    def proprioception(self, st: BaseState) -> dict[str, np.ndarray]:
        """The proprioceptive observation blocks by layout name (and the gait clock)."""
        clock = {} if self.gait is None else {"gait_clock": self.gait.clock()}
        return {
            **clock,
            "base_lin_vel": st.lin_vel if self.onboard is None else self.onboard.body_velocity(st.quat, st.lin_vel),
            "base_ang_vel": st.ang_vel,
            "projected_gravity": st.gravity,
            "joint_pos": st.joint_pos - c.DEFAULT_POSE,
            "joint_vel": st.joint_vel,
            "last_action": self.last_action,
        }

    def assemble(self, blocks: dict[str, np.ndarray], layout: list[tuple[str, int]]) -> np.ndarray:
        return np.concatenate([blocks[name].reshape(-1, size) for name, size in layout], axis=1)

    def observation_blocks(self, phys: PhysicsBatch) -> dict[str, np.ndarray]:
        """Every block :meth:`observation_layout` names (extra keys are ignored)."""
        return self.proprioception(self.base_state(phys))

    def privileged_blocks(self, phys: PhysicsBatch) -> dict[str, np.ndarray]:
        """Every block :meth:`privileged_layout` names."""
        return self.privileged_base(self.base_state(phys), phys)

    HISTORY_BLOCKS: ClassVar[tuple[str, ...]] = ("joint_pos", "joint_vel", "last_action")
    """The blocks ``history_steps`` remembers by default (``history_blocks``)."""

    @abc.abstractmethod
    def present_layout(self) -> list[tuple[str, int]]:
        """The observation blocks of the present step (everything but ``history``)."""

    def _history_buffer(self) -> ObservationHistory:
        if self.history is None:  # not in __init__: subclasses finish what present_layout needs after it
            try:
                self.history = ObservationHistory(self.num_envs, self.present_layout(), self.history_blocks,
                                                  self.history_steps)
            except ValueError as exc:
                raise ConfigError("history_blocks", str(exc)) from None
        return self.history

    def observation_layout(self) -> list[tuple[str, int]]:
        layout = self.present_layout()
        return [*layout, ("history", self._history_buffer().size)] if self.history_steps else layout

    def observe(self, phys: PhysicsBatch) -> np.ndarray:
        present = self.assemble(self.observation_blocks(phys), self.present_layout())
        if self.history_steps == 0:
            return present
        return np.concatenate([present, self._history_buffer().block(present, phys.time)], axis=1)

    def privileged(self, phys: PhysicsBatch) -> np.ndarray:
        return self.assemble(self.privileged_blocks(phys), self.privileged_layout())

    def privileged_layout(self) -> list[tuple[str, int]]:
        return list(self.PRIVILEGED_BASE_LAYOUT)

    def foot_contact(self, phys: PhysicsBatch) -> np.ndarray:
        """``[B, 4]`` bool, feet pressing on anything."""
        return phys.sensordata[:, self.touch_idx] > CONTACT_THRESHOLD

    def trunk_contact(self, phys: PhysicsBatch) -> np.ndarray:
        return self.sensor(phys, "trunk_touch")[:, 0] > CONTACT_THRESHOLD

    def fallen(self, st: BaseState, phys: PhysicsBatch) -> np.ndarray:
        """Tilted past 60 degrees, or (where it ends the episode) trunk contact."""
        fell = st.gravity[:, 2] > -MAX_TILT_COS
        if self.TRUNK_CONTACT_ENDS_EPISODE:
            fell |= self.trunk_contact(phys)
        return fell

    def privileged_base(self, st: BaseState, phys: PhysicsBatch) -> dict[str, np.ndarray]:
        return {
            "true_base_lin_vel": st.lin_vel,
            "foot_contact": self.foot_contact(phys).astype(float),
            "friction": self.dynamics[:, 0:1],
            "trunk_payload": self.dynamics[:, 1:2],
            "com_shift": self.dynamics[:, 2:5],
            "motor_strength": self.dynamics[:, 5:17],
        }

    PRIVILEGED_BASE_LAYOUT: ClassVar[list[tuple[str, int]]] = [
        ("true_base_lin_vel", 3),
        ("foot_contact", 4),
        ("friction", 1),
        ("trunk_payload", 1),
        ("com_shift", 3),
        ("motor_strength", 12),
    ]

    # -- rewards ------------------------------------------------------------------------
    def locomotion_terms(
        self, st: BaseState, phys: PhysicsBatch, action: np.ndarray, fell: np.ndarray, moving: np.ndarray
    ) -> dict[str, np.ndarray]:
        """The penalties every task shares, unweighted; updates the per-step buffers
        (air time, last action, previous joint velocity), so call it once per step."""
        contact = self.foot_contact(phys)
        air_time, first_contact = self.air.update(contact, self.control_dt)
        foot_vel = phys.sensordata[:, self.foot_vel_idx].reshape(-1, 4, 3)[:, :, :2]
        # The six squared-norm terms in one pass: per-step cost here is the number of numpy
        # calls, not arithmetic. Columns: v_z | w_x w_y | g_x g_y | tau (12) | dq (12) | da (12).
        parts = [
            st.lin_vel[:, 2:3],
            st.ang_vel[:, :2],
            st.gravity[:, :2],
            phys.sensordata[:, self.torque_idx],
            st.joint_vel - self.prev_joint_vel,
            action - self.last_action,
        ]
        squares = np.concatenate(parts, axis=1)
        sums = np.add.reduceat(squares * squares, _SQUARED_TERM_STARTS, axis=1)
        terms = {
            "feet_air_time": rewards.feet_air_time(air_time, first_contact, moving),
            "lin_vel_z": sums[:, 0],
            "ang_vel_xy": sums[:, 1],
            "orientation": sums[:, 2],
            "torques": sums[:, 3],
            "dof_acc": sums[:, 4] / self.control_dt**2,
            "action_rate": sums[:, 5],
            "dof_pos_limits": (
                np.maximum(self.soft_low - st.joint_pos, 0.0) + np.maximum(st.joint_pos - self.soft_high, 0.0)
            ).sum(axis=1),
            "dof_vel_limits": np.maximum(np.abs(st.joint_vel) - self.soft_velocity, 0.0).sum(axis=1),
            "feet_slip": rewards.feet_slip(contact, foot_vel),
            "stand_still": np.abs(st.joint_pos - c.DEFAULT_POSE).sum(axis=1) * ~moving,
            "base_height": rewards.height_deficit(st.pos[:, 2], self.height_target()),
            "termination": fell.astype(float),
        }
        self.last_action = action.copy()
        self.prev_joint_vel = st.joint_vel.copy()
        return terms

    def weighted_sum(self, terms: dict[str, np.ndarray]) -> np.ndarray:
        """The step's reward from the unweighted ``terms`` (kept as :attr:`last_terms`)."""
        self.last_terms = terms
        return self.weights.step_reward(terms, self.control_dt)
