"""Energy tanks: the bookkeeping that makes a variable-impedance controller passive.

A Cartesian impedance controller with a *moving* setpoint and *variable* stiffness is
not passive: every change of setpoint or stiffness can put energy into its virtual
spring, and the spring hands that energy to the robot and its environment. The tank
(Ferraguti et al., "A tank-based approach to impedance control with variable
stiffness", ICRA 2013; Califano et al., "On the use of energy tanks for robotic
systems", arXiv:2211.17033) is a virtual energy store that pays for those changes and
is refilled by the energy the controller's damping dissipates, so that

    S = V + T,  V = 1/2 sum_i K_i (x_d,i - x_i)^2  (the spring's stored energy)

only ever decreases by the work the controller does on the robot: the controller
is passive with respect to ``S`` as long as ``T`` stays above ``T_min > 0``.

Discrete-time bookkeeping, per control step ``k`` (the controller holds ``K`` and
``x_d`` constant between control steps and runs the law at physics rate):

* at the command update, the tank pays the jump of the spring's energy at the
  measured pose, ``E_k = V(x_k; K_k, x_d,k) - V(x_k; K_k-1, x_d,k-1)``; a negative
  jump (a softer spring, a setpoint pulled towards the robot) refunds the tank;
* during the step, the damper's dissipation flows back in,
  ``D_k = sum over physics steps of sum_i d_i xdot_i^2 dt``, only while ``T < T_max``
  (the ``sigma`` switch of the references: a full tank stores no more, which bounds
  how much energy can later be released);
* ``T_k+1 = min(T_max, T_k - E_k + sigma_k D_k)``.

Between updates the spring with constant ``K`` and ``x_d`` is conservative, so
nothing else enters the balance. A step that would take the tank below ``T_min``
is a *violation*: the energy drawn beyond ``T - T_min`` is reported (it is the
constrained-RL cost) and the tank stops at ``T_min``. A passivity filter
(:func:`passive_scale`) shrinks the command so that ``E_k <= T_k - T_min`` holds
exactly, and then no violation can occur.

Everything is batch-first numpy (``[B]`` tanks), shared by the simulated arm (for
training costs and evaluation), the evaluation wrapper and the ROS 2 safety filter.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sim2real.sim.core.errors import ConfigError
from sim2real.sim.core.schema import from_dict

ROUNDING_J = 1e-12
"""Energy differences below this (J) are floating-point rounding."""


@dataclass
class TankParams:
    """Energy levels of a tank, in joules."""

    initial: float = 1.0
    """Energy at the start of an episode (J)."""
    minimum: float = 0.05
    """``T_min``: the tank never lends below this level (J); must be > 0."""
    maximum: float = 2.0
    """``T_max``: dissipated energy stops flowing in at this level (J)."""

    def validate(self) -> None:
        for name in ("initial", "minimum", "maximum"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not np.isfinite(value):
                raise ConfigError(f"energy_tank.{name}", f"must be a finite number of joules, got {value!r}")
        if not 0.0 < self.minimum < self.maximum:
            raise ConfigError("energy_tank", f"need 0 < minimum < maximum, got {self.minimum} and {self.maximum}")
        if not self.minimum <= self.initial <= self.maximum:
            raise ConfigError("energy_tank.initial", f"must lie in [minimum, maximum], got {self.initial}")

    @classmethod
    def from_dict(cls, values: dict | None) -> TankParams:
        """Parameters from a config mapping, through the strict loader."""
        params = from_dict(cls, dict(values or {}), "energy_tank.")
        assert isinstance(params, TankParams)
        return params


@dataclass
class TankUpdate:
    """What one :meth:`EnergyTank.update` did, per tank (``[B]`` each)."""

    injected: np.ndarray
    """Energy the command update put into the spring (J, >= 0 part of ``E_k``)."""
    refunded: np.ndarray
    """Energy the command update gave back to the tank (J, >= 0)."""
    violation: np.ndarray
    """Energy drawn beyond ``T - T_min`` (J, >= 0); zero under the passivity filter."""


class EnergyTank:
    """``B`` energy tanks with the bookkeeping in the module docstring.

    Args:
        params: Energy levels (validated).
        num: Number of tanks (one per environment).
    """

    def __init__(self, params: TankParams, num: int = 1) -> None:
        params.validate()
        self.params = params
        self.level = np.full(num, float(params.initial))
        """Tank energy ``T`` (J), ``[B]``."""

    def reset(self, ids: np.ndarray | list[int] | int | None = None) -> None:
        """Refill tanks ``ids`` (all by default) to the initial level."""
        if ids is None:
            self.level[:] = self.params.initial
        else:
            self.level[ids] = self.params.initial

    def budget(self) -> np.ndarray:
        """Energy each tank may still lend this step, ``T - T_min`` (J, >= 0)."""
        return np.maximum(self.level - self.params.minimum, 0.0)

    def update(self, spring_jump: np.ndarray) -> TankUpdate:
        """Pay for (or take back) the jump of the spring's energy at a command update."""
        jump = np.asarray(spring_jump, dtype=np.float64)
        # A non-finite energy means a non-finite command reached the controller: fail
        # closed, as if it had drawn the whole budget (the tank empties to T_min).
        bad = ~np.isfinite(jump)
        jump = np.where(bad, self.budget(), jump)
        violation = jump - self.budget()
        # Overdraws below a picojoule are floating-point rounding, not energy.
        violation = np.where(violation > ROUNDING_J, violation, 0.0)
        self.level = np.clip(self.level - jump, self.params.minimum, self.params.maximum)
        return TankUpdate(injected=np.maximum(jump, 0.0), refunded=np.maximum(-jump, 0.0), violation=violation)

    def dissipate(self, energy: np.ndarray) -> np.ndarray:
        """Let dissipated energy flow back in (only into tanks below ``T_max``);
        returns the energy stored (J, ``[B]``)."""
        e = np.maximum(np.nan_to_num(np.asarray(energy, dtype=np.float64), nan=0.0, posinf=0.0), 0.0)
        stored = np.where(self.level < self.params.maximum, e, 0.0)
        before = self.level.copy()
        self.level = np.minimum(self.level + stored, self.params.maximum)
        return self.level - before


