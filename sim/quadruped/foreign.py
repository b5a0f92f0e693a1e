"""A foreign MJCF of our quadruped (MuJoCo Menagerie's or Unitree's own Go2) driven the
way a real Go2 is: joint states and odometry out, joint targets in.

Nothing of our task runs in the foreign model. :class:`ForeignQuadruped` maps our joints
(Unitree's FR, FL, RR, RL order) onto the model's by name, reads what a robot's driver
publishes into :class:`~sim2real.sim.core.deployment.Measurements` and applies joint
targets through the model's OWN actuators: position servos get the targets; torque
motors are driven by the policy's PD law at the model's own timestep, clipped to the
motor's control range, as Unitree's low-level controller does on the robot. The policy
acts every ``decimation`` physics steps (its control period over the model's timestep).

A model that is not this robot fails closed with a :class:`ConfigError` naming what is
missing (a joint, the free joint, an actuator, a foot) or what is wrong (its mass).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

import mujoco
import numpy as np

from sim2real.sim.core.deployment import Measurements
from sim2real.sim.core.errors import ConfigError
from sim2real.sim.quadruped import constants as C

MASS_TOLERANCE = 0.4
"""A model whose robot weighs more than 40 % off our Go2's 15 kg is another robot."""
DECIMATION_TOLERANCE = 1e-3
"""Relative slack on control period / timestep being a whole number."""
KNEES = np.arange(2, C.NUM_JOINTS, 3)
"""Indices of the calf (knee) joints in our order."""


def parse_joint_map(text: str | None) -> dict[str, str]:
    """Our joint name -> the model's, from ``ours=theirs,...`` or a YAML/JSON file holding
    that mapping. Our joints it does not name keep their own names.

    Raises:
        ConfigError: unreadable file, malformed pair, a name that is not one of our
            joints, or two of our joints mapped onto one of theirs.
    """
    if not text:
        return {}
    path = Path(text)
    if path.suffix.lower() in (".yaml", ".yml", ".json"):
        import yaml  # JSON is YAML: one reader for both

        try:
            raw = yaml.safe_load(path.read_text()) if path.suffix.lower() != ".json" else json.loads(path.read_text())
        except (OSError, ValueError, yaml.YAMLError) as exc:
            raise ConfigError("--joint-map", f"{path} is not a readable mapping ({exc})") from None
        if not isinstance(raw, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in raw.items()):
            raise ConfigError("--joint-map", f"{path} must map our joint names to the model's (strings)")
        pairs = dict(raw)
    else:
        pairs = {}
        for item in filter(None, (s.strip() for s in text.split(","))):
            ours, sep, theirs = item.partition("=")
            if not sep or not ours.strip() or not theirs.strip():
                raise ConfigError("--joint-map", f"{item!r} is not ours=theirs")
            pairs[ours.strip()] = theirs.strip()
    unknown = sorted(set(pairs) - set(C.JOINT_NAMES))
    if unknown:
        raise ConfigError("--joint-map", f"{unknown} are not our joints ({', '.join(C.JOINT_NAMES)})")
    theirs = [pairs.get(n, n) for n in C.JOINT_NAMES]
    doubled = sorted({t for t in theirs if theirs.count(t) > 1})
    if doubled:
        raise ConfigError("--joint-map", f"several of our joints map onto {doubled}")
    return pairs


@dataclass(frozen=True)
class Drive:
    """How the model's actuators take our joint targets (arrays in our joint order)."""

    actuator: np.ndarray
    servo: np.ndarray
    """bool: a position servo (else a torque motor)."""
    ctrl_per_unit: np.ndarray
    """ctrl per rad of target (servo: the gear) or per N m of torque (motor: 1 / (gain * gear))."""
    ctrl_low: np.ndarray
    ctrl_high: np.ndarray
    """The actuators' ctrlrange (+-inf where unlimited)."""
    servo_kp: np.ndarray
    """The model's own servo stiffness (N m/rad; NaN for motors): reported, not changed."""

    def describe(self, kp: np.ndarray, kd: np.ndarray) -> str:
        if self.servo.all():
            return f"the model's position servos (kp {_values(self.servo_kp)})"
        what = f"torque motors driven by the policy's PD (kp {_values(kp)}, kd {_values(kd)})"
        return what if not self.servo.any() else f"{what}, servos on {int(self.servo.sum())} joints"


