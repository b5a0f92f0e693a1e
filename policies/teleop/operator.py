"""A person's commands, made safe before they go anywhere: who may command, what they
command, and what happens when they stop.

The rules (the correction console's, for every robot and every attachment):

* **One operator.** The first session to ask gets control; every other session is
  read-only until the operator releases it (or disconnects).
* **Finite, bounded, rate-limited.** Axes arrive as fractions of each axis' limit in
  ``[-1, 1]``: a non-finite value or a wrong length is refused; a value beyond the
  limit is clipped; commands closer together than ``min_interval`` are dropped.
* **Smooth takeover.** The command starts from the policy's current command and
  blends into the person's over ``blend_seconds``, so the robot does not jump.
* **Dead man.** During a takeover, no command for ``timeout`` seconds, the page
  hidden, or the session gone puts the robot in **hold** (the operator space's hold
  command: zero velocities), never the last command and never back to the policy.
  Hold ends when the operator commands again (blending from hold) or gives back.
* **Give back** returns control to the policy at once.

Times are seconds on one monotonic clock, supplied by the caller.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Annotated

import numpy as np

from sim2real.sim.core.deployment import OperatorSpace
from sim2real.sim.core.schema import Bounds

POLICY, HUMAN, HOLD = "policy", "human", "hold"
"""Who commands the robot: the policy, the person, or nobody (the hold command)."""


@dataclass
class OperatorSettings:
    """How the console treats a person's commands."""

    blend_seconds: Annotated[float, Bounds(ge=0.0, le=5.0)] = 0.4
    """s over which a takeover blends from the policy's command into the person's."""
    timeout: Annotated[float, Bounds(gt=0.0, le=2.0)] = 0.2
    """s without a command during a takeover before the robot holds (the dead man)."""
    min_interval: Annotated[float, Bounds(ge=0.0, le=0.5)] = 0.008
    """s: commands closer together than this are dropped (the page sends at 50 Hz)."""
    max_speed_fraction: Annotated[float, Bounds(gt=0.0, le=1.0)] = 1.0
    """Scales every axis' limit (a novice setting below 1)."""


@dataclass
class OperatorOutput:
    """What the person's side commands now."""

    mode: str
    """``policy``, ``human`` or ``hold``."""
    command: np.ndarray | None
    """In the operator space's units (``None`` in ``policy`` mode)."""
    blend: float = 1.0
    """Share of the person's command in ``command`` (takeover ramp, 0..1)."""
    human: np.ndarray | None = None
    """The person's own command (``human`` mode), for targets that blend in a wider
    space than the operator's (all of the arm's command elements)."""


