"""What each demo run shows: did the robot do its task, and did the host keep real time.

Both are judged from the run's own figures (deploy's summary, the emulator's counters,
the nodes' logs); the thresholds are here and nowhere else (README, "make demo").

* **Task.** A run FAILS when its robot did not do its task: fewer than
  :data:`MIN_SUCCESS_RATE` of its finished episodes succeeded; no episode ended in a
  window long enough for one; a walking robot fell, walked less than half the window
  or missed its commanded speed by more than half; an emulated robot's pre-flight
  check failed or never finished, no command reached it, or it ended the run out of
  ``enabled`` (its deadman or its own watchdog put it in its safe state). A window
  shorter than one episode (for an emulated robot, the part after its enabling), or a
  simulation that covered less than one episode of it (the host was too slow), with no
  episode ended is NOT JUDGED. Any FAIL makes
  ``sim2real demo`` exit 1.
* **Real time.** The host kept real time when the control ticks that came late or
  without a fresh state, late commands to the sim bridge and sim-step overruns are at
  most :data:`MAX_MISSED_FRACTION` of the run's control ticks (:data:`MISSED_ALLOWANCE`
  at least: the first ticks come before any state), the safety filter's watchdog never
  found a stream stale, no deadman tripped, the simulation ran at
  :data:`MIN_SIM_SPEED` of real time or faster (measurable while no episode has ended:
  the sim bridge reports the current episode's clock) and the emulator's loop overran
  on at most :data:`MAX_MISSED_FRACTION` of its ticks.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Literal

from sim2real.demo.node_logs import NodeLogDigest
from sim2real.policies.safety.guards import stream_stopped

MIN_SUCCESS_RATE = 0.5
MAX_MISSED_FRACTION = 0.01
MISSED_ALLOWANCE = 3
MIN_SIM_SPEED = 0.9
WALK_MIN_FRACTION = 0.5
"""A walking robot walks at least this share of the window, at its commanded speed
within this share of it."""

WATCHDOG = re.compile(r"^safe action: watchdog: (.*?)(?: for #.*?)?(?:;|$)")


@dataclass(frozen=True)
class Verdict:
    status: Literal["PASS", "FAIL", "NOT JUDGED"]
    reason: str


@dataclass
class RealTime:
    kept: bool
    problems: list[str]
    figures: dict[str, Any] = field(default_factory=dict)

    def line(self) -> str:
        if self.kept:
            f = self.figures
            speed = f", sim at {f['sim_speed']:.2f}x real time" if f.get("sim_speed") is not None else ""
            trips = ("0 watchdog trips" if f.get("watchdog_trips") is not None else
                     "watchdog trips not visible: the nodes ran in processes of their own")
            return (f"kept real time ({f['deadline_misses']} of {f['control_ticks']} control ticks missed, "
                    f"{trips}{speed})")
        return "did NOT keep real time: " + "; ".join(self.problems)

    def as_dict(self) -> dict[str, Any]:
        return {"kept": self.kept, "problems": self.problems, **self.figures}


def watchdog_trips(logs: NodeLogDigest) -> dict[str, int]:
    """The safety filter's watchdog entering its safe action, by what it found (``command
    stale``, ``state stale``); its wait for the first command or state is not a trip (one
    rule with the filter's own count: :func:`~sim2real.policies.safety.guards.stream_stopped`)."""
    trips: dict[str, int] = {}
    for cause in logs.causes.values():
        match = WATCHDOG.match(cause.pattern) if cause.node == "safety_filter" else None
        if match and stream_stopped(match[1]):
            trips[match[1]] = trips.get(match[1], 0) + cause.count
    return trips


def control_dt(task: str | None) -> float | None:
    if not task:
        return None
    from sim2real.sim.core.registry import REGISTRY

    try:
        return float(REGISTRY.get(task).control_dt)
    except (KeyError, ValueError, AttributeError):
        return None


def real_time(summary: dict[str, Any], logs: NodeLogDigest) -> RealTime:
    """The host's real-time verdict on one run (see the module's text)."""
    if not summary:
        return RealTime(False, ["no figures: the run failed"])
    duration = float(summary.get("duration_s") or 0.0)
    dt = control_dt(summary.get("task"))
    ticks = round(duration / dt) if dt else 0
    missed = {k: int(v or 0) for k, v in summary.get("deadline_misses", {}).items()}
    # The filter counts its watchdog's trips; the logs (when they reach the demo: not from
    # one process per node) say what each found.
    counted = (summary.get("interventions") or {}).get("watchdog_trips")
    trips: dict[str, int] | None = watchdog_trips(logs)
    if counted is not None and sum(trips.values()) != int(counted):
        trips = {"stale input": int(counted)} if counted else {}
    elif counted is None and summary.get("executor") == "one process per node":
        trips = None
    hardware = summary.get("hardware") or {}
    emulator = summary.get("emulator") or {}
    sim_time = simulated_seconds(summary)
    figures: dict[str, Any] = {
        "control_ticks": ticks, "deadline_misses": sum(missed.values()), "deadline_misses_by_kind": missed,
        "watchdog_trips": trips, "deadman_trips": int(hardware.get("deadman_trips") or 0),
        "sim_speed": round(sim_time / duration, 3) if sim_time is not None and duration > 0 else None,
    }
    problems = []
    allowed = max(MISSED_ALLOWANCE, MAX_MISSED_FRACTION * ticks)
    if figures["deadline_misses"] > allowed:
        kinds = ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in missed.items() if v)
        problems.append(f"{figures['deadline_misses']} of {ticks} control ticks missed their deadline ({kinds})")
    if trips:
        problems.append(f"{sum(trips.values())} safety-filter watchdog trips ("
                        + ", ".join(f"{cause} x{n}" for cause, n in trips.items()) + ")")
    if figures["deadman_trips"]:
        problems.append(f"the hardware bridge's deadman tripped {figures['deadman_trips']}x "
                        f"({hardware.get('reason') or 'no fresh filtered command'})")
    if figures["sim_speed"] is not None and figures["sim_speed"] < MIN_SIM_SPEED:
        problems.append(f"the simulation ran at {figures['sim_speed']:.2f}x real time")
    if emulator:
        overruns, loop_ticks = int(emulator.get("overruns") or 0), int(emulator.get("ticks") or 0)
        figures.update(emulator_overruns=overruns, emulator_ticks=loop_ticks)
        if overruns > max(MISSED_ALLOWANCE, MAX_MISSED_FRACTION * loop_ticks):
            problems.append(f"the emulated robot's loop overran {overruns} of {loop_ticks} ticks")
        cutoffs = int((emulator.get("firmware") or {}).get("watchdog_cutoffs") or 0)
        if cutoffs:
            problems.append(f"the robot's firmware watchdog cut the motors {cutoffs}x")
    return RealTime(not problems, problems, figures)


