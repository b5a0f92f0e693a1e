"""Robustness curves: how a policy's success falls as one physical parameter moves from
the middle of its training range to far beyond its edge, with the rest nominal, next to
the task's classical reference controller on the same episodes (same seeds).

An axis is a field of the robot's randomization (:mod:`sim2real.sim.core.randomization`).
Its points are constant values (every episode runs at exactly that value):

* a range the training preset samples on both sides of a centre ``c`` with half-width
  ``h`` (mass 0.9-1.1): ``c + k h`` for ``k`` in -3..3, so 2 and 3 are one and two
  half-widths beyond the training edge; clipped to the field's own bounds;
* a magnitude trained from zero (wind 0-1.5 m/s, pushes 0-0.3 m/s): ``k hi`` for ``k``
  in 0, 0.5, 1, 1.5, 2, 3;
* latency (whole control steps): 0 to three times the training maximum;
* observation noise (a multiplier): 0 to three times the training one.

Combined points widen every axis at once by the same factor (1: the training preset's
ranges, 2 and 3 beyond), sampled per episode as in training.

Model-error axes probe what a model may get wrong rather than a trained range (the
quadruped's joint damping up to a public Go2 model's 2 N m s/rad, its foot contact's
condim, its motors' torque-speed limit): the robot declares each as a
:class:`~sim2real.sim.core.randomization.Sweep` of explicit values in its randomization's
``model_sweeps``. They run when named (``model`` names them all), and neither the combined
points nor the feasible preset widen them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from sim2real.sim.core.errors import ConfigError
from sim2real.sim.core.randomization import DomainRandomization, Range, Sweep

AXES: dict[str, str] = {
    "mass": "mass_scale",
    "friction": "friction",
    "motor_strength": "motor_strength",
    "latency": "latency_steps",
    "push": "push_velocity",
    "wind": "wind_speed",
    "obs_noise": "obs_noise_scale",
    "kp": "pd_gain_scale",
}
"""Axis name (the command line's) -> the randomization field it moves."""
TWO_SIDED = (-3.0, -2.0, -1.0, 0.0, 1.0, 2.0, 3.0)
ONE_SIDED = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0)
COMBINED = (1.0, 2.0, 3.0)
MODEL = "model"
"""The ``--axes`` name for every model-error axis of the robot."""

Controller = Callable[[np.ndarray], np.ndarray]


@dataclass(frozen=True)
class Axis:
    """One axis of a robot: its field, the training range and the points evaluated."""

    name: str
    field: str
    train_low: float
    train_high: float
    values: tuple[float, ...]
    trained: bool = True
    """A trained range's axis; False: a model-error :class:`Sweep` (not widened by
    :func:`combined` or :func:`feasible_preset`)."""
    unit: str = ""
    fixed: tuple[tuple[str, float], ...] = ()
    """Other fields held at these values at every point (a sweep's)."""
    substeps: int = 1
    """Physics steps per task timestep at every point (a sweep's :attr:`Sweep.substeps`)."""

    def at(self, base: DomainRandomization, train: DomainRandomization, value: float) -> DomainRandomization:
        """``base`` with this axis's field held at ``value`` (pushes at training's interval)."""
        dr = base
        for field, fixed in self.fixed:
            dr = _set(dr, train, field, fixed, fixed)
        return _set(dr, train, self.field, value, value)


def axes_for(train: DomainRandomization, names: list[str] | None = None) -> tuple[list[Axis], dict[str, str]]:
    """The axes of ``names`` (None: every trained axis; ``model``: every model-error axis)
    that ``train``'s robot has, and why the others are left out.

    Raises:
        ConfigError: an unknown axis name.
    """
    sweeps = type(train).model_sweeps()
    names = [n for name in names or list(AXES) for n in (list(sweeps) if name == MODEL else [name])]
    known = [*AXES, *dict.fromkeys(n for names in all_model_axes().values() for n in names), MODEL]
    unknown = sorted(set(names) - set(known))
    if unknown:
        raise ConfigError("--axes", f"unknown axis {', '.join(unknown)}; choose from {', '.join(known)}")
    axes, skipped = [], {}
    for name in dict.fromkeys(names):
        if name not in AXES:
            if name in sweeps:
                axes.append(_sweep_axis(name, sweeps[name], train))
            else:
                skipped[name] = f"not a model-error axis of this robot ({', '.join(sweeps) or 'it has none'})"
            continue
        field = AXES[name]
        if not hasattr(train, field):
            skipped[name] = f"the robot has no {field}"
            continue
        low, high = _bounds_of(getattr(train, field))
        if low == high and not (field == "obs_noise_scale" and high > 0):
            skipped[name] = f"not randomized in training ({field} = {low:g})"
            continue
        axes.append(Axis(name, field, low, high, _points(train, field, low, high)))
    return axes, skipped


