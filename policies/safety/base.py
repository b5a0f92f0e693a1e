"""The contract every safety filter implements.

``filter(command, state) -> (safe_command, FilterReport)``: ``command`` is a float
vector in the robot's command units (see :mod:`~sim2real.policies.safety.spaces`),
``state`` the latest measurements. A filter never raises on bad input: it clamps,
replaces or trips, and says so in its report. Filters are small and stateful at most
in a documented way (a latch, the previous output); :meth:`SafetyFilter.reset` clears
that state.

Two kinds take part in a chain (:mod:`~sim2real.policies.safety.chain`):

* **guards** decide *whether* the policy may command the robot (e-stop, watchdog,
  fall, geofence); they pass the command through or trip.
* **limits** decide *what* may be commanded (joint, effort, rate, workspace limits);
  they clamp, and also bound the safe action.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass

import numpy as np

from sim2real.policies.safety.types import FilterReport, SafetyState


@dataclass
class FilterParams:
    """Base of every filter's parameter dataclass."""

    def validate(self) -> None:
        """Raise ``ValueError`` naming the first invalid field."""


class SafetyFilter(abc.ABC):
    """One filter. Subclasses set :attr:`name` and :attr:`kind`."""

    name: str = "filter"
    kind: str = "limit"
    """``"guard"`` or ``"limit"``."""

    @abc.abstractmethod
    def filter(self, command: np.ndarray, state: SafetyState) -> tuple[np.ndarray, FilterReport]:
        """The safe version of ``command`` and what was done to it."""

    latched_reason: str = ""
    """Why a latching guard holds the robot in its safe action until an explicit reset
    (empty: not latched; filters that never latch keep it empty)."""

    final: bool = False
    """A final limit's output is not clipped back into earlier limits' intervals (the
    passivity filter: an energy violation is worse than a rate-limit violation)."""

    last_interval: tuple[np.ndarray, np.ndarray] | None = None
    """The per-element interval the last :meth:`filter` call allowed (``None``: none,
    e.g. guards, overriding limits, or a limit that tripped). The chain keeps later
    limits inside it. Each limit sets it in ``filter`` from the bounds it clamped to."""

    def observe_output(self, command: np.ndarray, state: SafetyState) -> None:
        """Called with the chain's final output after every pass (rate filters keep it)."""

    def reset(self) -> None:
        """Forget internal state (latches are only cleared by an explicit reset)."""


def as_vector(command: object, size: int) -> np.ndarray | None:
    """``command`` as a float64 vector of ``size`` elements, or ``None`` when it cannot
    be one (wrong length, a matrix, ragged, not numeric). Non-finite values are kept
    for the caller."""
    try:
        v = np.asarray(command, dtype=np.float64)
    except (TypeError, ValueError, OverflowError):
        return None
    return v if v.shape == (size,) else None


def clamp(v: np.ndarray, low: np.ndarray, high: np.ndarray, hold: np.ndarray) -> np.ndarray:
    """Clamp ``v`` into ``[low, high]``; NaN becomes ``hold`` (clamped too), +-inf the bound.

    ``low <= high`` must hold elementwise; the result is always finite when the bounds are.
    """
    out = np.where(np.isnan(v), hold, v)
    return np.minimum(np.maximum(out, low), high)
