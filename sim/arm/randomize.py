"""Domain randomization of the arm and its task objects.

Beyond the shared fields (friction, link masses, motor strength, servo gains,
latency, observation noise) the arm randomizes joint damping and Coulomb friction,
the mass and friction of manipulated objects (push cube, peg) and the friction and
contact stiffness of the maze walls. Masses are scaled with the robot's gravity
compensation left at the *nominal* mass, as on the real robot whose firmware
compensates its model's masses, not the true ones: a mass error shows up as sag.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import mujoco
import numpy as np

from sim2real.sim.core.errors import ConfigError
from sim2real.sim.core.randomization import DomainRandomization, Range, uniform

OBJECT_BODIES = ("cube", "peg")
"""Bodies whose mass and friction the object fields scale (when the task has them)."""
WALL_PREFIX = "wall"
"""Geoms whose name starts with this are maze walls."""


@dataclass
class ArmRandomization(DomainRandomization):
    """Arm randomization; scales multiply the nominal value."""

    joint_damping: Range = uniform(1.0, 1.0, at_least=0.0)
    """Scale on the viscous damping of every arm joint."""
    joint_friction: Range = uniform(0.0, 0.0, at_least=0.0, at_most=5.0)
    """Coulomb friction (Nm) added to every arm joint (nominal 0)."""
    object_mass: Range = uniform(1.0, 1.0, at_least=0.05)
    """Scale on the mass (and inertia) of the manipulated object (cube, peg)."""
    object_friction: Range = uniform(1.0, 1.0, at_least=0.0)
    """Scale on the sliding friction of the manipulated object, on top of ``friction``."""
    wall_friction: Range = uniform(1.0, 1.0, at_least=0.0)
    """Scale on the sliding friction of the maze walls, on top of ``friction``."""
    wall_stiffness: Range = uniform(1.0, 1.0, at_least=0.05, at_most=6.0)
    """Scale on the contact stiffness of the maze walls (their solref time constant is
    divided by its square root, since stiffness goes as 1 / timeconst^2). At most 6: the
    maze's nominal wall timeconst is 10 ms and MuJoCo floors it at 2 physics steps (4 ms)."""

    def validate(self) -> None:
        super().validate()
        if self.com_shift.low != 0.0 or self.com_shift.high != 0.0:
            # The hand is the "root" whose CoM moves: payload uncertainty of a few cm at most.
            self.com_shift.check("com_shift", -0.05, 0.05)

    @classmethod
    def train(cls) -> ArmRandomization:
        return cls(
            friction=Range(0.8, 1.2),
            mass_scale=Range(0.9, 1.1),
            com_shift=Range(-0.01, 0.01),
            motor_strength=Range(0.9, 1.1),
            pd_gain_scale=Range(0.85, 1.15),
            latency_steps=(0, 1),
            obs_noise_scale=1.0,
            joint_damping=Range(0.7, 1.3),
            joint_friction=Range(0.0, 0.2),
            object_mass=Range(0.7, 1.5),
            object_friction=Range(0.7, 1.3),
            wall_friction=Range(0.5, 1.5),
            wall_stiffness=Range(0.5, 2.0),
        )

    @classmethod
    def heldout(cls) -> ArmRandomization:
        return cls(
            friction=Range(0.6, 1.4),
            mass_scale=Range(0.8, 1.2),
            com_shift=Range(-0.02, 0.02),
            motor_strength=Range(0.8, 1.2),
            pd_gain_scale=Range(0.7, 1.3),
            latency_steps=(0, 2),
            obs_noise_scale=1.5,
            joint_damping=Range(0.5, 1.5),
            joint_friction=Range(0.0, 0.4),
            object_mass=Range(0.5, 2.0),
            object_friction=Range(0.5, 1.5),
            wall_friction=Range(0.3, 2.0),
            wall_stiffness=Range(0.25, 4.0),
        )

    # -- which bodies are the robot ------------------------------------------
    def robot_body_ids(self, model: mujoco.MjModel) -> np.ndarray:
        """Arm links, hand and fingers: the gravity-compensated bodies."""
        return np.flatnonzero(model.body_gravcomp > 0)

    def root_body_id(self, model: mujoco.MjModel) -> int:
        """The hand: its centre-of-mass shift stands for an uncertain payload."""
        hand = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, "hand")
        if hand < 0:
            raise ConfigError("model", "ArmRandomization needs a model with a 'hand' body")
        return hand

    def apply(self, model: mujoco.MjModel, nominal: mujoco.MjModel, rng: np.random.Generator) -> dict[str, Any]:
        model.body_gravcomp[:] = nominal.body_gravcomp  # not in the base class's restore list
        sampled = super().apply(model, nominal, rng)
        if not self.enabled:
            return sampled
        robot = self.robot_body_ids(model)
        # Keep the compensated weight at its nominal value: gravcomp is in units of body weight.
        model.body_gravcomp[robot] = nominal.body_gravcomp[robot] * nominal.body_mass[robot] / model.body_mass[robot]
        self._scale_variable_impedance(model, nominal, sampled)

        arm_dofs = _arm_dofs(model)
        scale = self.joint_damping.sample(rng)
        model.dof_damping[arm_dofs] = nominal.dof_damping[arm_dofs] * scale
        sampled["joint_damping"] = round(float(scale), 4)
        friction = self.joint_friction.sample(rng)
        model.dof_frictionloss[arm_dofs] = nominal.dof_frictionloss[arm_dofs] + friction
        sampled["joint_friction"] = round(float(friction), 4)

        for name in OBJECT_BODIES:
            body = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, name)
            if body < 0:
                continue
            m_scale, f_scale = self.object_mass.sample(rng), self.object_friction.sample(rng)
            model.body_mass[body] = nominal.body_mass[body] * m_scale
            model.body_inertia[body] = nominal.body_inertia[body] * m_scale
            geoms = np.flatnonzero(model.geom_bodyid == body)
            model.geom_friction[geoms, 0] *= f_scale  # already scaled by the global friction draw
            sampled["object_mass"] = round(float(m_scale), 4)
            sampled["object_friction"] = round(float(f_scale), 4)

        walls = _wall_geoms(model)
        if len(walls):
            f_scale, k_scale = self.wall_friction.sample(rng), self.wall_stiffness.sample(rng)
            model.geom_friction[walls, 0] *= f_scale
            model.geom_solref[walls, 0] = nominal.geom_solref[walls, 0] / np.sqrt(k_scale)
            sampled["wall_friction"] = round(float(f_scale), 4)
            sampled["wall_stiffness"] = round(float(k_scale), 4)
        return sampled

    def _scale_variable_impedance(self, model: mujoco.MjModel, nominal: mujoco.MjModel, sampled: dict) -> None:
        """The variable-impedance mode splits one Cartesian axis into a setpoint, a spring
        and a damper actuator; the spring and damper carry their gain in ``gainprm[1:3]``,
        which the base class does not scale. Give all three the setpoint actuator's strength
        draw so the axis keeps one consistent strength."""
        affine = np.flatnonzero(nominal.actuator_gaintype == mujoco.mjtGain.mjGAIN_AFFINE)
        if not len(affine):
            return
        strength = list(sampled.get("motor_strength", []))
        for i in affine:
            axis_name = mujoco.mj_id2name(nominal, mujoco.mjtObj.mjOBJ_ACTUATOR, i).rsplit("_", 1)[0]
            setpoint = mujoco.mj_name2id(nominal, mujoco.mjtObj.mjOBJ_ACTUATOR, f"{axis_name}_setpoint")
            s = model.actuator_gainprm[setpoint, 0] / nominal.actuator_gainprm[setpoint, 0]
            model.actuator_gainprm[i, :3] = nominal.actuator_gainprm[i, :3] * s
            if strength:
                strength[i] = round(float(s), 4)
        if strength:
            sampled["motor_strength"] = strength


def _arm_dofs(model: mujoco.MjModel) -> np.ndarray:
    joints = [mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, f"joint{i}") for i in range(1, 8)]
    if min(joints) < 0:
        raise ConfigError("model", "ArmRandomization needs a model with joints joint1..joint7")
    return model.jnt_dofadr[joints]


def _wall_geoms(model: mujoco.MjModel) -> np.ndarray:
    names = [mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_GEOM, g) or "" for g in range(model.ngeom)]
    return np.array([g for g, n in enumerate(names) if n.startswith(WALL_PREFIX)], dtype=int)
