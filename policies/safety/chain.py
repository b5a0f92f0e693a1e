"""The chain of filters between a policy and a robot.

Per pass (:meth:`SafetyChain.step`):

1. Incoming commands were offered on arrival (:meth:`SafetyChain.offer`, one call for
   every source: policy, teleoperation, console) and passed the command mux
   (:mod:`.mux`: only the active source's commands go further). A command of the
   wrong length or shape or with a non-finite element is *rejected* (the reason is
   kept for the log and the diagnostics) and never used; the last valid command
   stays in force until the watchdog finds it stale.
2. Guards (e-stop first, then the watchdog, then the robot's own) may trip. While
   any is tripped the output is the robot's safe action (:mod:`.fallback`), and
   the policy's commands never reach the robot.
3. Limit filters clamp the command (nominal or safe) in order; each reports
   what it changed. A limit never moves an element beyond what an earlier limit
   allowed: the chain keeps the intersection of the limits' intervals and clips every
   later limit's output into it (a glitching measurement that shifts one limit's
   interval cannot undo another's). Limits marked ``final`` (passivity) override.
4. Every filter sees the final output (rate limits measure from it).

Malformed state (a field of the wrong shape) is dropped before any filter reads it,
so the filters that need it trip (fail closed); an exception inside any filter gives
the safe action with the exception named, never an exception out of :meth:`step`.

Before the first state message the chain outputs nothing (``mode == "idle"``):
with no measurement there is nothing safe to compute, and the robot's own driver
holds it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable

import numpy as np

from sim2real.policies.safety.base import SafetyFilter, as_vector
from sim2real.policies.safety.fallback import Fallback
from sim2real.policies.safety.guards import EStop, Guard, Watchdog
from sim2real.policies.safety.limits import BoxLimit, RateLimit
from sim2real.policies.safety.mux import CommandMux, CommandSource
from sim2real.policies.safety.spaces import CommandSpace
from sim2real.policies.safety.types import ChainOutput, FilterReport, SafetyState

STATE_SHAPES: dict[str, int] = {
    "ee_pos": 3, "ee_quat": 4, "ee_pos_desired": 3, "ee_quat_desired": 4,
    "base_pos": 3, "base_quat": 4, "base_lin_vel": 3, "base_ang_vel": 3, "base_lin_acc": 3,
}
"""Sizes of the fixed-size state fields; joint vectors are checked by the filters that
read them (their length is the robot's joint count)."""

POLICY = CommandSource("policy", priority=10, hold=0.5)
"""The default (and lowest-priority) source: the policy node's ``raw_command``."""


class SafetyChain:
    """Command mux, validation, e-stop, watchdog, guards, safe action and limits for one robot.

    Args:
        space: The robot's command space (sizes and names).
        watchdog: The staleness guard.
        guards: The robot's other guards, checked after the e-stop and the watchdog.
        limits: Limit filters, applied in order to every output.
        fallback: The safe action.
        sources: The command sources the mux arbitrates (default: the policy alone).
        estop: The e-stop to use; pass the previous chain's to keep its latch across a
            rebuild (a lifecycle reconfigure must never clear an e-stop).
    """

    def __init__(
        self,
        space: CommandSpace,
        watchdog: Watchdog,
        guards: list[SafetyFilter],
        limits: list[SafetyFilter],
        fallback: Fallback,
        sources: list[CommandSource] | None = None,
        estop: EStop | None = None,
    ) -> None:
        self.space = space
        self.estop = estop if estop is not None else EStop()
        self.watchdog = watchdog
        self.guards: list[SafetyFilter] = [self.estop, watchdog, *guards]
        self.limits = limits
        self.fallback = fallback
        self.mux = CommandMux(list(sources) if sources else [POLICY])
        self.command: np.ndarray | None = None
        self.command_stamp: float | None = None
        self.last_output: np.ndarray | None = None
        self.mode = "idle"
        self.rejected = 0
        self.dropped_during_estop = 0
        self.last_rejection = ""
        self.bad_state = 0
        """State fields dropped for a wrong shape (counted per pass)."""
        self.internal_errors = 0
        """Passes in which a filter raised (the safe action was sent instead)."""
        self.on_latch_change: Callable[[list[str]], None] | None = None
        """Called with the latched reasons whenever the set of latched guards changes
        (the node persists them, so a restart or a crash cannot clear a latch)."""
        self._latched = self.latched()
        self._unbounded = (np.full(space.size, -np.inf), np.full(space.size, np.inf))

    @property
    def filters(self) -> list[SafetyFilter]:
        return [*self.guards, *self.limits]

    def latched(self) -> list[str]:
        """``"name: reason"`` of every latched guard."""
        return [f"{g.name}: {g.latched_reason}" for g in self.guards if g.latched_reason]

    # -- input -------------------------------------------------------------------------
    def offer(self, source: str, values: object, now: float, names: list[str] | None = None) -> str:
        """A command from ``source`` (a name in the mux). Returns ``""`` when it is now
        the chain's command, else why not (``e-stop ...``, ``overridden ...`` or the
        validation error). Never raises."""
        if self.estop.tripped:
            self.dropped_during_estop += 1
            self.mux.record(source, now, "rejected")
            return "e-stop active: command dropped"
        if not self.mux.admits(source, now):
            self.mux.record(source, now, "overridden")
            holder = self.mux.active(now)
            return f"overridden: {holder.name if holder else '?'} has control"
        reason = self.validate(values, names)
        if reason:
            self.rejected += 1
            self.last_rejection = reason
            self.mux.record(source, now, "rejected")
            return reason
        self.command = as_vector(values, self.space.size)
        self.command_stamp = now
        self.mux.record(source, now, "accepted")
        return ""

    def accept(self, values: object, now: float, names: list[str] | None = None) -> str:
        """:meth:`offer` from the policy (the default source)."""
        return self.offer(self.mux.sources[0].name, values, now, names)

    def validate(self, values: object, names: list[str] | None = None) -> str:
        try:
            if names and list(names) != list(self.space.names):
                unknown = [n for n in names if n not in self.space.names]
                what = f"unknown element names {unknown}" if unknown else f"element names out of order {list(names)}"
                return f"{what}; expected {list(self.space.names)}"
            v = as_vector(values, self.space.size)
        except Exception as exc:  # unhashable names, exotic objects: refuse, never raise
            return f"malformed command: {type(exc).__name__}"
        if v is None:
            return f"{_describe(values)}, expected {self.space.size} ({', '.join(self.space.names)})"
        bad = np.flatnonzero(~np.isfinite(v))
        if len(bad):
            i = int(bad[0])
            return f"non-finite value {v[i]} for {self.space.names[i]!r} (index {i})"
        return ""

    # -- operator ----------------------------------------------------------------------
    def trip_estop(self, reason: str = "e-stop") -> None:
        self.estop.trip(reason)
        self._check_latches()

    def reset_blockers(self, state: SafetyState, estop_input_active: bool = False) -> list[str]:
        """Why an operator reset must be refused now: the e-stop input is still pressed,
        or a latched guard's cause is still present (a fall, a fence breach), or its
        measurement is missing (nothing shows the cause has gone)."""
        blockers = ["estop: the e-stop input is still active"] if estop_input_active else []
        for g in self.guards:
            if g is self.estop or not isinstance(g, Guard) or not g.latched_reason:
                continue  # only guards latch
            if g is self.watchdog:
                continue  # the reset drops the command; the watchdog then waits for a fresh one
            try:
                cause = g.check(state)
            except Exception as exc:
                cause = f"check failed: {type(exc).__name__}"
            if cause:
                blockers.append(f"{g.name}: {cause}")
        return blockers

    def reset(self, state: SafetyState | None = None, estop_input_active: bool = False) -> tuple[bool, list[str]]:
        """Explicit operator reset: clear the e-stop and every latched guard, unless a
        trip cause is still present (then nothing is cleared). With ``state=None`` the
        causes are not checked (tests of the latch mechanics only).

        Returns ``(done, names)``: the guards cleared, or the blockers when refused."""
        if state is not None:
            blockers = self.reset_blockers(self._sanitized(state), estop_input_active)
            if blockers:
                return False, blockers
        cleared = [g.name for g in self.guards if getattr(g, "tripped", False)]
        if cleared:
            # Nothing sent before or during a trip may reach the robot afterwards:
            # every source must send a fresh command (the watchdog holds until then).
            self.command, self.command_stamp = None, None
            self.mux.reset()
        for g in self.guards:
            g.reset()
        self._check_latches()
        return True, cleared

    def _check_latches(self) -> None:
        latched = self.latched()
        if latched != self._latched:
            self._latched = latched
            if self.on_latch_change is not None:
                self.on_latch_change(latched)

    # -- one pass ----------------------------------------------------------------------
    def step(self, state: SafetyState, only_safe: bool = False) -> ChainOutput:
        """One pass over guards, fallback and limits. Never raises: an exception in a
        filter gives the safe action (or, if that raises too, the last output held).

        Args:
            only_safe: The caller sends the result only if the chain is in safe mode (a
                watchdog tick between commands). A nominal result is then not committed:
                the limits keep the last *sent* output and its time as their reference,
                so a rate limit still grants the full period to the next command.
        """
        try:
            return self._step(self._sanitized(state), only_safe)
        except Exception as exc:  # a filter bug or an input nobody foresaw: fail closed
            self.internal_errors += 1
            return self._emergency(state, f"internal error: {type(exc).__name__}: {exc}")
        finally:
            if self.latched() != self._latched:
                self._check_latches()

    def _sanitized(self, state: SafetyState) -> SafetyState:
        """``state`` with every fixed-size field of the wrong shape (or not numeric) set
        to ``None``: the filters that need it then trip for a missing measurement."""
        for name, size in STATE_SHAPES.items():
            value = getattr(state, name)
            if value is None:
                continue
            if not (isinstance(value, np.ndarray) and value.shape == (size,) and value.dtype == np.float64):
                try:
                    v = np.asarray(value, dtype=np.float64)
                except (TypeError, ValueError):
                    v = None
                if v is None or v.shape != (size,):
                    self.bad_state += 1
                    v = None
                setattr(state, name, v)
        return state

    def _emergency(self, state: SafetyState, reason: str) -> ChainOutput:
        """The fallback's command when a filter raised: inside the hard boxes, and no
        faster a change from the last output than the rate limits allow (a stand-down
        target 0.545 rad away was sent in one step where 0.2 were allowed)."""
        self.mode = "safe"
        try:
            out = np.asarray(self.fallback.command(state, ["internal_error"], self.last_output), dtype=np.float64)
            if out.shape != (self.space.size,) or not np.all(np.isfinite(out)):
                raise ValueError("fallback gave an invalid command")
            for limit in self.limits:  # the fixed bounds hold (no filter state needed)
                if isinstance(limit, BoxLimit):
                    out = np.clip(out, limit.lower, limit.upper)
            for limit in self.limits:  # and the rates, from the last output sent
                if isinstance(limit, RateLimit):
                    out = self._rate_limited(limit, out, state)
        except Exception:
            out = self.last_output.copy() if self.last_output is not None else None
        if out is not None:
            self.last_output = out.copy()
        return ChainOutput(out, "safe" if out is not None else "idle", [], reason=reason)

    def _rate_limited(self, limit: RateLimit, out: np.ndarray, state: SafetyState) -> np.ndarray:
        """``out`` within ``limit``'s interval; if the limit cannot tell it (the state is
        what broke a filter), within its largest step from the last output."""
        try:
            box = limit.bounds(state)
        except Exception:
            box = None
            if self.last_output is not None:
                step = limit.max_rate * limit.params.max_dt
                box = (self.last_output - step, self.last_output + step)
        if box is None:
            return out
        out = np.clip(out, box[0], box[1])
        with contextlib.suppress(Exception):  # its reference follows what was sent
            limit.observe_output(out, state)
        return out

    def _step(self, state: SafetyState, only_safe: bool) -> ChainOutput:
        state.command_stamp = self.command_stamp
        if state.state_stamp is None:
            return ChainOutput(None, "idle", [], reason="no state received yet")
        cmd = self.command if self.command is not None else np.zeros(self.space.size)
        was_safe = self.mode == "safe"
        reports: list[FilterReport] = []
        causes: list[FilterReport] = []
        for guard in self.guards:
            _, report = guard.filter(cmd, state)
            reports.append(report)
            if report.tripped:
                causes.append(report)
        out = self._safe_action(state, causes, was_safe) if causes else cmd.copy()
        lo, hi = self._unbounded
        for limit in self.limits:
            limited, report = limit.filter(out, state)
            reports.append(report)
            if report.tripped:
                # A limit that lacks its measurement cannot bound anything: the safe action
                # (within what the earlier limits allowed) replaces the command, and this
                # limit is skipped; later limits still apply.
                causes.append(report)
                if self.mode != "safe" or len(causes) == 1:
                    out = np.minimum(np.maximum(self._safe_action(state, causes, was_safe), lo), hi)
                continue
            out = limited
            if getattr(limit, "final", False):
                continue
            # Earlier limits win: nothing may move an element outside their intersection.
            out = np.minimum(np.maximum(out, lo), hi)
            interval = limit.last_interval
            if interval is not None:
                lo = np.maximum(lo, np.minimum(interval[0], hi))
                hi = np.minimum(hi, np.maximum(interval[1], lo))
        # The hard boxes hold whatever the earlier limits' intervals said: an interval
        # built on a bad measurement (a joint reading 0 beyond its range) may lie outside
        # them, and earlier limits would otherwise win.
        for limit in self.limits:
            if isinstance(limit, BoxLimit):
                out = np.clip(out, limit.lower, limit.upper)
        if not causes:
            self.mode = "nominal"
        if only_safe and self.mode == "nominal":
            return ChainOutput(None, "nominal", reports)
        for f in self.filters:
            f.observe_output(out, state)
        self.fallback.observe_output(out, state)
        self.last_output = out.copy()
        change = float(np.max(np.abs(out - cmd))) if self.mode == "nominal" else 0.0
        reason = "; ".join(f"{c.name}: {c.reason}" for c in causes)
        return ChainOutput(out, self.mode, reports, reason=reason, change=change)

    def _safe_action(self, state: SafetyState, causes: list[FilterReport], was_safe: bool) -> np.ndarray:
        """The fallback's command; it is engaged when the safe action starts (not on every
        pass, so a stand-down blend or a landing runs on)."""
        if not was_safe and self.mode != "safe":
            self.fallback.engage(state, self.last_output)
        self.mode = "safe"
        return np.asarray(self.fallback.command(state, [c.name for c in causes], self.last_output), dtype=np.float64)


def _describe(values: object) -> str:
    """Why ``values`` is not a command vector, safely (it may be anything)."""
    try:
        a = np.asarray(values, dtype=object)
    except Exception:
        return f"malformed: {type(values).__name__}"
    if a.ndim != 1:
        return f"wrong shape: {a.shape}"
    try:
        np.asarray(values, dtype=np.float64)
    except Exception:
        return f"not numbers: {type(values).__name__} of {a.size}"
    return f"wrong length: {a.size} values"


