"""Domain randomization of the quadruped.

Training ranges follow the legged-locomotion systems in RESEARCH.md (legged_gym,
MuJoCo Playground, Isaac Lab): floor friction 0.4-1.25, link masses x0.9-1.1,
trunk payload -1..3 kg, centre-of-mass shift +-5 cm, pushes 0.5-1 m/s every
10-15 s, observation noise; plus what users ask for on Go2 transfer (motor
strength, PD gains, one control step of latency) and joint damping/armature. Dry
joint friction is only in the held-out preset: its constraint rows cost ~20 % of
the physics time, and unmodelled friction is what the held-out set should probe.
The held-out preset is wider in every direction and never used for training.

What a model may get wrong rather than a parameter (docs/transfer.md): the foot
contact (condim, torsional and rolling friction, the friction cone and impratio, contact
softness), the foot's radius and the motors' torque-speed limit; neither preset samples
them, the robustness study sweeps them (:meth:`QuadrupedRandomization.model_sweeps`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import mujoco
import numpy as np

from sim2real.sim.core.errors import ConfigError
from sim2real.sim.core.randomization import DomainRandomization, Range, Sweep, uniform
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
    foot_condim: Literal[0, 3, 4, 6] = 0
    """Contact dimensionality of the feet (a contact takes its geoms' larger one): 3
    sliding friction, 4 plus torsional, 6 plus rolling; 0 keeps the model's own (3)."""
    torsional_friction_scale: Range = uniform(1.0, 1.0, at_least=0.0, at_most=50.0)
    """Scale on every geom's torsional friction (ours 0.02 m); acts at condim 4 and 6."""
    rolling_friction_scale: Range = uniform(1.0, 1.0, at_least=0.0, at_most=50.0)
    """Scale on every geom's rolling friction (ours 0.01 m); acts at condim 6."""
    contact_timeconst: Range = uniform(0.0, 0.0, at_least=0.0, at_most=0.5)
    """Time constant (s) of every contact's spring (``solref[0]``, damping ratio kept):
    larger is softer, the feet sink deeper; 0 keeps the model's own (0.02 s). MuJoCo
    keeps it at least two physics steps."""
    elliptic_cone: float = 0.0
    """Probability that an episode's friction cone is elliptic (MuJoCo's ``opt.cone``)
    rather than the model's own pyramidal one, as in Unitree's and Menagerie's Go2; drawn
    once per episode, for the whole world. 0 and 1 draw nothing."""
    impratio: Range = uniform(0.0, 0.0, at_least=0.0, at_most=1000.0)
    """Ratio of the friction to the normal constraints' impedance (``opt.impratio``): above
    1 the feet slip less (Unitree's Go2: 100, under the elliptic cone, where MuJoCo
    recommends it); 0 keeps the model's own (1)."""
    foot_radius_scale: Range = uniform(1.0, 1.0, at_least=0.5, at_most=2.0)
    """Scale on the radius of the four foot spheres (ours 0.022 m)."""
    torque_speed_limit: Range = uniform(0.0, 0.0, at_least=0.0, at_most=10.0)
    """Strength of the motors' torque-speed limit: 0 none; 1 the published curve, the
    torque available in the direction of motion falling linearly from the peak to zero
    at the no-load speed (23.7 N m at 30.1 rad/s hip and thigh, 45.43 N m at 15.7 rad/s
    knee); 2 that speed halved. Enforced inside MuJoCo at every physics step, as a
    motor's back EMF: the servo's torque clamp plus joint damping."""

    @classmethod
    def model_sweeps(cls) -> dict[str, Sweep]:
        return {  # one line per axis; values are the field's, 0.02/0.01 m torsional/rolling nominal
            "damping": Sweep("joint_damping", (0.0, 0.05, 0.15, 0.45, 0.95, 1.95), "N m s/rad added to 0.05"),
            "joint_friction": Sweep("joint_friction", (0.0, 0.1, 0.2, 0.3, 0.5), "frictionloss, N m"),
            "armature": Sweep("armature_scale", (0.1, 0.5, 1.0, 2.0, 5.0), "x 0.01 kg m^2 (knee 0.02)"),
            "foot_radius": Sweep("foot_radius_scale", (0.8, 0.9, 1.0, 1.1, 1.2), "x 0.022 m"),
            "condim": Sweep("foot_condim", (3.0, 4.0, 6.0), "foot contact condim"),
            "torsional_friction": Sweep("torsional_friction_scale", (0.0, 0.5, 1.0, 2.5, 5.0), "x 0.02 m, condim 6",
                                        fixed=(("foot_condim", 6.0),)),
            "rolling_friction": Sweep("rolling_friction_scale", (0.0, 0.5, 1.0, 2.5, 5.0), "x 0.01 m, condim 6",
                                      fixed=(("foot_condim", 6.0),)),
            "friction_cone": Sweep("elliptic_cone", (0.0, 1.0), "0 pyramidal, 1 elliptic; condim 6",
                                   fixed=(("foot_condim", 6.0),)),
            # At our 5 ms step impratio 10 already breaks every controller: it shortens the
            # friction rows' time constant below the step (docs/transfer.md). So 1.25 ms here.
            "impratio": Sweep("impratio", (1.0, 10.0, 100.0), "elliptic cone, condim 6, 1.25 ms step",
                              fixed=(("foot_condim", 6.0), ("elliptic_cone", 1.0)), substeps=4),
            "contact_softness": Sweep("contact_timeconst", (0.01, 0.02, 0.04, 0.08, 0.16), "solref time constant, s"),
            "torque_speed": Sweep("torque_speed_limit", (0.0, 0.5, 1.0, 1.5, 2.0, 3.0), "x published limit"),
        }

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

    def validate(self) -> None:
        super().validate()
        if not 0.0 <= self.elliptic_cone <= 1.0:  # also refuses NaN
            raise ConfigError("elliptic_cone", f"must be a probability in [0, 1], got {self.elliptic_cone}")

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
        sampled.update(self._apply_model_errors(model, nominal, rng))
        return sampled

    def _apply_model_errors(self, model: mujoco.MjModel, nominal: mujoco.MjModel, rng: np.random.Generator
                            ) -> dict[str, Any]:
        """The contact, foot and motor fields. Constant ranges draw nothing from ``rng``,
        so seeds give the same episodes as before these fields existed."""
        feet = np.array([model.geom(name).id for name in c.FOOT_GEOMS])
        if self.foot_condim:
            model.geom_condim[feet] = self.foot_condim
        torsional = float(self.torsional_friction_scale.sample(rng))
        rolling = float(self.rolling_friction_scale.sample(rng))
        model.geom_friction[:, 1] = nominal.geom_friction[:, 1] * torsional
        model.geom_friction[:, 2] = nominal.geom_friction[:, 2] * rolling
        elliptic = self.elliptic_cone >= 1.0 or (self.elliptic_cone > 0.0 and rng.random() < self.elliptic_cone)
        if elliptic:
            model.opt.cone = mujoco.mjtCone.mjCONE_ELLIPTIC
        impratio = float(self.impratio.sample(rng))
        if impratio > 0:
            model.opt.impratio = impratio
        timeconst = float(self.contact_timeconst.sample(rng))
        if timeconst > 0:
            model.geom_solref[:, 0] = timeconst
        radius = float(self.foot_radius_scale.sample(rng))
        model.geom_size[feet, 0] = nominal.geom_size[feet, 0] * radius
        model.geom_rbound[feet] = nominal.geom_rbound[feet] * radius
        model.geom_aabb[feet, 3:] = nominal.geom_aabb[feet, 3:] * radius
        limit = float(self.torque_speed_limit.sample(rng))
        if limit > 0:
            _torque_speed_limit(model, limit)
        return {"foot_condim": int(model.geom_condim[feet[0]]), "torsional_friction_scale": round(torsional, 4),
                "rolling_friction_scale": round(rolling, 4), "elliptic_cone": float(model.opt.cone),
                "impratio": round(float(model.opt.impratio), 4), "contact_timeconst": round(timeconst, 4),
                "foot_radius_scale": round(radius, 4), "torque_speed_limit": round(limit, 4)}


def _torque_speed_limit(model: mujoco.MjModel, strength: float) -> None:
    """Give every leg motor a torque-speed limit, inside MuJoCo (no Python per step).

    A DC motor's voltage limit bounds its torque to ``[-F - k qdot, F - k qdot]`` with
    ``k = strength F / w0`` (``F`` its peak torque, ``w0`` its no-load speed): the back
    EMF. The servo's own clamp to ``[-F, F]`` applied to ``servo + k qdot``, minus ``k
    qdot``, is exactly that band, so the servo's velocity gain gives up ``k`` and the
    joint gets ``k`` of passive damping (integrated implicitly). Braking (torque against
    the motion) may then exceed ``F``, as the back EMF helps it; the drive's current limit,
    which would cap it at ``F``, is not modelled. ``F`` is the actuator's force range as
    randomized (motor strength), so the no-load speed is ``w0 / strength`` whatever it is.
    """
    joints = model.actuator_trnid[:, 0]
    by_joint = dict(zip(c.JOINT_NAMES, c.velocity_limits(), strict=True))
    for a, j in enumerate(joints):
        w0 = by_joint[model.joint(int(j)).name]
        k = strength * model.actuator_forcerange[a, 1] / w0
        model.actuator_biasprm[a, 2] += k
        model.dof_damping[model.jnt_dofadr[j]] += k


def _leg_dofs(model: mujoco.MjModel) -> np.ndarray:
    """DoF addresses of the 12 leg joints in actuator order."""
    return np.array([model.jnt_dofadr[model.joint(name).id] for name in c.JOINT_NAMES])
