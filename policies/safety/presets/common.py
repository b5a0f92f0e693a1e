"""What every robot's safety parameters share, and how a robot's preset registers."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Annotated, Any

import numpy as np

from sim2real.policies.safety.tightening import CEILING, FLOOR
from sim2real.sim.core.schema import Bounds

Periods = Annotated[float, Bounds(ge=0.5, le=100.0)]
"""A time in control periods (half a period at least: a watchdog needs one tick)."""
Tilt = Annotated[float, Bounds(gt=0.0, le=1.57)]
"""A tilt angle in rad, up to 90 deg."""


def _list(a: np.ndarray | list[float]) -> list[float]:
    return [float(x) for x in a]


def _xyz(a: list[float]) -> tuple[float, float, float]:
    """A point as a 3-tuple (``a`` already checked to hold 3 values, e.g. by a guard's params)."""
    x, y, z = a
    return float(x), float(y), float(z)


@dataclass
class CommonParams:
    command_timeout_periods: Annotated[Periods, CEILING] = 2.0
    """A command older than this many control periods is stale. With the node checking
    every quarter period, the safe action starts within 2.25 periods of the last command."""
    state_timeout_periods: Annotated[Periods, CEILING] = 2.0
    """A state stream older than this many control periods is stale (safe action)."""
    latch_watchdog: Annotated[bool, FLOOR] = False
    """Keep the safe action after a timeout until an explicit reset. Off by default: the
    policy resumes on its next fresh command (a watchdog trip from scheduling jitter must
    not end a run); turn it on where a started landing or stand-down must complete."""
    rate_max_dt_periods: Annotated[Periods, CEILING] = 2.0
    """Elapsed time credited to the rate limit is capped at this many periods."""


Builder = Callable[[Any, Any, float], tuple[list, list, Any]]
"""``(space, params, dt) -> (guards, limits, fallback)``: a robot's chain."""


def no_policy_values(task_options: dict[str, Any]) -> dict[str, Any]:
    return {}


@dataclass(frozen=True)
class Preset:
    """One robot's safety filter: its parameters, its chain, and the parameters a
    policy's own settings decide (:func:`~sim2real.policies.safety.presets.policy_safety_values`)."""

    params: type[CommonParams]
    build: Builder
    policy_values: Callable[[dict[str, Any]], dict[str, Any]] = field(default=no_policy_values)
