"""Domain randomization of the quadrotor.

On top of the shared fields (mass, centre-of-mass shift, per-rotor motor
strength, latency, observation noise, velocity kicks as gusts) the drone
randomizes what decides how a small quadrotor flies: inertia, the thrust and
yaw-torque coefficients (battery sag, worn or mismatched propellers), the motor
time constant, air drag and a steady wind (``opt.wind``, acting through
MuJoCo's fluid model on the drone's air-relative velocity).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import mujoco
import numpy as np

from sim2real.sim.core.errors import ConfigError
from sim2real.sim.core.randomization import DomainRandomization, Range, uniform


def _drone_body(model: mujoco.MjModel) -> int:
    return mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, "drone")


@dataclass
class DroneRandomization(DomainRandomization):
    """Quadrotor randomization; every range is sampled once per episode."""

    inertia_scale: Range = uniform(1.0, 1.0, at_least=0.05)
    """Scale on each principal moment of inertia (one draw per axis), on top of ``mass_scale``."""
    thrust_coefficient: Range = uniform(1.0, 1.0, at_least=0.05)
    """Scale on every rotor's thrust (one draw for all), on top of per-rotor ``motor_strength``."""
    torque_coefficient: Range = uniform(1.0, 1.0, at_least=0.0)
    """Scale on the yaw reaction torque per newton of thrust (one draw for all rotors)."""
    motor_time_constant: Range = uniform(0.04, 0.04, at_least=1e-3, at_most=1.0)
    """Seconds, the first-order lag of each rotor (one draw per rotor)."""
    wind_speed: Range = uniform(0.0, 0.0, at_least=0.0, at_most=20.0)
    """m/s, steady horizontal wind in a uniformly random direction."""
    drag_scale: Range = uniform(1.0, 1.0, at_least=0.0)
    """Scale on air density and effective viscosity (all aerodynamic drag)."""

    def validate(self) -> None:
        super().validate()
        if self.motor_strength.low <= 0.0:
            low = self.motor_strength.low
            raise ConfigError("motor_strength.low", f"a rotor needs some thrust: must be > 0, got {low}")

    # -- presets ---------------------------------------------------------------
    @classmethod
    def train(cls) -> DroneRandomization:
        return cls(
            mass_scale=Range(0.9, 1.1),
            com_shift=Range(-0.003, 0.003),
            motor_strength=Range(0.93, 1.07),
            latency_steps=(0, 1),
            obs_noise_scale=1.0,
            push_velocity=Range(0.0, 0.3),
            push_interval_s=2.0,
            inertia_scale=Range(0.9, 1.1),
            thrust_coefficient=Range(0.9, 1.1),
            torque_coefficient=Range(0.8, 1.2),
            motor_time_constant=Range(0.03, 0.05),
            wind_speed=Range(0.0, 1.5),
            drag_scale=Range(0.7, 1.3),
        )

    @classmethod
    def heldout(cls) -> DroneRandomization:
        return cls(
            mass_scale=Range(0.8, 1.25),
            com_shift=Range(-0.006, 0.006),
            motor_strength=Range(0.85, 1.15),
            latency_steps=(0, 2),
            obs_noise_scale=1.5,
            push_velocity=Range(0.0, 0.6),
            push_interval_s=1.5,
            inertia_scale=Range(0.8, 1.25),
            thrust_coefficient=Range(0.8, 1.2),
            torque_coefficient=Range(0.6, 1.4),
            motor_time_constant=Range(0.02, 0.07),
            wind_speed=Range(0.0, 3.0),
            drag_scale=Range(0.5, 1.6),
        )

    # -- application -------------------------------------------------------------
    def robot_body_ids(self, model: mujoco.MjModel) -> np.ndarray:
        return np.array([_drone_body(model)])

    def root_body_id(self, model: mujoco.MjModel) -> int:
        return _drone_body(model)

    def apply(self, model: mujoco.MjModel, nominal: mujoco.MjModel, rng: np.random.Generator) -> dict[str, Any]:
        # Fields the shared restore does not cover go back to nominal first, also when disabled.
        model.actuator_gear[:] = nominal.actuator_gear
        model.actuator_dynprm[:] = nominal.actuator_dynprm
        model.opt.viscosity = nominal.opt.viscosity
        sampled = super().apply(model, nominal, rng)
        if not self.enabled:
            return sampled

        body = _drone_body(model)
        inertia = self.inertia_scale.sample(rng, 3)
        model.body_inertia[body] *= inertia
        sampled["inertia_scale"] = np.round(inertia, 4).tolist()

        thrust = self.thrust_coefficient.sample(rng)
        model.actuator_gainprm[:, 0] *= thrust
        sampled["thrust_coefficient"] = round(float(thrust), 4)

        torque = self.torque_coefficient.sample(rng)
        model.actuator_gear[:, 5] = nominal.actuator_gear[:, 5] * torque
        sampled["torque_coefficient"] = round(float(torque), 4)

        tau = self.motor_time_constant.sample(rng, model.nu)
        model.actuator_dynprm[:, 0] = tau
        sampled["motor_time_constant"] = np.round(tau, 4).tolist()

        speed = self.wind_speed.sample(rng)
        heading = rng.uniform(-np.pi, np.pi)
        model.opt.wind[:] = nominal.opt.wind + speed * np.array([np.cos(heading), np.sin(heading), 0.0])
        sampled["wind"] = np.round(model.opt.wind, 4).tolist()

        drag = self.drag_scale.sample(rng)
        model.opt.density = nominal.opt.density * drag
        model.opt.viscosity = nominal.opt.viscosity * drag
        sampled["drag_scale"] = round(float(drag), 4)
        return sampled
