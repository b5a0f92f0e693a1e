"""Domain randomization of the quadruped.

Training ranges follow the legged-locomotion systems in RESEARCH.md (legged_gym,
MuJoCo Playground, Isaac Lab): floor friction 0.4-1.25, link masses x0.9-1.1,
trunk payload -1..3 kg, centre-of-mass shift +-5 cm, pushes 0.5-1 m/s every
10-15 s, observation noise; plus what users ask for on Go2 transfer (motor
strength, PD gains, one control step of latency) and joint damping/armature. Dry
joint friction is only in the held-out preset: its constraint rows cost ~20 % of
the physics time, and unmodelled friction is what the held-out set should probe.
The held-out preset is wider in every direction and never used for training.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import mujoco
import numpy as np

from sim2real.sim.core.randomization import DomainRandomization, Range, uniform
from sim2real.sim.quadruped import constants as c


@dataclass
class QuadrupedRandomization(DomainRandomization):
    """Shared fields (see :class:`DomainRandomization`) plus quadruped ones."""

    trunk_added_mass: Range = uniform(0.0, 0.0, at_least=-0.5 * c.TRUNK_MASS, at_most=30.0)
    """Payload (kg) added to the trunk at its centre of mass; inertia scales with mass. A
    negative payload must not take the trunk below half its nominal mass."""
    joint_damping: Range = uniform(0.0, 0.0, at_least=0.0, at_most=5.0)
    """Viscous damping (Nm s/rad) added to every leg joint, one draw per joint."""
    joint_friction: Range = uniform(0.0, 0.0, at_least=0.0, at_most=5.0)
    """Dry friction (Nm, ``frictionloss``) of every leg joint, one draw per joint. Each
    non-zero value adds a constraint row: about 20 % more physics time per step."""
    armature_scale: Range = uniform(1.0, 1.0, at_least=0.1, at_most=10.0)
    """Scale on the reflected rotor inertia of every leg joint, one draw per joint."""

    @classmethod
    def train(cls) -> QuadrupedRandomization:
        return cls(
            friction=Range(0.4, 1.25),
            mass_scale=Range(0.9, 1.1),
            trunk_added_mass=Range(-1.0, 3.0),
            com_shift=Range(-0.05, 0.05),
            motor_strength=Range(0.9, 1.1),
            pd_gain_scale=Range(0.9, 1.1),
            joint_damping=Range(0.0, 0.1),
            armature_scale=Range(0.9, 1.1),
            latency_steps=(0, 1),
            obs_noise_scale=1.0,
            push_velocity=Range(0.5, 1.0),
            push_interval_s=12.0,
        )

    @classmethod
    def heldout(cls) -> QuadrupedRandomization:
        return cls(
            friction=Range(0.25, 1.5),
            mass_scale=Range(0.8, 1.2),
            trunk_added_mass=Range(-2.0, 5.0),
            com_shift=Range(-0.08, 0.08),
            motor_strength=Range(0.8, 1.2),
            pd_gain_scale=Range(0.8, 1.2),
            joint_damping=Range(0.0, 0.2),
            joint_friction=Range(0.0, 0.3),  # unseen in training: dry friction as on the real motors
            armature_scale=Range(0.8, 1.25),
            latency_steps=(0, 2),
            obs_noise_scale=1.5,
            push_velocity=Range(0.5, 1.5),
            push_interval_s=8.0,
        )

    # -- application -------------------------------------------------------------
    def robot_body_ids(self, model: mujoco.MjModel) -> np.ndarray:
        """The trunk and every leg link (not terrain or obstacle bodies)."""
        trunk = self.root_body_id(model)
        ids = np.arange(model.nbody)
        return ids[(model.body_rootid == trunk) & (model.body_mass > 0)]

    def root_body_id(self, model: mujoco.MjModel) -> int:
        return mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, c.TRUNK_BODY)

    def apply(self, model: mujoco.MjModel, nominal: mujoco.MjModel, rng: np.random.Generator) -> dict[str, Any]:
        sampled = super().apply(model, nominal, rng)
        if not self.enabled:
            return sampled
        trunk = self.root_body_id(model)
        added = float(self.trunk_added_mass.sample(rng))
        mass = model.body_mass[trunk]  # already scaled by mass_scale
        model.body_inertia[trunk] *= (mass + added) / mass
        model.body_mass[trunk] = mass + added
        sampled["trunk_added_mass"] = round(added, 4)

        legs = _leg_dofs(model)
        damping = self.joint_damping.sample(rng, len(legs))
        model.dof_damping[legs] = nominal.dof_damping[legs] + damping
        sampled["joint_damping"] = np.round(damping, 4).tolist()
        friction = self.joint_friction.sample(rng, len(legs))
        model.dof_frictionloss[legs] = nominal.dof_frictionloss[legs] + friction
        sampled["joint_friction"] = np.round(friction, 4).tolist()
        armature = self.armature_scale.sample(rng, len(legs))
        model.dof_armature[legs] = nominal.dof_armature[legs] * armature
        sampled["armature_scale"] = np.round(armature, 4).tolist()
        return sampled


def _leg_dofs(model: mujoco.MjModel) -> np.ndarray:
    """DoF addresses of the 12 leg joints in actuator order."""
    return np.array([model.jnt_dofadr[model.joint(name).id] for name in c.JOINT_NAMES])