def _values(x: np.ndarray) -> str:
    return f"{x[0]:g}" if np.allclose(x, x[0]) else "/".join(f"{v:g}" for v in x)


def _drive(model: mujoco.MjModel, joint_ids: list[int], names: list[str]) -> Drive:
    """The actuator of each mapped joint, classified (one per joint, no dynamics)."""
    rows: list[tuple[int, bool, float, float]] = []  # actuator, servo, ctrl per unit, the servo's own kp
    for jid, name in zip(joint_ids, names, strict=True):
        found = [a for a in range(model.nu)
                 if model.actuator_trntype[a] == mujoco.mjtTrn.mjTRN_JOINT and model.actuator_trnid[a, 0] == jid]
        if len(found) != 1:
            raise ConfigError("model", f"{len(found)} actuators drive {name}; need exactly one")
        a = found[0]
        gain, bias, gear = model.actuator_gainprm[a], model.actuator_biasprm[a], float(model.actuator_gear[a, 0])
        fixed = model.actuator_gaintype[a] == mujoco.mjtGain.mjGAIN_FIXED and gain[0] > 0 and gear != 0
        if model.actuator_dyntype[a] != mujoco.mjtDyn.mjDYN_NONE or not fixed:
            raise ConfigError("model", f"actuator {model.actuator(a).name} of {name} is neither a position servo "
                                       "nor a torque motor (it has dynamics or a non-constant gain)")
        if model.actuator_biastype[a] == mujoco.mjtBias.mjBIAS_NONE:  # MuJoCo <motor>: force = gain * ctrl
            rows.append((a, False, 1.0 / (gain[0] * gear), np.nan))
        elif model.actuator_biastype[a] == mujoco.mjtBias.mjBIAS_AFFINE and bias[0] == 0 \
                and np.isclose(bias[1], -gain[0]):  # <position>: gain (ctrl - length) - kv velocity
            rows.append((a, True, gear, gain[0] * gear * gear))
        else:
            raise ConfigError("model", f"actuator {model.actuator(a).name} of {name} is neither a position "
                                       "servo nor a torque motor (a velocity or general actuator)")
    act, servo, per_unit, kp = (np.array(column) for column in zip(*rows, strict=True))
    ids = act.astype(int)
    limited = model.actuator_ctrllimited[ids].astype(bool)
    low = np.where(limited, model.actuator_ctrlrange[ids, 0], -np.inf)
    high = np.where(limited, model.actuator_ctrlrange[ids, 1], np.inf)
    return Drive(ids, servo.astype(bool), per_unit.astype(float), low, high, kp.astype(float))


def _subtree(model: mujoco.MjModel, root: int) -> np.ndarray:
    """bool ``[nbody]``: ``root`` and every body below it."""
    inside = np.zeros(model.nbody, dtype=bool)
    inside[root] = True
    for b in range(root + 1, model.nbody):  # parents come before children in MuJoCo's order
        inside[b] = inside[model.body_parentid[b]]
    return inside


