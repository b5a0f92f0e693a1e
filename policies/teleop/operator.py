"""A person's commands, made safe before they go anywhere: who may command, what they
command, and how control passes between the policy, the person and the hold.

This is the one handover state machine of the correction console: every target (the
simulated HIL-SERL arm, a real arm's HIL actor, a ROS 2 graph) applies
:meth:`OperatorControl.output`'s ``command`` as it is, converting units only. Its rules:

* **One operator.** The first session to take over gets control; every other session is
  read-only until the operator gives back, releases or disconnects.
* **Finite numbers, bounded, rate-limited.** Axes arrive as fractions of each axis' limit
  in ``[-1, 1]``: anything but a list of finite numbers of the right length (strings,
  booleans, NaN, infinities) is refused; a value beyond the limit is clipped; commands
  closer together than ``min_interval`` are dropped.
* **Never above the operator's limit.** Every command out is within each axis' limit
  (times ``max_speed_fraction``), through the takeover blend too.
* **Blend from what the robot last received.** A takeover from the policy starts from
  the policy's last command (clipped to the operator's limit) and blends into the
  person's over ``blend_seconds``. After any hold (dead man, hidden page, lost
  connection, e-stop) the robot last received the hold, so the takeover starts from zero.
* **Never opposite to the held key.** An axis the person pushes on never moves the other
  way: the blend's start on that axis is dropped to zero (for the rest of the takeover).
* **Dead man.** During a takeover, no command for ``timeout`` seconds, the page hidden,
  the session gone or released puts the robot in **hold** (the operator space's hold:
  zero velocities), never the last command and never back to the policy on its own. The
  operator leaves hold by commanding again (from zero) or by giving back.
* **E-stop.** While the safety filter's e-stop is latched the person's side holds and
  takeovers and commands are refused; its reset leaves the hold in place.
* **Give back** returns control to the policy at once and releases ownership.

Times are seconds on one monotonic clock (``time.monotonic`` in every target); tests
supply their own.
"""

from __future__ import annotations

import math
import numbers
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Annotated, Any

import numpy as np

from sim2real.sim.core.deployment import OperatorSpace
from sim2real.sim.core.schema import Bounds

POLICY, HUMAN, HOLD = "policy", "human", "hold"
"""Who commands the robot: the policy, the person, or nobody (the hold command)."""
ESTOP_LATCHED = "the e-stop is latched: reset it first"
DEAD_MAN_TIMEOUT = 0.15
"""s without a command during a takeover before the robot holds. 3.75 of the page's
25 Hz command periods: the hold reaches the robot within 200 ms at p99 beside 4 CPU-bound
competitors (165 ms; 232 ms with 0.2 s), and a key held for 10 minutes beside them was
never falsely held (docs/BENCHMARKS.md)."""


@dataclass
class OperatorSettings:
    """How the console treats a person's commands."""

    blend_seconds: Annotated[float, Bounds(ge=0.0, le=5.0)] = 0.4
    """s over which a takeover blends from what the robot last received into the person's command."""
    timeout: Annotated[float, Bounds(gt=0.0, le=2.0)] = DEAD_MAN_TIMEOUT
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
    """What the robot gets now, in the operator space's units (``None`` in ``policy``
    mode): the only thing a target applies."""
    human: np.ndarray | None = None
    """The person's own request (``human`` mode), for display."""


def finite_axes(axes: Any, size: int) -> np.ndarray | None:
    """``axes`` as a float vector when it is a list of ``size`` finite real numbers
    (booleans and strings are not numbers here), else None."""
    if not isinstance(axes, (list, tuple, np.ndarray)) or len(axes) != size:
        return None
    values = []
    for v in axes:
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, numbers.Real):
            return None
        try:
            x = float(v)
        except (OverflowError, ValueError):  # an int of 10**400
            return None
        if not math.isfinite(x):
            return None
        values.append(x)
    return np.array(values, dtype=float)


