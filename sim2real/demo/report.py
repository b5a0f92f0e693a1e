"""The demo's markdown report."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sim2real.commands.output import dumps


def write_report(out: Path, results: list, summary: dict[str, Any]) -> Path:
    lines = [
        "# sim2real demo report",
        "",
        "Classical controllers on every robot in MuJoCo, with the training domain randomization "
        f"(friction, masses, motor strength, latency, observation noise, pushes). Took {summary['seconds']} s.",
        "",
        "| robot | task | controller | action mode | success | metrics (mean over episodes) |",
        "|---|---|---|---|---|---|",
    ]
    for r in results:
        metrics = ", ".join(f"{k} {v:.3g}" for k, v in r.metrics.items())
        lines.append(
            f"| {r.robot} | {r.task} | {r.controller} | {r.action_mode} | {r.successes}/{r.episodes} | {metrics} |"
        )
    lines.append("")
    for r in results:
        lines += [f"## {r.robot}: {r.task}", "", r.description, ""]
        for frame in r.frames:
            lines.append(f"![{r.task}]({frame})")
        if r.video:
            lines += ["", f"Video: [{r.video}]({r.video})"]
        lines.append("")
    lines += ["## Raw figures", "", "```json", dumps(summary), "```", ""]
    path = out / "report.md"
    path.write_text("\n".join(lines))
    return path
