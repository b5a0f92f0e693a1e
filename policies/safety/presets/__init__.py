"""Per-robot safety parameters (one flat dataclass per robot, so each field maps onto
one ROS 2 parameter) and the chains built from them.

Defaults come from the robots' published limits in ``sim2real.sim.<robot>.constants``,
which also cap them where the robot publishes a ceiling (the arm's Cartesian limits,
the drone's thrust); ``config/<robot>.yaml`` repeats them in ``ros__parameters`` form for
deployment. Each limit's type says which way it tightens (:mod:`.tightening`): while the
filter runs, limits may only be tightened; the rest are fixed at configure.
Timeouts are in control periods so one file serves any rate.

One module per robot class holds its parameter dataclass and its chain builder; a robot
registers here with one line in :data:`PRESETS`.
"""

from __future__ import annotations

from typing import Any

from sim2real.policies.safety import guards
from sim2real.policies.safety.chain import SafetyChain
from sim2real.policies.safety.mux import CommandSource
from sim2real.policies.safety.presets.arm import FRANKA, UR5E_ARM, ArmSafetyParams, Ur5eSafetyParams
from sim2real.policies.safety.presets.common import CommonParams, Preset
from sim2real.policies.safety.presets.drone import DRONE_PRESET, X500_PRESET, DroneSafetyParams
from sim2real.policies.safety.presets.quadruped import QUADRUPED, TUNED_KP, QuadrupedSafetyParams, target_lead
from sim2real.policies.safety.spaces import CommandSpace
from sim2real.sim.core.schema import from_dict

PRESETS: dict[str, Preset] = {
    "arm": FRANKA,
    "ur5e": UR5E_ARM,
    "quadruped": QUADRUPED,
    "drone": DRONE_PRESET,
    "x500": X500_PRESET,
}
"""Robot name -> its safety filter."""

PARAMS: dict[str, type[CommonParams]] = {robot: preset.params for robot, preset in PRESETS.items()}


def params_from_dict(robot: str, values: dict[str, Any]) -> CommonParams:
    """The robot's parameter dataclass with ``values`` applied, through the strict
    loader (unknown keys, wrong types and values out of range raise ConfigError)."""
    params = from_dict(PARAMS[robot], values)
    assert isinstance(params, CommonParams)
    return params


def policy_safety_values(robot: str, task_options: dict[str, Any]) -> dict[str, Any]:
    """The safety parameters a policy's own settings decide (the servo gains an imported
    quadruped policy was trained with: :func:`.quadruped.policy_values`); empty for the
    robots whose policies decide none.

    Raises:
        ConfigError: settings the robot's preset refuses."""
    return PRESETS[robot].policy_values(task_options)


def make_chain(space: CommandSpace, params: CommonParams | None = None, sources: list[CommandSource] | None = None,
               estop: guards.EStop | None = None) -> SafetyChain:
    """The robot's filter chain (see docs/deployment.md, "Safety-filter reference").

    Args:
        sources: The command mux's inputs (default: the policy alone).
        estop: An e-stop to carry over (its latch survives the rebuild)."""
    p = params if params is not None else PARAMS[space.robot]()
    dt = space.control_dt
    watchdog = guards.Watchdog(
        guards.WatchdogParams(p.command_timeout_periods * dt, p.state_timeout_periods * dt, p.latch_watchdog)
    )
    g, lim, fb = PRESETS[space.robot].build(space, p, dt)
    return SafetyChain(space, watchdog, g, lim, fb, sources=sources, estop=estop)


__all__ = ["PARAMS", "PRESETS", "TUNED_KP", "ArmSafetyParams", "CommonParams", "DroneSafetyParams", "Preset",
           "QuadrupedSafetyParams", "Ur5eSafetyParams", "make_chain", "params_from_dict", "policy_safety_values",
           "target_lead"]