def simulated_seconds(summary: dict[str, Any]) -> float | None:
    """Simulated time the sim bridge covered in the window, where its figure says so: its
    ``sim_time`` is the current episode's clock, the whole run's only while no episode
    has ended."""
    t = summary.get("task_success") or {}
    if t.get("simulated_s") is not None:  # the bridge's total across episodes
        return float(t["simulated_s"])
    sim_time = t.get("sim_time_s")
    return float(sim_time) if sim_time is not None and not t.get("episodes") else None


def preflight_text(summary: dict[str, Any]) -> str:
    """What the pre-flight check found, for an emulated row (``""`` for a simulated one)."""
    hw = summary.get("hardware")
    if not hw:
        return ""
    status, runs = hw.get("preflight", "?"), int(hw.get("preflight_runs") or 0)
    if status == "FAIL":
        items = str(hw.get("preflight_failed", "")).removeprefix("pre-flight check failed: ")
        return f"FAIL ({runs} checks): {items}"
    if status == "PASS":
        if runs <= 1:
            return "PASS"
        earlier = [c for c in str(hw.get("preflight_checks", "")).split(" | ")[:-1] if c and c != "PASS"]
        return f"PASS (after {runs - 1} failed checks" + (f": {earlier[-1]}" if earlier else "") + ")"
    return "never finished"