def spring_energy(offset: np.ndarray, stiffness: np.ndarray) -> np.ndarray:
    """``1/2 sum_i K_i e_i^2`` over the last axis: the energy of a diagonal spring."""
    return 0.5 * np.sum(np.asarray(stiffness) * np.square(offset), axis=-1)


def passive_scale(
    new_offset: np.ndarray, new_stiffness: np.ndarray, old_energy: np.ndarray, budget: np.ndarray
) -> np.ndarray:
    """The factor ``beta in [0, 1]`` (``[B]``) to scale a new spring offset by so the
    energy jump stays within the tank's budget: ``V(beta e') - V_old <= budget``.

    ``V`` is quadratic in the offset, so the largest admissible factor has the closed
    form ``beta = sqrt((V_old + budget) / V(e'))``; ``beta = 1`` when the command
    already fits. Scaling the offset keeps the commanded direction and the policy's
    chosen stiffness (its compliance), and reduces the force ``K e`` in proportion.
    A slightly smaller factor (relative 1e-9) absorbs floating-point rounding, so
    the tank provably never goes below ``T_min``.
    """
    v_new = spring_energy(new_offset, new_stiffness)
    allowed = np.maximum(np.asarray(old_energy) + np.asarray(budget), 0.0)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        beta = np.sqrt(allowed / v_new) * (1.0 - 1e-9)
    beta = np.where(v_new > allowed, beta, 1.0)
    return np.clip(np.nan_to_num(beta, nan=0.0), 0.0, 1.0)