@dataclass
class OperatorControl:
    """The person's side of the robot's command, one operator at a time."""

    space: OperatorSpace
    settings: OperatorSettings = field(default_factory=OperatorSettings)
    owner: str = ""
    """Session that may command (empty: nobody)."""
    mode: str = POLICY
    since: float = 0.0
    """When ``mode`` began."""
    hold_reason: str = ""
    counts: Counter[str] = field(default_factory=Counter)
    """``accepted``, ``refused`` (not the operator), ``invalid``, ``rate_limited``,
    ``clipped`` commands, and ``holds`` (dead-man trips)."""
    _human: np.ndarray | None = None
    _last_command_at: float = -math.inf
    """Last sign of the operator (a command or the takeover itself): the dead man's clock."""
    _last_accepted: float = -math.inf
    """Last accepted command: the rate limit's clock."""
    _blend_from: np.ndarray | None = None
    _blend_start: float = 0.0
    _last_output: np.ndarray | None = None

    # -- sessions ----------------------------------------------------------------------
    def claim(self, session: str) -> bool:
        """Become the operator; True when ``session`` is (or already was) it."""
        if not self.owner:
            self.owner = session
        return self.owner == session

    def release(self, session: str, now: float) -> None:
        """``session`` stops being the operator; a takeover in progress holds."""
        if session != self.owner:
            return
        self.owner = ""
        if self.mode == HUMAN:
            self._hold(now, "the operator released control during a takeover")

    def disconnected(self, session: str, now: float) -> None:
        """The session's connection is gone (tab closed, network lost)."""
        if session == self.owner:
            self.owner = ""
            if self.mode == HUMAN:
                self._hold(now, "the operator's connection was lost")

    def hidden(self, session: str, now: float) -> None:
        """The operator's page is no longer visible: nobody watches what they command."""
        if session == self.owner and self.mode == HUMAN:
            self._hold(now, "the operator's page was hidden")

    # -- control -----------------------------------------------------------------------
    def hold(self, now: float, reason: str) -> None:
        """Stop the person's motion now (an e-stop, a lost robot link); the operator
        leaves hold by commanding again or giving back."""
        if self.mode == HUMAN:
            self._hold(now, reason)

    def take_over(self, session: str, now: float) -> str:
        """The person takes control (blending in); the reason when refused."""
        if not self.claim(session):
            return "another session is the operator (read-only here until it releases)"
        if self.mode != HUMAN:
            self._enter_human(now, from_policy=self.mode == POLICY)
        self._human = np.asarray(self.space.hold, dtype=float)
        self._last_command_at = now
        return ""

    def give_back(self, session: str, now: float) -> str:
        """Control returns to the policy; the reason when refused."""
        if session != self.owner:
            return "only the operator can give control back"
        self.mode, self.since, self.hold_reason = POLICY, now, ""
        self._human = None
        return ""

    def command(self, session: str, axes: list[float] | np.ndarray, now: float) -> str:
        """A person's command as fractions of each axis' limit; the reason when refused."""
        if session != self.owner or self.mode == POLICY:
            self.counts["refused"] += 1
            return "not in control (take over first)" if session == self.owner else "read-only session"
        try:
            values = np.asarray(axes, dtype=float).reshape(-1)
        except (TypeError, ValueError):
            values = np.array([math.nan])
        if values.shape != (len(self.space.axes),) or not np.all(np.isfinite(values)):
            self.counts["invalid"] += 1
            return f"expected {len(self.space.axes)} finite axes {list(self.space.names)}"
        if now - self._last_accepted < self.settings.min_interval:
            self.counts["rate_limited"] += 1
            return "rate limited"
        clipped = np.clip(values, -1.0, 1.0)
        self.counts["clipped"] += int(np.any(clipped != values))
        self._human = clipped * self.space.limits * self.settings.max_speed_fraction
        self._last_command_at = self._last_accepted = now
        if self.mode == HOLD:  # commanding again ends the hold, blending from it
            self._enter_human(now, from_policy=False)
        self.counts["accepted"] += 1
        return ""

    def output(self, now: float, policy_command: np.ndarray | None = None) -> OperatorOutput:
        """The person's command now (``policy_command``: the policy's current command in
        the operator space, for the takeover blend), applying the dead man."""
        if self.mode == HUMAN and now - self._last_command_at > self.settings.timeout:
            self._hold(now, f"no command for {self.settings.timeout * 1e3:.0f} ms")
        if self.mode == POLICY:
            self._last_output = None if policy_command is None else np.asarray(policy_command, dtype=float)
            return OperatorOutput(POLICY, None, 0.0)
        hold = np.asarray(self.space.hold, dtype=float)
        if self.mode == HOLD:
            self._last_output = hold
            return OperatorOutput(HOLD, hold.copy(), 1.0, hold.copy())
        human = hold if self._human is None else self._human
        duration = self.settings.blend_seconds
        alpha = 1.0 if duration <= 0 else min(max((now - self._blend_start) / duration, 0.0), 1.0)
        base = self._blend_from
        if base is None:  # from the policy: follow its current command while blending
            base = hold if policy_command is None else np.asarray(policy_command, dtype=float)
        out = (1.0 - alpha) * base + alpha * human
        self._last_output = out
        return OperatorOutput(HUMAN, out, alpha, human.copy())

    def status(self, now: float) -> dict[str, object]:
        """For the page: who commands, since when, and why it holds."""
        return {"mode": self.mode, "seconds": round(now - self.since, 2), "owner": bool(self.owner),
                "hold_reason": self.hold_reason, "counts": dict(self.counts)}

    # -- transitions -------------------------------------------------------------------
    def _enter_human(self, now: float, from_policy: bool) -> None:
        self.mode, self.since, self.hold_reason = HUMAN, now, ""
        self._blend_start = now
        self._blend_from = None if from_policy else np.asarray(self.space.hold, dtype=float)

    def _hold(self, now: float, reason: str) -> None:
        self.mode, self.since, self.hold_reason = HOLD, now, reason
        self._human = None
        self.counts["holds"] += 1


__all__ = ["HOLD", "HUMAN", "POLICY", "OperatorControl", "OperatorOutput", "OperatorSettings"]
