"""The energy tank of the arm's variable-impedance controller (``ee_impedance`` mode).

The bookkeeping and its references are in :mod:`sim2real.sim.core.energy_tank`; this
module applies them to the arm's six Cartesian axes, in the coordinates the impedance
actuators themselves use (:func:`~sim2real.sim.arm.control.servo_coordinates`):

* at each command, the jump of the spring's energy at the measured pose is paid from
  the tank (or refunded to it);
* after each physics step, the dampers' dissipation ``sum_i d_i xdot_i^2 dt`` (the
  actuator velocities come from ``actuatorvel`` sensors sampled at physics rate) flows
  back in;
* with the passivity filter on, the new setpoint offset is scaled by
  :func:`~sim2real.sim.core.energy_tank.passive_scale` first, so the tank never
  goes below ``T_min``; the controller's stored setpoint becomes the filtered one
  (as a real controller's would).

Per-step and per-episode figures are reported as task metrics (``tank_energy``,
``energy_injected``, ``energy_violation`` (the constrained-RL cost), ...).
"""

from __future__ import annotations

import numpy as np

from sim2real.sim.arm.control import REF_QUAT, ActionMapper, servo_coordinates, stiffness_from_action
from sim2real.sim.arm.rotations import quat_mul, rotvec_to_quat
from sim2real.sim.core.energy_tank import EnergyTank, TankParams, passive_scale, spring_energy

EPISODE_TOTALS = ("energy_injected", "energy_violation", "energy_dissipated")
"""Per-step metrics also summed over the episode (reported as ``<name>_total``)."""


class ArmEnergyTank:
    """Tanks, optional passivity filter and energy metrics for ``B`` arms.

    Args:
        num_envs: Batch size.
        params: Tank energy levels.
        passivity_filter: Scale commands so the tank never drops below ``T_min``.
    """

    def __init__(self, num_envs: int, params: TankParams, passivity_filter: bool = False) -> None:
        self.tank = EnergyTank(params, num_envs)
        self.filter_enabled = bool(passivity_filter)
        self.stiffness = np.tile(stiffness_from_action(np.zeros((1, 6))), (num_envs, 1))
        self.damping = np.zeros((num_envs, 6))
        self.target = np.zeros((num_envs, 6))
        """Spring setpoint in servo coordinates (the one in effect)."""
        self.step = {
            name: np.zeros(num_envs)
            for name in (*EPISODE_TOTALS, "tank_energy", "passivity_scale", "passivity_active")
        }
        self.totals = {name: np.zeros(num_envs) for name in EPISODE_TOTALS}
        self.violation_steps = np.zeros(num_envs)
        self.filter_steps = np.zeros(num_envs)
        self.tank_low = np.zeros(num_envs)

    def reset(self, env_id: int, ee_pos: np.ndarray, ee_quat: np.ndarray, ctrl: np.ndarray) -> None:
        """Start an episode holding the measured pose with ``ctrl`` (the mapper's hold controls)."""
        self.tank.reset(env_id)
        self.target[env_id] = servo_coordinates(ee_pos[None], ee_quat[None])[0]
        self.stiffness[env_id] = ctrl[6:12]
        self.damping[env_id] = ctrl[12:18]
        for v in (*self.step.values(), *self.totals.values()):
            v[env_id] = 0.0
        self.step["tank_energy"][env_id] = self.tank.level[env_id]
        self.step["passivity_scale"][env_id] = 1.0
        self.violation_steps[env_id] = 0.0
        self.filter_steps[env_id] = 0.0
        self.tank_low[env_id] = self.tank.level[env_id]

    def command(self, ctrl: np.ndarray, mapper: ActionMapper, ee_pos: np.ndarray, ee_quat: np.ndarray) -> np.ndarray:
        """Account for (and, with the filter, shrink) the new controls ``[B, 19]``."""
        x = servo_coordinates(ee_pos, ee_quat)
        stiffness = ctrl[:, 6:12]
        target = servo_coordinates(mapper.setpoint_pos, mapper.setpoint_quat)
        offset = target - x
        old_energy = spring_energy(self.target - x, self.stiffness)
        if self.filter_enabled:
            beta = passive_scale(offset, stiffness, old_energy, self.tank.budget())
            scaled = beta < 1.0
            if scaled.any():
                offset = offset * beta[:, None]
                target = x + offset
                ctrl = ctrl.copy()
                ctrl[:, 0:6] = stiffness * target
                # The controller keeps the filtered setpoint: the next action moves it.
                mapper.setpoint_pos[scaled] = target[scaled, :3]
                mapper.setpoint_quat[scaled] = quat_mul(REF_QUAT[None], rotvec_to_quat(target[scaled, 3:6]))
        else:
            beta = np.ones(len(x))
        update = self.tank.update(spring_energy(offset, stiffness) - old_energy)
        self.target = target
        self.stiffness = stiffness.copy()
        self.damping = ctrl[:, 12:18].copy()
        self.step["energy_injected"] = update.injected
        self.step["energy_violation"] = update.violation
        self.step["energy_dissipated"] = np.zeros(len(x))
        self.step["passivity_scale"] = beta
        self.step["passivity_active"] = (beta < 1.0).astype(float)
        self.violation_steps += update.violation > 0.0
        self.filter_steps += beta < 1.0
        return ctrl

    def substeps(self, actuator_velocity: np.ndarray, dt: float) -> None:
        """Dampers' dissipation over physics steps, ``actuator_velocity`` ``[B, n, 6]``."""
        dissipated = np.einsum("bi,bni->b", self.damping, np.square(actuator_velocity)) * dt
        self.step["energy_dissipated"] = self.step["energy_dissipated"] + self.tank.dissipate(dissipated)

    def metrics(self) -> dict[str, np.ndarray]:
        """This step's figures and the episode's running totals, ``[B]`` each."""
        self.step["tank_energy"] = self.tank.level.copy()
        self.tank_low = np.minimum(self.tank_low, self.tank.level)
        for name in EPISODE_TOTALS:
            self.totals[name] = self.totals[name] + self.step[name]
        out = {name: v.copy() for name, v in self.step.items()}
        out.update({f"{name}_total": v.copy() for name, v in self.totals.items()})
        out["violation_steps"] = self.violation_steps.copy()
        out["violated"] = (self.violation_steps > 0).astype(float)
        out["filter_steps"] = self.filter_steps.copy()
        out["tank_energy_min"] = self.tank_low.copy()
        return out
