"""Learning curves from runs' own evaluation logs (``eval.jsonl``), several runs
overlaid: success rate (with its 95% Wilson band) and mean return, against
environment steps and against training wall-clock time."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sim2real.policies.common import atomic
from sim2real.policies.common.rundir import RunDir
from sim2real.policies.errors import RunFolderError


def load_curves(run_paths: list[str | Path]) -> dict[str, list[dict[str, Any]]]:
    """Evaluation rows per run label (the folder name; parent/name when names repeat)."""
    runs = [RunDir(p) for p in run_paths]
    names = [r.name for r in runs]
    curves: dict[str, list[dict[str, Any]]] = {}
    for run in runs:
        run.require_run()
        rows = run.read_eval_log()
        if not rows:
            raise RunFolderError(f"{run.path} has no evaluations yet ({run.eval_log} is missing or empty)")
        label = run.name if names.count(run.name) == 1 else f"{run.path.parent.name}/{run.name}"
        curves[label] = rows
    return curves


def plot_runs(run_paths: list[str | Path], out: str | Path, title: str | None = None) -> Path:
    """Write a 2x2 figure of the runs' learning curves to ``out`` (PNG, SVG or PDF)."""
    import matplotlib

    matplotlib.use("Agg")  # headless; must precede pyplot
    import matplotlib.pyplot as plt

    curves = load_curves(run_paths)
    longest = max(r["wall_time_s"] for rows in curves.values() for r in rows)
    unit, per = ("s", 1.0) if longest < 120 else ("min", 60.0) if longest < 7200 else ("h", 3600.0)
    fig, axes = plt.subplots(2, 2, figsize=(11, 7), sharey="row")
    panels = [
        (axes[0, 0], "step", "success_rate", "env steps", "eval success rate"),
        (axes[0, 1], "wall_time_s", "success_rate", f"training wall-clock ({unit})", None),
        (axes[1, 0], "step", "mean_return", "env steps", "eval mean return"),
        (axes[1, 1], "wall_time_s", "mean_return", f"training wall-clock ({unit})", None),
    ]
    for label, rows in curves.items():
        for ax, xkey, ykey, _, _ in panels:
            scale = 1 / per if xkey == "wall_time_s" else 1
            x = [r[xkey] * scale for r in rows]
            y = [r[ykey] for r in rows]
            (line,) = ax.plot(x, y, marker="o", markersize=3, label=label)
            if ykey == "success_rate" and all("ci_low" in r for r in rows):
                lo, hi = [r["ci_low"] for r in rows], [r["ci_high"] for r in rows]
                ax.fill_between(x, lo, hi, color=line.get_color(), alpha=0.15, linewidth=0)
    for ax, _, ykey, xlabel, ylabel in panels:
        ax.set_xlabel(xlabel)
        if ylabel:
            ax.set_ylabel(ylabel)
        if ykey == "success_rate":
            ax.set_ylim(-0.02, 1.02)
        ax.grid(alpha=0.3)
    axes[0, 0].legend(fontsize=8, loc="best")
    fig.suptitle(title or "learning curves (band: 95% Wilson interval)")
    fig.tight_layout()
    target = Path(out)
    fmt = target.suffix.lstrip(".").lower() or "png"
    with atomic.atomic_writer(target, "wb") as f:
        fig.savefig(f, format=fmt, dpi=110)
    plt.close(fig)
    return target