def all_model_axes() -> dict[str, list[str]]:
    """Each robot with model-error axes -> their names (for ``--axes`` help)."""
    from sim2real.sim import ROBOTS

    out = {robot: list(dict.fromkeys(n for task in package.TASKS for n in task.dr_class.model_sweeps()))
           for robot, package in ROBOTS.items()}
    return {robot: names for robot, names in out.items() if names}


def _sweep_axis(name: str, sweep: Sweep, train: DomainRandomization) -> Axis:
    """A sweep's axis; its "training range" is what training samples of the field (a
    choice such as condim: none)."""
    value = getattr(train, sweep.field)
    low, high = (value.low, value.high) if isinstance(value, Range) else (float("nan"), float("nan"))
    return Axis(name, sweep.field, low, high, tuple(sweep.values), trained=False, unit=sweep.unit, fixed=sweep.fixed,
                substeps=sweep.substeps)


def combined(train: DomainRandomization, axes: list[Axis], factor: float) -> DomainRandomization:
    """The training preset with every trained axis's range widened ``factor`` times about
    its centre (magnitudes from zero: ``factor`` times their top)."""
    dr = train
    for axis in (a for a in axes if a.trained):
        low, high = axis.train_low, axis.train_high
        if _one_sided(axis.field, low):
            dr = _set(dr, train, axis.field, 0.0, factor * high)
        else:
            c, h = (low + high) / 2, (high - low) / 2
            lo, hi = _clip(train, axis.field, c - factor * h), _clip(train, axis.field, c + factor * h)
            dr = _set(dr, train, axis.field, lo, hi)
    return dr


def feasible_preset(train: DomainRandomization, axes: list[Axis], ok: dict[str, list[bool]]
                    ) -> tuple[DomainRandomization, dict[str, list[float]]]:
    """The training preset with each axis's range widened to the contiguous run of its
    points around the training centre where ``ok`` (the oracle succeeds), never
    narrower than training's; and those ranges per axis."""
    dr, ranges = train, {}
    for axis in (a for a in axes if a.trained):
        flags, values = ok[axis.name], axis.values
        centre = (axis.train_low + axis.train_high) / 2
        lo = hi = int(np.argmin([abs(v - centre) for v in values]))
        if flags[lo]:
            while lo > 0 and flags[lo - 1]:
                lo -= 1
            while hi < len(values) - 1 and flags[hi + 1]:
                hi += 1
        low, high = min(values[lo], axis.train_low), max(values[hi], axis.train_high)
        dr = _set(dr, train, axis.field, low, high)
        ranges[axis.name] = [low, high]
    return dr, ranges


# -- helpers -----------------------------------------------------------------------------
def _bounds_of(value: Any) -> tuple[float, float]:
    if isinstance(value, Range):
        return float(value.low), float(value.high)
    if isinstance(value, tuple):  # latency_steps
        return float(value[0]), float(value[1])
    return 0.0, float(value)  # obs_noise_scale: trained at this multiplier


def _one_sided(field: str, low: float) -> bool:
    return field in ("latency_steps", "obs_noise_scale") or low == 0.0


def _points(train: DomainRandomization, field: str, low: float, high: float) -> tuple[float, ...]:
    if field == "latency_steps":
        return tuple(float(k) for k in range(int(3 * high) + 1))
    if _one_sided(field, low):
        return tuple(k * high for k in ONE_SIDED)
    c, h = (low + high) / 2, (high - low) / 2
    return tuple(dict.fromkeys(round(_clip(train, field, c + k * h), 6) for k in TWO_SIDED))


def _clip(train: DomainRandomization, field: str, value: float) -> float:
    bounds = next(f for f in dataclasses.fields(train) if f.name == field).metadata.get("bounds")
    if bounds is not None and bounds.ge is not None:
        value = max(value, bounds.ge)
    if bounds is not None and bounds.le is not None:
        value = min(value, bounds.le)
    return value


def _set(dr: DomainRandomization, train: DomainRandomization, field: str, low: float, high: float
         ) -> DomainRandomization:
    current = getattr(dr, field)
    if field == "latency_steps":
        changes: dict[str, Any] = {field: (int(round(low)), int(round(high)))}
    elif isinstance(current, Range):
        changes = {field: Range(float(low), float(high))}
    elif isinstance(current, int) and not isinstance(current, bool):  # a choice such as foot_condim
        changes = {field: int(round(high))}
    else:  # obs_noise_scale: a multiplier
        changes = {field: float(high)}
    if field == "push_velocity":
        changes["push_interval_s"] = train.push_interval_s
    out = dataclasses.replace(dr, enabled=True, **changes)
    out.validate()
    return out
