"""What a sweep leaves behind: one row per trial (its values, final and best metric,
steps reached, why it ended, its run folder) as ``results.csv`` and ``results.md``,
the best trials' evaluation curves as ``best_trials.png``, and the best trial's
resolved config as ``best_config.yaml`` (``sim2real train --config`` repeats it).

Numbers come from the trials' own ``eval.jsonl``, not Tune's copy: the run folder is
the record, and it is complete even for a trial retried after a dead worker.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sim2real.policies.common import atomic
from sim2real.policies.common.rundir import RunDir
from sim2real.policies.sweep.exploit import read_exploits
from sim2real.policies.sweep.space import SweepSpec
from sim2real.policies.sweep.trainable import metrics_of, read_attempts

BEST_CURVES = 5
"""Trials drawn in colour in ``best_trials.png`` (the others in grey)."""


@dataclass
class TrialRow:
    """One trial in the results table."""

    name: str
    """Tune's trial name (also the run folder's name)."""
    values: dict[str, Any]
    """The sampled config values."""
    status: str
    """``complete`` (full budget), ``stopped`` (by the scheduler, e.g. ASHA), ``error`` (out of retries)."""
    steps: int
    """Environment steps at the last evaluation."""
    final: float | None
    """The metric at the last evaluation."""
    best: float | None
    """The best metric over the trial's evaluations."""
    success_rate: float | None
    """The success rate at the last evaluation."""
    run_dir: Path
    """The trial's run folder."""
    attempts: int = 1
    """Processes that ran the trial (more than one: a worker died and the retry resumed the folder,
    or PBT paused the trial or moved it onto another's checkpoint)."""
    exploits: int = 0
    """PBT: checkpoints of other trials this trial took over (``pbt.jsonl`` in its run folder)."""

    def as_dict(self) -> dict[str, Any]:
        return {"trial": self.name, **self.values, "status": self.status, "steps": self.steps, "final": self.final,
                "best": self.best, "success_rate": self.success_rate, "attempts": self.attempts,
                "exploits": self.exploits, "run_dir": str(self.run_dir)}


def collect(results: Any, spec: SweepSpec, out: Path) -> list[TrialRow]:
    """Every trial of Tune's ResultGrid, best first (full-budget trials before stopped ones)."""
    rows = []
    for result in results:
        name = Path(result.path).name
        run = RunDir(out / "trials" / name)
        evals = [metrics_of(r) for r in run.read_eval_log()]
        series = [e[spec.metric] for e in evals if spec.metric in e]
        steps = int(evals[-1]["env_steps"]) if evals else 0
        pick = max if spec.mode == "max" else min
        status = "error" if result.error is not None else "complete" if steps >= spec.total_steps else "stopped"
        rows.append(TrialRow(
            name=name, values={k: result.config.get(k) for k in spec.space}, status=status, steps=steps,
            final=series[-1] if series else None, best=pick(series) if series else None,
            success_rate=evals[-1].get("success_rate") if evals else None, run_dir=run.path,
            attempts=len(read_attempts(run.path)), exploits=len(read_exploits(run.path))))
    sign = -1.0 if spec.mode == "max" else 1.0
    rows.sort(key=lambda r: (r.status != "complete", r.final is None, sign * (r.final or 0.0), r.name))
    return rows


def write_all(rows: list[TrialRow], spec: SweepSpec, out: Path) -> dict[str, Any]:
    """Write the table, the plot and the best config; the summary (``--json``)."""
    table = markdown(rows, spec)
    atomic.write_text(out / "results.md", table)
    atomic.write_text(out / "results.csv", to_csv(rows))
    plot_best(rows, spec, out / "best_trials.png")
    best = rows[0] if rows and rows[0].final is not None else None
    if best is not None and RunDir(best.run_dir).is_run():
        text = RunDir(best.run_dir).config_path.read_text()
        atomic.write_text(out / "best_config.yaml",
                          f"# The best trial of the sweep in {out} ({best.name}, {spec.metric} {best.final:.4g}).\n"
                          + text)
    return {
        "sweep": str(out), "metric": spec.metric, "mode": spec.mode, "trials": [r.as_dict() for r in rows],
        "best": best.as_dict() if best else None,
        "files": {k: str(out / f) for k, f in (("markdown", "results.md"), ("csv", "results.csv"),
                                               ("plot", "best_trials.png"), ("best_config", "best_config.yaml"))},
    }


def to_csv(rows: list[TrialRow]) -> str:
    buf = io.StringIO()
    if rows:
        writer = csv.DictWriter(buf, fieldnames=list(rows[0].as_dict()))
        writer.writeheader()
        writer.writerows(r.as_dict() for r in rows)
    return buf.getvalue()


def _cell(value: Any) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def markdown(rows: list[TrialRow], spec: SweepSpec) -> str:
    keys = list(spec.space)
    pbt = spec.scheduler.kind == "pbt"
    head = ["trial", *keys, "status", "steps", f"final {spec.metric}", f"best {spec.metric}", "success", "attempts",
            *(["exploits"] if pbt else []), "run folder"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        success = "–" if r.success_rate is None else f"{r.success_rate:.0%}"
        cells = [r.name, *(_cell(r.values.get(k)) for k in keys), r.status, f"{r.steps:,}", _cell(r.final),
                 _cell(r.best), success, str(r.attempts), *([str(r.exploits)] if pbt else []),
                 f"trials/{r.run_dir.name}"]
        lines.append("| " + " | ".join(cells) + " |")
    note = (f"\n{len(rows)} trials, best first ({spec.mode} {spec.metric} at the last evaluation; full-budget trials "
            f"of {spec.total_steps:,} steps rank above those the scheduler stopped).\n")
    return "\n".join(lines) + "\n" + note


def plot_best(rows: list[TrialRow], spec: SweepSpec, target: Path) -> Path:
    """The metric against environment steps: the best trials in colour, the rest in grey."""
    import matplotlib

    matplotlib.use("Agg")  # headless; must precede pyplot
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(9, 5.5))
    for rank, row in reversed(list(enumerate(rows))):  # the best drawn last, on top
        evals = [metrics_of(r) for r in RunDir(row.run_dir).read_eval_log()]
        points = [(e["env_steps"], e[spec.metric]) for e in evals if spec.metric in e]
        if not points:
            continue
        x, y = zip(*points, strict=True)
        if rank < BEST_CURVES:
            values = ", ".join(f"{k.split('.')[-1]}={_cell(v)}" for k, v in row.values.items())
            ax.plot(x, y, marker="o", markersize=3, linewidth=1.6, label=f"{row.name} ({values})")
        else:
            ax.plot(x, y, color="0.75", linewidth=0.9, zorder=0)
    ax.set_xlabel("env steps")
    ax.set_ylabel(f"eval {spec.metric}")
    ax.grid(alpha=0.3)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=7, loc="best")
    ax.set_title(f"sweep {spec.path.stem}: best {min(BEST_CURVES, len(rows))} of {len(rows)} trials (grey: the rest)")
    fig.tight_layout()
    with atomic.atomic_writer(target, "wb") as f:
        fig.savefig(f, format="png", dpi=110)
    plt.close(fig)
    return target
