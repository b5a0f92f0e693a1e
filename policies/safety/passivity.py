"""The passivity filter at deployment: an energy tank in front of the arm's
variable-impedance controller (``ee_impedance`` commands).

Two forms share :mod:`sim2real.sim.core.energy_tank`:

* :class:`PassivityLimit`, a limit in the ROS 2 ``safety_filter`` chain. It keeps
  its own tank from the measurements the robot publishes (end-effector pose and the
  controller's setpoint) and the commands it lets through:

  - before each command, the dampers' dissipation since the previous one flows in,
    estimated from the end-effector displacement (``d_i (dx_i/dt)^2 dt``: the mean
    velocity over the interval under-estimates the mean of the squared velocity, so
    the estimate errs towards an emptier tank, the safe side);
  - the command's setpoint (predicted with the controller's own integration law,
    :func:`~sim2real.sim.arm.control.cartesian_setpoint`) and stiffness give the jump
    of the spring's energy; when it exceeds ``margin * (T - T_min)`` the setpoint
    offset is scaled by the closed-form factor and the twist rewritten to reach the
    scaled setpoint.

* :class:`PassivityFilterWrapper`, a Gymnasium wrapper that evaluates any policy on a
  simulated arm task with the exact filter inside the simulated controller
  (``passivity_filter`` task option) and reports tank level and activity in ``info``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, SupportsFloat

import gymnasium as gym
import numpy as np

from sim2real.policies.safety.base import FilterParams, SafetyFilter
from sim2real.policies.safety.spaces import CommandSpace
from sim2real.policies.safety.types import FilterReport, SafetyState
from sim2real.sim.arm.control import cartesian_setpoint, servo_coordinates
from sim2real.sim.arm.model import damping_for
from sim2real.sim.arm.rotations import quat_conj, quat_mul, quat_to_rotvec, rotvec_to_quat
from sim2real.sim.core.energy_tank import EnergyTank, TankParams, passive_scale, spring_energy


@dataclass
class PassivityLimitParams(FilterParams):
    """Tank levels (J) and the share of the budget one command may use."""

    tank_initial: float = 1.0
    tank_minimum: float = 0.05
    tank_maximum: float = 2.0
    margin: float = 0.8
    """Fraction of ``T - T_min`` a command may draw: covers the time between the
    measurement and the controller applying the command."""
    max_linear_speed: float = 0.8
    """m/s: the rewritten twist stays inside the chain's velocity box."""
    max_angular_speed: float = 2.0
    """rad/s."""

    def validate(self) -> None:
        TankParams(self.tank_initial, self.tank_minimum, self.tank_maximum).validate()
        if not 0.0 < self.margin <= 1.0:
            raise ValueError(f"margin: must lie in (0, 1], got {self.margin}")


