"""The single entry point for motion commands: a priority multiplexer in front of the
safety chain (twist_mux's rule, without leaving the filter).

Every source of motion commands (the policy, a teleoperation device, the correction
console, a joystick's Twist) offers its commands here; nothing else reaches a robot.
The mux forwards a command to the chain only when its source is the *active* one: the
source of highest priority whose last valid command is younger than that source's
``hold`` time. A higher-priority source that stops keeps control for ``hold``
seconds (during which the chain's watchdog gives the safe action if its stream is
too slow), then control falls back to the next source on *its* next command. So an
operator who lets go never leaves the robot executing a stale command, and a policy
never fights an operator command by command.

Each source counts what it offered: ``accepted`` (forwarded to the chain),
``overridden`` (a higher-priority source was active), ``rejected`` (the chain refused
it: wrong size, non-finite, e-stop).
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field


@dataclass(frozen=True)
class CommandSource:
    """One input of the mux."""

    name: str
    """Short name (``policy``, ``teleop``, ``twist``): the counters' and log's key."""
    priority: int
    """Higher wins while active."""
    hold: float
    """Seconds this source keeps control after its last valid command."""

    def __post_init__(self) -> None:
        if not self.name or not math.isfinite(self.hold) or self.hold <= 0:
            raise ValueError(f"command source {self.name!r}: needs a name and a finite hold > 0, got {self.hold}")


@dataclass
class CommandMux:
    """Chooses which source's commands reach the chain.

    Args:
        sources: The inputs; names and priorities must be unique.
    """

    sources: list[CommandSource]
    last_valid: dict[str, float] = field(default_factory=dict)
    """Source name -> time of its last command the chain accepted."""
    counts: Counter[str] = field(default_factory=Counter)
    """``<source>_accepted | _overridden | _rejected`` counters."""
    active_name: str = ""
    """The source whose commands the chain holds now (empty: none yet)."""

    def __post_init__(self) -> None:
        names = [s.name for s in self.sources]
        priorities = [s.priority for s in self.sources]
        if len(set(names)) != len(names) or len(set(priorities)) != len(priorities):
            raise ValueError(f"command sources need unique names and priorities: {self.sources}")
        self._by_name = {s.name: s for s in self.sources}

    def source(self, name: str) -> CommandSource:
        return self._by_name[name]

    def active(self, now: float) -> CommandSource | None:
        """The highest-priority source holding control at ``now`` (``None``: none)."""
        best: CommandSource | None = None
        for s in self.sources:
            t = self.last_valid.get(s.name)
            # A stamp in the future (clock stepped back) counts as holding: fail toward the
            # higher-priority source, which is the operator's.
            if t is not None and now - t <= s.hold and (best is None or s.priority > best.priority):
                best = s
        return best

    def admits(self, name: str, now: float) -> bool:
        """Whether a command from ``name`` offered at ``now`` may go to the chain."""
        holder = self.active(now)
        return holder is None or holder.priority <= self._by_name[name].priority

    def record(self, name: str, now: float, outcome: str) -> None:
        """Count an offered command's ``outcome`` (``accepted``, ``overridden``, ``rejected``)."""
        self.counts[f"{name}_{outcome}"] += 1
        if outcome == "accepted":
            self.last_valid[name] = now
            self.active_name = name

    def reset(self) -> None:
        """Forget who had control (after an e-stop reset every source starts afresh)."""
        self.last_valid.clear()
        self.active_name = ""
