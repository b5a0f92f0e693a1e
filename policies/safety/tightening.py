"""Which way a safety limit tightens, and the one rule for changing limits at run time.

A safety parameter's type says how it may change while the filter runs:
``Annotated[float, Bounds(...), CEILING]`` (a speed, a timeout, a margin: a smaller
value constrains more) or ``FLOOR`` (a lower joint limit, the lower corner of a
workspace, a switch such as ``latch_watchdog``: ``True`` constrains more). The values the
filter is configured with are the run's *hard limits* (the robot description's bounds
cap those in the parameter file); while it runs a change may only move a limit towards
stricter, within them, and a parameter without a direction is fixed.
"""

from __future__ import annotations

import typing
from dataclasses import dataclass
from typing import Any, Literal

from sim2real.sim.core.schema import type_hints

Direction = Literal["lower", "higher"]


@dataclass(frozen=True)
class Stricter:
    """``Annotated`` marker: which way the limit constrains more."""

    direction: Direction


CEILING = Stricter("lower")
"""A limit that constrains more when lower (a maximum speed, a timeout)."""
FLOOR = Stricter("higher")
"""A limit that constrains more when higher (a minimum, a lower corner, a safety switch)."""


def directions(params_type: type) -> dict[str, Direction]:
    """``{field: "lower" | "higher"}`` for every field of ``params_type`` that may be tightened."""
    out: dict[str, Direction] = {}
    for name, tp in type_hints(params_type).items():
        while typing.get_origin(tp) is typing.Annotated:
            args = typing.get_args(tp)
            mark = next((a for a in args[1:] if isinstance(a, Stricter)), None)
            if mark is not None:
                out[name] = mark.direction
                break
            tp = args[0]
    return out


def _values(value: Any) -> list[float]:
    return [float(v) for v in value] if isinstance(value, (list, tuple)) else [float(value)]


def loosened(name: str, hard: Any, new: Any, direction: Direction) -> str:
    """Why ``new`` is not within the hard limit ``hard`` of ``name`` (``""``: it is)."""
    a, b = _values(hard), _values(new)
    if len(a) != len(b):
        return f"{name}: {len(b)} values where the hard limit has {len(a)}"
    worse = [i for i, (h, v) in enumerate(zip(a, b, strict=True)) if (v > h if direction == "lower" else v < h)]
    if not worse:
        return ""
    where = "" if not isinstance(hard, (list, tuple)) else f" (element {', '.join(map(str, worse))})"
    bound = "above" if direction == "lower" else "below"
    return f"{name} = {new} is {bound} its hard limit {hard}{where}: at run time limits may only be tightened"


def check_change(hard: dict[str, Any], changes: dict[str, Any], allowed: dict[str, Direction]) -> str:
    """``""`` when every change keeps its limit within the hard limits, else why not."""
    reasons = []
    for name, value in changes.items():
        if name not in allowed:
            reasons.append(f"{name} is fixed while the filter runs")
        elif name in hard:
            reasons.append(loosened(name, hard[name], value, allowed[name]))
    return "; ".join(r for r in reasons if r)