class ForeignQuadruped:
    """Our quadruped's joints, base and feet in a foreign MuJoCo model.

    Args:
        model: The compiled model (a scene with its floor at z = 0).
        control_dt: The policy's control period (s).
        kp, kd: The policy's PD gains (one value or 12), for torque motors.
        joint_map: Our joint name -> the model's (:func:`parse_joint_map`); others keep their names.
        base_body: The trunk (default: the free joint's body); rigidly attached to it.
        source: The model's file, for messages.

    Raises:
        ConfigError: no free joint, an unknown joint or body, a joint without exactly one
            servo or motor, no foot sphere under a calf, the wrong mass, or a timestep that
            does not divide the control period.
    """

    def __init__(self, model: mujoco.MjModel, control_dt: float, kp: float | np.ndarray = C.KP,
                 kd: float | np.ndarray = C.KV, joint_map: Mapping[str, str] | None = None,
                 base_body: str | None = None, source: str = "model") -> None:
        self.model, self.source = model, source
        free = [j for j in range(model.njnt) if model.jnt_type[j] == mujoco.mjtJoint.mjJNT_FREE]
        if not free:
            raise ConfigError("model", f"{source} has no free joint: the trunk must float")
        self.free_qpos, self.free_dof = int(model.jnt_qposadr[free[0]]), int(model.jnt_dofadr[free[0]])
        self.root = root = int(model.jnt_bodyid[free[0]])
        self.base = root if base_body is None else mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, base_body)
        if self.base < 0:
            raise ConfigError("--base-body", f"{source} has no body {base_body!r}")
        b = self.base
        while b != root:  # the trunk's frame must move with the free joint, no joint between them
            if model.body_jntnum[b] or b == 0:
                raise ConfigError("--base-body", f"{base_body!r} is not rigidly attached to the free joint's body")
            b = int(model.body_parentid[b])
        self.robot = _subtree(model, root)
        self.mass = mass = float(model.body_mass[self.robot].sum())
        if abs(mass - C.TOTAL_MASS) > MASS_TOLERANCE * C.TOTAL_MASS:
            raise ConfigError("model", f"{source}: the robot weighs {mass:.1f} kg, our Go2 {C.TOTAL_MASS:.1f} kg: "
                                       "another robot")
        names = [dict(joint_map or {}).get(n, n) for n in C.JOINT_NAMES]
        ids = [mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, n) for n in names]
        missing = [f"{theirs} (our {ours})" for ours, theirs, j in zip(C.JOINT_NAMES, names, ids, strict=True)
                   if j < 0 or model.jnt_type[j] != mujoco.mjtJoint.mjJNT_HINGE or not self.robot[model.jnt_bodyid[j]]]
        if missing:
            raise ConfigError("--joint-map", f"{source} has no hinge joint {missing[0]} on the robot"
                                             + (f" (and {len(missing) - 1} more)" if len(missing) > 1 else "")
                                             + "; name them with --joint-map ours=theirs,...")
        self.joint_names = tuple(names)
        self.qpos = np.array([model.jnt_qposadr[j] for j in ids])
        self.dof = np.array([model.jnt_dofadr[j] for j in ids])
        limited = model.jnt_limited[ids].astype(bool)
        self.joint_low = np.where(limited, model.jnt_range[ids, 0], -np.inf)
        self.joint_high = np.where(limited, model.jnt_range[ids, 1], np.inf)
        self.drive = _drive(model, ids, names)
        self.kp = np.broadcast_to(np.asarray(kp, dtype=float), (C.NUM_JOINTS,)).copy()
        self.kd = np.broadcast_to(np.asarray(kd, dtype=float), (C.NUM_JOINTS,)).copy()
        steps = control_dt / model.opt.timestep
        self.decimation = int(round(steps))
        if self.decimation < 1 or abs(steps - self.decimation) > DECIMATION_TOLERANCE * steps:
            raise ConfigError("model", f"{source}: timestep {model.opt.timestep:g} s does not divide the policy's "
                                       f"control period {control_dt:g} s ({steps:.3f} steps)")
        self.feet = self._feet(ids)
        geom_body = model.geom_bodyid
        self._robot_geom = self.robot[geom_body]
        self._base_geom = geom_body == self.base
        self._foot_radius = model.geom_size[self.feet, 0]

    @classmethod
    def from_file(cls, path: str | Path, control_dt: float, kp: float | np.ndarray = C.KP,
                  kd: float | np.ndarray = C.KV, joint_map: Mapping[str, str] | None = None,
                  base_body: str | None = None) -> ForeignQuadruped:
        """The model of an MJCF file (a scene including the robot and a floor).

        Raises:
            ConfigError: the file is missing or MuJoCo cannot compile it, or as the constructor.
        """
        if not Path(path).is_file():
            raise ConfigError("--model", f"{path} does not exist")
        try:
            model = mujoco.MjModel.from_xml_path(str(path))
        except ValueError as exc:  # MuJoCo's parse and compile errors
            raise ConfigError("--model", f"{path} does not compile: {str(exc).strip().splitlines()[0]}") from None
        return cls(model, control_dt, kp, kd, joint_map, base_body, source=Path(path).name)

    def _feet(self, joint_ids: list[int]) -> np.ndarray:
        """Per leg, the colliding sphere lowest below its calf joint in the initial pose."""
        m = self.model
        d = mujoco.MjData(m)
        self.pose(d)
        mujoco.mj_kinematics(m, d)
        feet = []
        for leg, calf in zip(C.LEGS, joint_ids[2::3], strict=True):
            below = _subtree(m, int(m.jnt_bodyid[calf]))
            colliding = (m.geom_contype != 0) | (m.geom_conaffinity != 0)
            spheres = [g for g in range(m.ngeom) if below[m.geom_bodyid[g]] and colliding[g]
                       and m.geom_type[g] == mujoco.mjtGeom.mjGEOM_SPHERE]
            if not spheres:
                raise ConfigError("model", f"{self.source} has no foot (a colliding sphere) under {leg}'s calf")
            feet.append(min(spheres, key=lambda g: d.geom_xpos[g, 2]))
        return np.array(feet)

    # -- state ---------------------------------------------------------------------------
    def pose(self, data: mujoco.MjData) -> None:
        """The initial pose: the model's keyframe ``home`` if it has one, else our standing
        pose (default joint angles, trunk just above its standing height)."""
        home = mujoco.mj_name2id(self.model, mujoco.mjtObj.mjOBJ_KEY, "home")
        if home >= 0:
            mujoco.mj_resetDataKeyframe(self.model, data, home)
            return
        mujoco.mj_resetData(self.model, data)
        data.qpos[self.free_qpos:self.free_qpos + 7] = [0.0, 0.0, C.STANDING_HEIGHT + 0.01, 1.0, 0.0, 0.0, 0.0]
        data.qpos[self.qpos] = C.DEFAULT_POSE

    def reset(self, data: mujoco.MjData, rng: np.random.Generator, joint_noise: float, velocity_noise: float) -> None:
        """:meth:`pose` perturbed as our task's episodes start: uniform joint-angle and
        base-velocity noise (the draws, not the model, decide them: paired across models)."""
        self.pose(data)
        joints = data.qpos[self.qpos] + rng.uniform(-joint_noise, joint_noise, C.NUM_JOINTS)
        data.qpos[self.qpos] = np.clip(joints, self.joint_low, self.joint_high)
        data.qvel[self.free_dof:self.free_dof + 6] = rng.uniform(-velocity_noise, velocity_noise, 6)
        data.ctrl[:] = 0.0
        mujoco.mj_forward(self.model, data)

    def measure(self, data: mujoco.MjData) -> Measurements:
        """What the robot's driver publishes: joint states in our order, the trunk's pose,
        world-frame velocity and body-frame angular velocity."""
        out = Measurements(joint_pos=data.qpos[self.qpos].copy(), joint_vel=data.qvel[self.dof].copy(),
                           joint_effort=data.qfrc_actuator[self.dof].copy())
        a, v = self.free_qpos, self.free_dof
        if self.base == self.root:  # the free joint's own body: its coordinates are the odometry
            out.base_pos, out.base_quat = data.qpos[a:a + 3].copy(), data.qpos[a + 3:a + 7].copy()
            out.base_lin_vel, out.base_ang_vel = data.qvel[v:v + 3].copy(), data.qvel[v + 3:v + 6].copy()
            return out
        mujoco.mj_forward(self.model, data)  # a body's frame and velocity: from the current state
        vel = np.zeros(6)
        # XBODY: the velocity of the body's frame origin (BODY would give its centre of mass's)
        mujoco.mj_objectVelocity(self.model, data, mujoco.mjtObj.mjOBJ_XBODY, self.base, vel, 0)
        rot = data.xmat[self.base].reshape(3, 3)
        out.base_pos, out.base_quat = data.xpos[self.base].copy(), data.xquat[self.base].copy()
        out.base_lin_vel, out.base_ang_vel = vel[3:6], rot.T @ vel[0:3]
        return out

    # -- actuation ----------------------------------------------------------------------
    def step_control(self, data: mujoco.MjData, targets: np.ndarray,
                     on_physics_step: Callable[[mujoco.MjData], None] | None = None) -> None:
        """One control period: joint ``targets`` (rad, our order; clipped to the joint
        ranges, as our servos' control range and the safety filter's limits clip them)
        through the model's own actuators, ``decimation`` physics steps, each followed by
        ``on_physics_step`` (the robot's estimator reading its sensors)."""
        drive = self.drive
        target = np.clip(np.asarray(targets, dtype=float), self.joint_low, self.joint_high)
        servo, motor = drive.servo, ~drive.servo
        data.ctrl[drive.actuator[servo]] = np.clip(target[servo] * drive.ctrl_per_unit[servo],
                                                   drive.ctrl_low[servo], drive.ctrl_high[servo])
        motors, qpos, dof = drive.actuator[motor], self.qpos[motor], self.dof[motor]
        kp, kd, per_unit = self.kp[motor], self.kd[motor], drive.ctrl_per_unit[motor]
        low, high, goal = drive.ctrl_low[motor], drive.ctrl_high[motor], target[motor]
        for _ in range(self.decimation):
            if motors.size:  # the PD law at the model's timestep, as the Go2's motor drivers run it
                torque = kp * (goal - data.qpos[qpos]) - kd * data.qvel[dof]
                data.ctrl[motors] = np.clip(torque * per_unit, low, high)
            mujoco.mj_step(self.model, data)
            if on_physics_step is not None:
                on_physics_step(data)

    # -- what the study measures --------------------------------------------------------
    def _touching(self, data: mujoco.MjData) -> tuple[np.ndarray, bool]:
        """Which feet touch something outside the robot, and whether the trunk does."""
        n = data.ncon
        pairs = np.array(data.contact.geom[:n], dtype=int).reshape(n, 2)
        outside = ~self._robot_geom[pairs]  # [n, 2]
        external = pairs[outside[:, ::-1]]  # of each robot-world pair, the robot's geom
        feet = np.isin(self.feet, external)
        return feet, bool(self._base_geom[external].any())

    def foot_state(self, data: mujoco.MjData) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per foot: height of its lowest point above z = 0 (m), in contact, horizontal speed (m/s)."""
        contact, _ = self._touching(data)
        speed = np.zeros(4)
        vel = np.zeros(6)
        for i, g in enumerate(self.feet):
            mujoco.mj_objectVelocity(self.model, data, mujoco.mjtObj.mjOBJ_GEOM, int(g), vel, 0)
            speed[i] = np.hypot(vel[3], vel[4])
        return data.geom_xpos[self.feet, 2] - self._foot_radius, contact, speed

    def fallen(self, data: mujoco.MjData, m: Measurements) -> bool:
        """Our task's rule: the trunk tilted past 60 degrees, or touching the world."""
        assert m.base_quat is not None
        _, x, y, _ = m.base_quat
        up_z = 1.0 - 2.0 * (x * x + y * y)  # world z of the trunk's z axis
        return bool(up_z < 0.5) or self._touching(data)[1]