@dataclass
class OperatorControl:
    """The person's side of the robot's command, one operator at a time."""

    space: OperatorSpace
    settings: OperatorSettings = field(default_factory=OperatorSettings)
    owner: str = ""
    """Session that may command (empty: nobody)."""
    mode: str = POLICY
    since: float = field(default_factory=time.monotonic)
    """When ``mode`` began (at creation: when the console started)."""
    hold_reason: str = ""
    estop: str = ""
    """Why the safety filter's e-stop is latched (empty: it is not)."""
    counts: Counter[str] = field(default_factory=Counter)
    """``accepted``, ``refused`` (not the operator, or the e-stop), ``invalid``,
    ``rate_limited``, ``clipped`` commands, and ``holds``."""
    _human: np.ndarray | None = None
    _last_command_at: float = -math.inf
    """Last sign of the operator (a command or the takeover itself): the dead man's clock."""
    _last_accepted: float = -math.inf
    """Last accepted command: the rate limit's clock."""
    _base: np.ndarray | None = None
    """Where the takeover's blend starts (operator units, within the limit)."""
    _blend_start: float = 0.0
    _sent: np.ndarray | None = None
    """What the robot last received on the operator's axes: the policy's command, the
    hold or the person's blended command."""

    def __post_init__(self) -> None:
        self._sent = self.hold_command

    @property
    def hold_command(self) -> np.ndarray:
        return np.asarray(self.space.hold, dtype=float)

    @property
    def limits(self) -> np.ndarray:
        """Each axis' limit for this operator (the axis' own, times ``max_speed_fraction``)."""
        return self.space.limits * self.settings.max_speed_fraction

    # -- sessions ----------------------------------------------------------------------
    def release(self, session: str, now: float) -> None:
        """``session`` stops being the operator; a takeover in progress holds."""
        if session == self.owner:
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

    # -- the robot's side --------------------------------------------------------------
    def hold(self, now: float, reason: str) -> None:
        """Stop the person's motion now (a lost robot link); the operator leaves hold by
        commanding again or giving back."""
        if self.mode == HUMAN:
            self._hold(now, reason)

    def estop_latched(self, now: float, reason: str) -> None:
        """The safety filter's e-stop latched: the robot gets its safe action, so what it
        last received is the hold; a takeover in progress holds."""
        self.estop = reason or "latched"
        self._sent = self.hold_command
        if self.mode == HUMAN:
            self._hold(now, f"e-stop: {self.estop}")

    def estop_reset(self, now: float) -> None:
        """The e-stop was reset: the hold stays until a person acts."""
        self.estop = ""

    # -- the person's side -------------------------------------------------------------
    def take_over(self, session: str, now: float, axes: Any = None) -> str:
        """The person takes control (blending in), with their first command when given
        (``axes``: so the keys held at the takeover count from its first output); the
        reason when refused."""
        if self.estop:
            self.counts["refused"] += 1
            return ESTOP_LATCHED
        if self.owner not in ("", session):
            return "another session is the operator (read-only here until it gives back)"
        self.owner = session
        if self.mode != HUMAN:
            self._enter_human(now)
        self._human = self.hold_command
        self._last_command_at = now
        return "" if axes is None else self.command(session, axes, now)

    def give_back(self, session: str, now: float) -> str:
        """Control returns to the policy and the session stops being the operator; the
        reason when refused."""
        if session != self.owner:
            return "only the operator can give control back"
        self.mode, self.since, self.hold_reason, self.owner = POLICY, now, "", ""
        self._human = None
        return ""

    def command(self, session: str, axes: Any, now: float) -> str:
        """A person's command as fractions of each axis' limit; the reason when refused."""
        if session != self.owner or self.mode == POLICY:
            self.counts["refused"] += 1
            return "not in control (take over first)" if session == self.owner else "read-only session"
        if self.estop:
            self.counts["refused"] += 1
            return ESTOP_LATCHED
        values = finite_axes(axes, len(self.space.axes))
        if values is None:
            self.counts["invalid"] += 1
            return f"expected {len(self.space.axes)} finite numbers {list(self.space.names)}"
        if now - self._last_accepted < self.settings.min_interval:
            self.counts["rate_limited"] += 1
            return "rate limited"
        clipped = np.clip(values, -1.0, 1.0)
        self.counts["clipped"] += int(np.any(clipped != values))
        self._human = clipped * self.limits
        self._last_command_at = self._last_accepted = now
        if self.mode == HOLD:  # commanding again ends the hold, from the hold
            self._enter_human(now)
        self.counts["accepted"] += 1
        return ""

    def output(self, now: float, policy_command: np.ndarray | None = None) -> OperatorOutput:
        """The command now, applying the dead man. ``policy_command``: the policy's current
        command on the operator's axes (``None`` when it has none), which is what the
        robot receives while the policy commands."""
        if self.mode == HUMAN and now - self._last_command_at > self.settings.timeout:
            self._hold(now, f"no command for {self.settings.timeout * 1e3:.0f} ms")
        if self.mode == POLICY:
            received = None if self.estop or policy_command is None else np.asarray(policy_command, dtype=float)
            self._sent = self.hold_command if received is None or received.shape != self.hold_command.shape \
                else received
            return OperatorOutput(POLICY, None)
        if self.mode == HOLD:
            self._sent = self.hold_command
            return OperatorOutput(HOLD, self.hold_command)
        human = self.hold_command if self._human is None else self._human
        base = self.hold_command if self._base is None else self._base
        # An axis pushed one way never starts from the other: that start is dropped.
        base = self._base = np.where(base * human < 0.0, 0.0, base)
        duration = self.settings.blend_seconds
        alpha = 1.0 if duration <= 0 else min(max((now - self._blend_start) / duration, 0.0), 1.0)
        out = np.clip((1.0 - alpha) * base + alpha * human, -self.limits, self.limits)
        self._sent = out
        return OperatorOutput(HUMAN, out.copy(), human.copy())

    def status(self, now: float) -> dict[str, object]:
        """For the page: who commands, for how long (and since when, epoch s), why it
        holds, and the e-stop."""
        age = max(now - self.since, 0.0)
        return {"mode": self.mode, "seconds": round(age, 2), "since": round(time.time() - age, 3),
                "owner": bool(self.owner), "hold_reason": self.hold_reason, "estop": self.estop,
                "counts": dict(self.counts)}

    # -- transitions -------------------------------------------------------------------
    def _enter_human(self, now: float) -> None:
        self.mode, self.since, self.hold_reason = HUMAN, now, ""
        self._blend_start = now
        sent = self.hold_command if self._sent is None else self._sent
        self._base = np.clip(sent, -self.limits, self.limits)

    def _hold(self, now: float, reason: str) -> None:
        self.mode, self.since, self.hold_reason = HOLD, now, reason
        self._human = None
        self._sent = self.hold_command  # the target sends the hold at once (or steps nothing)
        self.counts["holds"] += 1


__all__ = ["DEAD_MAN_TIMEOUT", "ESTOP_LATCHED", "HOLD", "HUMAN", "POLICY", "OperatorControl", "OperatorOutput",
           "OperatorSettings", "finite_axes"]
