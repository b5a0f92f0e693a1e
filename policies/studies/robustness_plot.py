"""The picture of a robustness study (:mod:`~sim2real.policies.studies.robustness`): one
panel per axis, success against the parameter's value for the policy and its reference
with their 95 % intervals, the training range shaded, and where the task measures one its
tracking error (dashed, right axis: a model error may slow a robot long before it falls);
a last panel for the combined points."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sim2real.policies.common import atomic

COLOURS = {"policy": "tab:blue", "reference": "tab:orange", "oracle": "tab:green"}


def plot_study(study: dict[str, Any], out: str | Path) -> Path:
    """Write the study's PNG to ``out``; returns its path."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = [*study["axes"].items()]
    if study["combined"]:
        panels.append(("combined", {"points": study["combined"], "train_range": None}))
    cols = min(4, len(panels))
    rows = (len(panels) + cols - 1) // cols
    fig, axs = plt.subplots(rows, cols, figsize=(4.0 * cols, 3.2 * rows), squeeze=False)
    for ax, (name, curve) in zip(axs.flat, panels, strict=False):
        key = "factor" if name == "combined" else "value"
        xs = [p[key] for p in curve["points"]]
        if curve["train_range"] is not None:
            low, high = curve["train_range"]
            ax.axvspan(low, high if high > low else low + 1e-9, color="0.9", label="training range")
        for who, colour in COLOURS.items():
            if who not in curve["points"][0]:
                continue
            ys = [p[who]["success_rate"] for p in curve["points"]]
            ax.fill_between(xs, [p[who]["ci_low"] for p in curve["points"]],
                            [p[who]["ci_high"] for p in curve["points"]], color=colour, alpha=0.15)
            ax.plot(xs, ys, "o-", color=colour, label=who)
        _tracking(ax, xs, curve["points"])
        ax.set_title(name if name == "combined" else f"{name} ({curve['field']})", fontsize=10)
        ax.set_xlabel("every range widened x" if name == "combined" else (curve.get("unit") or "value"))
        ax.set_ylim(-0.02, 1.02)
        ax.set_ylabel("success")
        ax.grid(alpha=0.3)
    for ax in list(axs.flat)[len(panels):]:
        ax.axis("off")
    axs.flat[0].legend(fontsize=8, loc="lower left")
    fig.suptitle(f"{study['task']} ({study['action_mode']}): {study['episodes_per_point']} episodes per point",
                 fontsize=11)
    fig.tight_layout()
    path = Path(out)
    with atomic.atomic_writer(path, "wb") as f:
        fig.savefig(f, dpi=90, format="png")
    plt.close(fig)
    return path


def _tracking(ax: Any, xs: list[float], points: list[dict[str, Any]]) -> None:
    """Each controller's mean tracking error (the task's first ``*tracking_error`` metric),
    dashed on a right-hand axis."""
    metric = next((k for k in points[0]["policy"].get("metrics_mean") or {} if k.endswith("tracking_error")), None)
    if metric is None:
        return
    right = ax.twinx()
    for who, colour in COLOURS.items():
        if who in points[0]:
            right.plot(xs, [p[who]["metrics_mean"][metric] for p in points], "x--", color=colour, alpha=0.7)
    right.set_ylabel(f"{metric} (dashed)", fontsize=8)
    right.set_ylim(bottom=0)
