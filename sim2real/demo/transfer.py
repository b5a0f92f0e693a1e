"""The demo's transfer evidence: each deployed robot's shipped policy under
``sim2real robustness`` at a few episodes per point (its curves, the transfer ratio
where the robot has an oracle), for the report. docs/transfer.md has the full runs."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sim2real.commands.output import finite


@dataclass
class TransferRun:
    policy: str
    study: dict[str, Any]
    png: str
    """The curves, relative to the report."""


def run_transfer(out: Path, robots: list[str], episodes: int, on_point: Callable[[str], None] = lambda _: None,
                 axes: list[str] | None = None) -> list[TransferRun]:
    """Robustness studies of the robots' shipped deployment policies (``axes``: all the
    robot trains on), curves into ``out``."""
    from sim2real.policies.common import atomic
    from sim2real.policies.deploy import OnnxPolicy
    from sim2real.policies.studies.robustness_plot import plot_study
    from sim2real.policies.studies.robustness_runs import study
    from sim2real.ros_nodes.deployment import default_policy
    from sim2real.sim import robot_deployment

    runs = []
    for robot in robots:
        path = default_policy(robot)
        if path == "classical":
            continue  # no shipped policy to study
        name = robot_deployment(robot).task
        result = study(OnnxPolicy(path), axes, episodes, min(episodes, 8), 20_000,
                       on_point=lambda label, name=name: on_point(f"{name}: {label}"))
        plot_study(result, out / f"transfer_{name}.png")
        result = finite(result)  # JSON has no NaN: a figure without a value is null
        atomic.write_json(out / f"transfer_{name}.json", result)
        runs.append(TransferRun(name, result, f"transfer_{name}.png"))
    return runs


def ratio_interval(k1: int, n1: int, k2: int, n2: int) -> tuple[float, float | None]:
    """95 % interval of the ratio of two success rates ``(k1/n1) / (k2/n2)``: MOVER-R
    (Newcombe 2016, the closed form of Fieller's method) on each rate's Wilson interval;
    the upper end is ``None`` (unbounded) when the denominator's interval reaches 0.
    It takes the two rates as independent; the study's paired episodes (same seeds)
    make the true interval narrower, so this one errs wide."""
    from sim2real.policies.common.evaluation import wilson_interval

    p1, p2 = k1 / n1, k2 / n2
    (l1, u1), (l2, u2) = wilson_interval(k1, n1), wilson_interval(k2, n2)
    b = p1 * p2

    def root(a: float, c: float, sign: float) -> float:
        # a r^2 - 2 b r + c = 0: where (p1 - r p2)^2 equals the two ends' combined spread
        if abs(a) < 1e-12:
            return c / (2 * b) if b > 0 else 0.0
        return (b + sign * math.sqrt(max(0.0, b * b - a * c))) / a

    low = max(0.0, root(u2 * (2 * p2 - u2), l1 * (2 * p1 - l1), -1.0))
    a_high = l2 * (2 * p2 - l2)
    high = root(a_high, u1 * (2 * p1 - u1), 1.0) if a_high > 1e-12 else None
    return low, high


def _rate(point: dict[str, Any]) -> str:
    """``k/n = p % [lo, hi]`` of one controller at one point (95 % Wilson)."""
    return (f"{point['successes']}/{point['episodes']} = {100 * point['success_rate']:.0f} % "
            f"[{100 * point['ci_low']:.0f}, {100 * point['ci_high']:.0f}]")


def _ratio(study: dict[str, Any]) -> str:
    if study["transfer_ratio"] is None:
        return f"- ({study['transfer_note']})"
    policy, oracle = study["feasible"]["policy"], study["feasible"]["oracle"]
    low, high = ratio_interval(policy["successes"], policy["episodes"], oracle["successes"], oracle["episodes"])
    return f"{study['transfer_ratio']:.2f} [{low:.2f}, {'unbounded' if high is None else f'{high:.2f}'}]"


def report_lines(runs: list[TransferRun], episodes: int) -> list[str]:
    """The report's section: each policy's transfer ratio with its interval, the success
    rates behind it (successes/episodes and 95 % Wilson intervals), and its curves."""
    if not runs:
        return []
    lines = ["", "## Transfer evidence (`sim2real robustness`)", "",
             f"Each shipped policy at {episodes} episodes per point (docs/transfer.md has the full runs): success "
             "against each randomized parameter from the middle of its training range to two half-widths beyond, "
             "next to its reference and, where the robot has one, its oracle (a controller that knows the true "
             "parameters). Transfer ratio: the policy's success over the oracle's on the feasible held-out preset "
             "(target 0.9). Success rates are `successes/episodes = rate [95 % Wilson interval]`; the ratio's "
             "interval is 95 % MOVER-R (Fieller's method on the two Wilson intervals). At "
             f"{episodes} episodes a point is a coarse figure: read the intervals, not the point.", "",
             "| policy | episodes per point | transfer ratio [95 %] | feasible held-out: policy | "
             "feasible held-out: oracle | held-out preset (stress): policy |",
             "|---|---|---|---|---|---|"]
    for run in runs:
        s = run.study
        feasible = s["feasible"]
        lines.append(f"| {run.policy} | {s.get('episodes_per_point', episodes)}"
                     + (f" ({s['feasible_episodes']} on the feasible preset)"
                        if s.get("feasible_episodes") not in (None, s.get("episodes_per_point", episodes)) else "")
                     + f" | {_ratio(s)} | {_rate(feasible['policy']) if feasible else '-'} | "
                     f"{_rate(feasible['oracle']) if feasible else '-'} | {_rate(s['heldout']['policy'])} |")
    for run in runs:
        lines += ["", f"![{run.policy} robustness]({run.png})"]
    return lines
