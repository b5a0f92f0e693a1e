"""The chain of filters between a policy and a robot.

Per pass (:meth:`SafetyChain.step`):

1. Incoming commands were validated on arrival (:meth:`SafetyChain.accept`): a
   command of the wrong length or with a non-finite element is *rejected* (the
   reason is kept for the log and the diagnostics) and never used; the last valid
   command stays in force until the watchdog finds it stale.
2. Guards (e-stop first, then the watchdog, then the robot's own) may trip. While
   any is tripped the output is the robot's safe action (:mod:`.fallback`), and
   the policy's commands never reach the robot.
3. Limit filters clamp the command (nominal or safe) in order; each reports
   what it changed.
4. Every filter sees the final output (rate limits measure from it).

Before the first state message the chain outputs nothing (``mode == "idle"``):
with no measurement there is nothing safe to compute, and the robot's own driver
holds it.
"""

from __future__ import annotations

import numpy as np

from sim2real.policies.safety.base import SafetyFilter, as_vector
from sim2real.policies.safety.fallback import Fallback
from sim2real.policies.safety.guards import EStop, Watchdog
from sim2real.policies.safety.spaces import CommandSpace
from sim2real.policies.safety.types import ChainOutput, FilterReport, SafetyState


class SafetyChain:
    """Validation, e-stop, watchdog, guards, safe action and limits for one robot.

    Args:
        space: The robot's command space (sizes and names).
        watchdog: The staleness guard.
        guards: The robot's other guards, checked after the e-stop and the watchdog.
        limits: Limit filters, applied in order to every output.
        fallback: The safe action.
    """

    def __init__(
        self,
        space: CommandSpace,
        watchdog: Watchdog,
        guards: list[SafetyFilter],
        limits: list[SafetyFilter],
        fallback: Fallback,
    ) -> None:
        self.space = space
        self.estop = EStop()
        self.watchdog = watchdog
        self.guards: list[SafetyFilter] = [self.estop, watchdog, *guards]
        self.limits = limits
        self.fallback = fallback
        self.command: np.ndarray | None = None
        self.command_stamp: float | None = None
        self.last_output: np.ndarray | None = None
        self.mode = "idle"
        self.rejected = 0
        self.dropped_during_estop = 0
        self.last_rejection = ""

    @property
    def filters(self) -> list[SafetyFilter]:
        return [*self.guards, *self.limits]

    # -- input -------------------------------------------------------------------------
    def accept(self, values: object, now: float, names: list[str] | None = None) -> str:
        """Validate an incoming command; keep it if valid. Returns ``""`` or the reason
        it was rejected. ``names``, when the message carries them, must equal the
        command space's element names in order."""
        if self.estop.tripped:
            self.dropped_during_estop += 1
            return "e-stop active: command dropped"
        reason = self.validate(values, names)
        if reason:
            self.rejected += 1
            self.last_rejection = reason
            return reason
        self.command = as_vector(values, self.space.size)
        self.command_stamp = now
        return ""

    def validate(self, values: object, names: list[str] | None = None) -> str:
        if names and list(names) != list(self.space.names):
            unknown = [n for n in names if n not in self.space.names]
            what = f"unknown element names {unknown}" if unknown else f"element names out of order {list(names)}"
            return f"{what}; expected {list(self.space.names)}"
        v = as_vector(values, self.space.size)
        if v is None:
            n = np.size(values) if isinstance(values, (list, tuple, np.ndarray)) else "?"
            return f"wrong length: {n} values, expected {self.space.size} ({', '.join(self.space.names)})"
        bad = np.flatnonzero(~np.isfinite(v))
        if len(bad):
            i = int(bad[0])
            return f"non-finite value {v[i]} for {self.space.names[i]!r} (index {i})"
        return ""

    # -- operator ----------------------------------------------------------------------
    def trip_estop(self, reason: str = "e-stop") -> None:
        self.estop.trip(reason)

    def reset(self) -> list[str]:
        """Explicit operator reset: clear the e-stop and every latched guard. Returns the
        names of the guards that were latched."""
        cleared = [g.name for g in self.guards if getattr(g, "tripped", False)]
        if self.estop.tripped:
            # Nothing sent before or during the e-stop may reach the robot afterwards:
            # the policy must send a fresh command (the watchdog holds until then).
            self.command, self.command_stamp = None, None
        for g in self.guards:
            g.reset()
        return cleared

    # -- one pass ----------------------------------------------------------------------
    def step(self, state: SafetyState, only_safe: bool = False) -> ChainOutput:
        """One pass over guards, fallback and limits.

        Args:
            only_safe: The caller sends the result only if the chain is in safe mode (a
                watchdog tick between commands). A nominal result is then not committed:
                the limits keep the last *sent* output and its time as their reference,
                so a rate limit still grants the full period to the next command.
        """
        state.command_stamp = self.command_stamp
        if state.state_stamp is None:
            return ChainOutput(None, "idle", [], reason="no state received yet")
        cmd = self.command if self.command is not None else np.zeros(self.space.size)
        reports: list[FilterReport] = []
        causes: list[FilterReport] = []
        for guard in self.guards:
            _, report = guard.filter(cmd, state)
            reports.append(report)
            if report.tripped:
                causes.append(report)
        if causes:
            if self.mode != "safe":
                self.fallback.engage(state, self.last_output)
            self.mode = "safe"
            out = self.fallback.command(state, [c.name for c in causes], self.last_output)
        else:
            self.mode = "nominal"
            out = cmd.copy()
        for limit in self.limits:
            out, report = limit.filter(out, state)
            reports.append(report)
            if report.tripped:
                # A limit that lacks its measurement cannot bound anything: hold the last output.
                self.mode = "safe"
                causes.append(report)
                out = self.last_output.copy() if self.last_output is not None else None
                break
        if out is None:
            return ChainOutput(None, "idle", reports, reason="; ".join(f"{c.name}: {c.reason}" for c in causes))
        if only_safe and self.mode == "nominal":
            return ChainOutput(None, "nominal", reports)
        for f in self.filters:
            f.observe_output(out, state)
        self.last_output = out.copy()
        change = float(np.max(np.abs(out - cmd))) if self.mode == "nominal" else 0.0
        reason = "; ".join(f"{c.name}: {c.reason}" for c in causes)
        return ChainOutput(out, self.mode, reports, reason=reason, change=change)
