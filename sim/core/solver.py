"""A second simulator configuration for sim-to-sim checks: the same robot and task with a
different integrator, a finer physics step or softer contacts.

Practitioners run a policy in a second simulator before hardware; a policy that only
works with one integrator's numerical damping or one contact stiffness is unlikely to
work on a robot. :class:`SolverVariant` changes a task's model after it is built, before
the engine copies it per environment (so randomization applies on top of it).
"""

from __future__ import annotations

from dataclasses import dataclass

import mujoco

from sim2real.sim.core.errors import ConfigError

INTEGRATORS = {"Euler": mujoco.mjtIntegrator.mjINT_EULER, "RK4": mujoco.mjtIntegrator.mjINT_RK4,
               "implicit": mujoco.mjtIntegrator.mjINT_IMPLICIT, "implicitfast": mujoco.mjtIntegrator.mjINT_IMPLICITFAST}


@dataclass(frozen=True)
class SolverVariant:
    """How a simulation differs from the task's own."""

    integrator: str = ""
    """``Euler``, ``RK4``, ``implicit`` or ``implicitfast`` ("": the model's)."""
    substeps: int = 1
    """Physics steps per step of the task's own ``physics_dt`` (2: half the timestep)."""
    contact_softness: float = 1.0
    """Factor on every contact's time constant (``solref[0]``; 2: contacts twice as soft)."""

    def __post_init__(self) -> None:
        if self.integrator and self.integrator not in INTEGRATORS:
            raise ConfigError("integrator", f"must be one of {', '.join(INTEGRATORS)}, got {self.integrator!r}")
        if int(self.substeps) != self.substeps or not 1 <= self.substeps <= 16:
            raise ConfigError("substeps", f"must be a whole number in [1, 16], got {self.substeps}")
        if not 0.1 <= self.contact_softness <= 10.0:
            raise ConfigError("contact_softness", f"must be in [0.1, 10], got {self.contact_softness}")

    def physics_dt(self, task_dt: float) -> float:
        return task_dt / self.substeps

    def apply(self, model: mujoco.MjModel) -> None:
        """Change ``model`` (its timestep is the engine's to set) in place."""
        if self.integrator:
            model.opt.integrator = INTEGRATORS[self.integrator]
        if self.contact_softness != 1.0:
            # Positive solref[0] is a time constant (negative: direct stiffness, left alone).
            for solref in (model.geom_solref, model.pair_solref):
                soft = solref[:, 0] > 0
                solref[soft, 0] *= self.contact_softness

    def describe(self) -> str:
        parts = [f"integrator {self.integrator}"] if self.integrator else []
        if self.substeps != 1:
            parts.append(f"timestep / {self.substeps}")
        if self.contact_softness != 1.0:
            parts.append(f"contacts x{self.contact_softness:g} softer")
        return ", ".join(parts) or "the task's own"


SIM2SIM: dict[str, SolverVariant] = {
    "own": SolverVariant(),
    "rk4": SolverVariant(integrator="RK4"),
    "implicit": SolverVariant(integrator="implicit"),
    "half_timestep": SolverVariant(substeps=2),
    "soft_contacts": SolverVariant(contact_softness=2.0),
    "all": SolverVariant(integrator="RK4", substeps=2, contact_softness=2.0),
}
"""The sim-to-sim check's configurations (``own`` is the reference)."""
