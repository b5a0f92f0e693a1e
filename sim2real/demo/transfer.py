"""The demo's transfer evidence: each deployed robot's shipped policy under
``sim2real robustness`` at a few episodes per point (its curves, the transfer ratio
where the robot has an oracle), for the report. docs/transfer.md has the full runs."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any


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
        atomic.write_json(out / f"transfer_{name}.json", result)
        plot_study(result, out / f"transfer_{name}.png")
        runs.append(TransferRun(name, result, f"transfer_{name}.png"))
    return runs


def report_lines(runs: list[TransferRun], episodes: int) -> list[str]:
    """The report's section: each policy's transfer ratio, stress test and curves."""
    if not runs:
        return []
    lines = ["", "## Transfer evidence (`sim2real robustness`)", "",
             f"Each shipped policy at {episodes} episodes per point (wide intervals; docs/transfer.md has "
             "the full runs): success against each randomized parameter from the middle of its training "
             "range to two half-widths beyond, next to its reference and, where the robot has one, its "
             "oracle (a controller that knows the true parameters). Transfer ratio: the policy's success "
             "over the oracle's on the feasible held-out preset (target 0.9).", "",
             "| policy | transfer ratio | feasible held-out: policy / oracle | held-out preset (stress): policy |",
             "|---|---|---|---|"]
    for run in runs:
        s = run.study
        feasible = (f"{100 * s['feasible']['policy']['success_rate']:.0f} % / "
                    f"{100 * s['feasible']['oracle']['success_rate']:.0f} %") if s["feasible"] else "-"
        ratio = f"{s['transfer_ratio']:.2f}" if s["transfer_ratio"] is not None else f"- ({s['transfer_note']})"
        lines.append(f"| {run.policy} | {ratio} | {feasible} | {100 * s['heldout']['policy']['success_rate']:.0f} % |")
    for run in runs:
        lines += ["", f"![{run.policy} robustness]({run.png})"]
    return lines