def task(summary: dict[str, Any], error: str = "") -> Verdict:
    """The task verdict on one run (see the module's text)."""
    if not summary:
        return Verdict("FAIL", f"the run failed: {error or 'no summary'}")
    duration = float(summary.get("duration_s") or 0.0)
    hw = summary.get("hardware")
    if hw:
        sent = int(hw.get("commands_sent") or 0)
        if hw.get("preflight") != "PASS":
            what = preflight_text(summary) if hw.get("preflight") == "FAIL" else f"never finished in {duration:g} s"
            return Verdict("FAIL", f"pre-flight check {what}; the robot was never enabled ({sent} commands sent)")
        if sent == 0:
            return Verdict("FAIL", "the pre-flight check passed but no filtered command reached the robot")
        if hw.get("phase") != "enabled":
            return Verdict("FAIL", f"the robot ended the run {hw.get('phase')}, not enabled "
                                   f"({hw.get('reason') or 'no reason given'}; {sent} commands reached it)")
    t = summary.get("task_success") or {}
    if t.get("walking_s") is not None:
        return _walking(t, duration)
    episodes, successes = int(t.get("episodes") or 0), int(t.get("successes") or 0)
    if episodes:
        status = "PASS" if successes >= MIN_SUCCESS_RATE * episodes else "FAIL"
        held = int(t.get("episodes_under_latch") or 0)
        return Verdict(status, f"{successes}/{episodes} episodes succeeded"
                       + ("" if status == "PASS" else f" (at least {MIN_SUCCESS_RATE:.0%} must)")
                       + (f"; {held} more ran under a latched safety guard, not counted" if held else ""))
    length = _episode_seconds(summary.get("task"))
    simulated = simulated_seconds(summary)
    if length is not None and duration < length:
        return Verdict("NOT JUDGED", f"no episode ended in the {duration:g} s window "
                                     f"({summary.get('task')} episodes last up to {length:g} s)")
    enabled = t.get("enabled_s")  # an emulated robot: the window less its pre-flight check
    if length is not None and enabled is not None and float(enabled) < length:
        return Verdict("NOT JUDGED", f"no episode ended in the {float(enabled):.1f} s the robot was enabled of "
                                     f"the {duration:g} s window ({summary.get('task')} episodes last up to "
                                     f"{length:g} s)")
    if length is not None and simulated is not None and simulated < length:
        return Verdict("NOT JUDGED", f"no episode ended: the host simulated only {simulated:.1f} s in the "
                                     f"{duration:g} s window ({summary.get('task')} episodes last up to {length:g} s)")
    return Verdict("FAIL", f"no episode ended in {duration:g} s"
                   + (f" ({summary.get('task')} episodes last up to {length:g} s)" if length else ""))


def _walking(t: dict[str, Any], duration: float) -> Verdict:
    walked, vx, asked, falls = (float(t.get("walking_s") or 0.0), float(t.get("mean_vx") or 0.0),
                                float((t.get("cmd_vel") or [0.0])[0]), int(t.get("falls") or 0))
    text = f"walked {walked:.0f} s at {vx:.2f} m/s (asked {asked:.2f}), {falls} falls"
    if falls:
        return Verdict("FAIL", text)
    if walked < WALK_MIN_FRACTION * duration:
        return Verdict("FAIL", f"{text}: walked less than half the {duration:g} s window")
    if abs(vx - asked) > WALK_MIN_FRACTION * abs(asked):
        return Verdict("FAIL", f"{text}: missed the commanded speed by more than half")
    return Verdict("PASS", text)


def _episode_seconds(task_name: str | None) -> float | None:
    if not task_name:
        return None
    from sim2real.sim.core.registry import REGISTRY

    try:
        return float(REGISTRY.get(task_name).episode_seconds)
    except (KeyError, ValueError, AttributeError):
        return None