class PassivityLimit(SafetyFilter):
    """Scale ``ee_impedance`` commands so the tank never falls below ``T_min``.

    Trips (the chain holds) when the end-effector pose or the controller's setpoint is
    missing: without them the energy of a command cannot be known.
    """

    name = "passivity"
    kind = "limit"

    def __init__(self, params: PassivityLimitParams, space: CommandSpace) -> None:
        params.validate()
        if space.action_mode != "ee_impedance":
            raise ValueError(f"the passivity filter needs ee_impedance commands, not {space.action_mode}")
        self.params = params
        self.space = space
        self.tank = EnergyTank(TankParams(params.tank_initial, params.tank_minimum, params.tank_maximum), 1)
        self.reset()

    def reset(self) -> None:
        self.tank.reset()
        self.stiffness = self.space.hold[6:12].copy()
        self._prev_x: np.ndarray | None = None
        self._prev_t: float | None = None
        self.last_scale = 1.0
        self.interventions = 0
        self.violation = 0.0
        """Energy (J) this filter's own tank had to overdraw: zero unless its feasibility
        argument failed (reported in the diagnostics, tested to stay zero)."""
        self._cached: tuple[tuple, np.ndarray, FilterReport] | None = None

    def status(self) -> dict[str, float]:
        """Figures for the diagnostics."""
        return {
            "tank_energy": float(self.tank.level[0]),
            "passivity_scale": self.last_scale,
            "passivity_interventions": float(self.interventions),
            "passivity_violation": self.violation,
        }

    def filter(self, command: np.ndarray, state: SafetyState) -> tuple[np.ndarray, FilterReport]:
        if not state.has("ee_pos", "ee_quat", "ee_pos_desired", "ee_quat_desired"):
            return command, FilterReport(self.name, tripped=True, reason="no end-effector pose or setpoint")
        # The chain re-runs between commands (watchdog ticks, state arrivals): the robot
        # applies each command once, so the tank pays for it once.
        key = (state.command_stamp, np.asarray(command, dtype=np.float64).tobytes())
        if self._cached is not None and self._cached[0] == key:
            return self._cached[1].copy(), self._cached[2]
        out = np.array(command, dtype=np.float64)
        dt = self.space.control_dt
        pos, quat = np.asarray(state.ee_pos, float)[None], np.asarray(state.ee_quat, float)[None]
        x = servo_coordinates(pos, quat)
        self._dissipate(x[0], state.now)
        sp_pos, sp_quat = np.asarray(state.ee_pos_desired, float)[None], np.asarray(state.ee_quat_desired, float)[None]
        old_energy = spring_energy(servo_coordinates(sp_pos, sp_quat) - x, self.stiffness[None])
        lower, upper = self.space.lower[6:12], self.space.upper[6:12]
        # Standalone it must still bound everything (in the chain the velocity box came first).
        box = np.r_[np.full(3, self.params.max_linear_speed), np.full(3, self.params.max_angular_speed)]
        twist = np.clip(np.nan_to_num(out[:6], nan=0.0, posinf=0.0, neginf=0.0), -box, box)
        stiffness = np.clip(np.where(np.isfinite(out[6:12]), out[6:12], lower), lower, upper)
        out[:6], out[6:12] = twist, stiffness
        out[12:] = np.clip(
            np.where(np.isfinite(out[12:]), out[12:], self.space.hold[12:]),
            self.space.lower[12:],
            self.space.upper[12:],
        )
        new_pos, new_quat = cartesian_setpoint(sp_pos, sp_quat, pos, quat, twist[None, :3] * dt, twist[None, 3:] * dt)
        offset = servo_coordinates(new_pos, new_quat) - x
        budget = self.params.margin * self.tank.budget()
        beta = float(passive_scale(offset, stiffness[None], old_energy, budget)[0])
        report = FilterReport(self.name)
        if beta < 1.0:
            out, offset, stiffness, report = self._shrink(
                out, beta, pos, quat, sp_pos, sp_quat, new_pos, new_quat, x, stiffness, float(old_energy[0] + budget[0])
            )
        self.violation += float(self.tank.update(spring_energy(offset, stiffness[None]) - old_energy).violation[0])
        self.stiffness = stiffness
        self.last_scale = beta
        self._cached = (key, out.copy(), report)
        return out, report

    def _shrink(self, out, beta, pos, quat, sp_pos, sp_quat, new_pos, new_quat, x, stiffness, allowed):
        """The command for setpoint offset ``beta * e'``, within the velocity box.

        Pulling the setpoint towards the measured pose can need a faster twist than the
        box allows (when the old setpoint lags far behind); then the twist is clipped
        to the box and the stiffness lowered until the energy fits. The controller keeps
        its setpoint within ``EE_DELTA_POS_MAX`` of the pose, so the clipped setpoint is
        nearer the pose than the old one and the softest spring always fits.
        """
        dt = self.space.control_dt
        box = np.r_[np.full(3, self.params.max_linear_speed), np.full(3, self.params.max_angular_speed)]
        rot = quat_to_rotvec(quat_mul(new_quat, quat_conj(quat)))
        requested = out[:6].copy()

        def command_for(scale: float, k: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
            """Twist reaching the setpoint ``x + scale e'`` (clipped to the box), the
            offset the controller will then hold, and its spring energy under ``k``."""
            target_pos = pos + scale * (new_pos - pos)
            target_quat = quat_mul(rotvec_to_quat(scale * rot), quat)
            rot_step = quat_to_rotvec(quat_mul(target_quat, quat_conj(sp_quat)))[0]
            twist = np.clip(np.r_[(target_pos - sp_pos)[0], rot_step] / dt, -box, box)
            p2, q2 = cartesian_setpoint(sp_pos, sp_quat, pos, quat, twist[None, :3] * dt, twist[None, 3:6] * dt)
            offset = servo_coordinates(p2, q2) - x
            return twist, offset, float(spring_energy(offset, k[None])[0])

        twist, offset, energy = command_for(beta, stiffness)
        if energy > allowed:
            stiffness = np.maximum(self.space.lower[6:12], stiffness * allowed / energy * (1.0 - 1e-9))
            twist, offset, energy = command_for(beta, stiffness)
        if energy > allowed:
            # Rotation vectors do not compose linearly, so the scaled setpoint can miss
            # the closed form by rounding-sized amounts: bisect the scale down to fit.
            lo, hi = 0.0, beta
            for _ in range(40):
                mid = 0.5 * (lo + hi)
                lo, hi = (mid, hi) if command_for(mid, stiffness)[2] <= allowed else (lo, mid)
            twist, offset, energy = command_for(lo, stiffness)
        out[:6], out[6:12] = twist, stiffness
        self.interventions += 1
        level = self.tank.level[0]
        report = FilterReport(
            self.name,
            acted=True,
            change=float(np.max(np.abs(out[:6] - requested))),
            elements=list(range(12)),
            reason=f"tank {level:.3f} J: setpoint offset scaled by {beta:.3f}",
        )
        return out, offset, stiffness, report

    def _dissipate(self, x: np.ndarray, now: float) -> None:
        if self._prev_x is not None and self._prev_t is not None and now > self._prev_t:
            elapsed = now - self._prev_t
            velocity = (x - self._prev_x) / elapsed
            self.tank.dissipate(np.array([np.sum(damping_for(self.stiffness) * velocity**2) * elapsed]))
        self._prev_x, self._prev_t = x.copy(), now


class PassivityFilterWrapper(gym.Wrapper):
    """Gymnasium wrapper: run an arm task in ``ee_impedance`` mode with the passivity
    filter inside the simulated controller, and report it in ``info["passivity"]``.

    Args:
        env: A :class:`~sim2real.sim.core.env.SimEnv` of an arm task in ``ee_impedance`` mode.
        tank: Tank levels (``initial``/``minimum``/``maximum`` in J; default: the task's).
    """

    def __init__(self, env: gym.Env, tank: dict[str, float] | None = None) -> None:
        from sim2real.sim.core.errors import ConfigError

        super().__init__(env)
        energy = getattr(getattr(env.unwrapped, "task", None), "energy", None)
        if energy is None:
            raise ConfigError("action_mode", "the passivity filter wraps arm tasks in ee_impedance mode only")
        if tank is not None:
            energy.tank = EnergyTank(TankParams.from_dict(tank), len(energy.tank.level))
        energy.filter_enabled = True
        self.energy = energy

    def step(self, action: Any) -> tuple[Any, SupportsFloat, bool, bool, dict[str, Any]]:
        obs, reward, terminated, truncated, info = self.env.step(action)
        m = info.get("metrics", {})
        keys = ("tank_energy", "passivity_scale", "passivity_active", "energy_violation")
        info["passivity"] = {k: m[k] for k in keys if k in m}
        return obs, reward, terminated, truncated, info
