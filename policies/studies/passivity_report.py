"""The passivity study's outputs: a markdown table and PNG plots."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from sim2real.policies.common import atomic

LABELS = {
    "agnostic/filter_off": "agnostic (PPO), filter off",
    "agnostic/filter_on": "agnostic (PPO), filter on",
    "aware/filter_off": "aware (PPO-Lagrangian), filter off",
    "aware/filter_on": "aware (PPO-Lagrangian), filter on",
}


def _cell(stat: dict[str, float], percent: bool = False) -> str:
    mean, ci = stat["mean"], stat["ci95"]
    if not math.isfinite(mean):
        return "-"
    if percent:
        return f"{mean:.0%}" + (f" ± {ci:.0%}" if math.isfinite(ci) else "")
    return f"{mean:.3g}" + (f" ± {ci:.2g}" if math.isfinite(ci) else "")


def write_table(results: dict[str, Any], path: Path) -> None:
    """``study.md``: one row per policy/filter combination, mean ± 95% CI over seeds."""
    from sim2real.policies.studies.passivity import EPISODE_FIGURES

    cfg = results["config"]
    lines = [
        "# Passivity study",
        "",
        f"Task {cfg['task']} (`ee_impedance`), {cfg['seeds']} seeds per policy, {cfg['steps']:,} training steps each, "
        f"{cfg['episodes']} evaluation episodes per seed and setting (randomization `{cfg['eval_dr']}`); "
        f"aware policies: cost limit {cfg['cost_limit']:g} J/episode. Figures: mean ± 95% CI (Student t) over seeds.",
        "",
        "| policy, filter | " + " | ".join(EPISODE_FIGURES.values()) + " |",
        "|---|" + "---|" * len(EPISODE_FIGURES),
    ]
    for key, label in LABELS.items():
        stats = results["summary"][key]
        cells = [_cell(stats[f], percent=f in ("success", "violated")) for f in EPISODE_FIGURES]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "## Sensitivity to the cost limit (aware policies)",
        "",
        "| cost limit (J) | seeds | success, filter off | violation (J), filter off | success, filter on "
        "| filter interventions, filter on |",
        "|---|---|---|---|---|---|",
    ]
    for limit, row in results["sensitivity"].items():
        off, on = row["filter_off"], row["filter_on"]
        lines.append(
            f"| {limit} | {row['seeds']} | {off['success']:.0%} | {off['energy_violation_total']:.3g} | "
            f"{on['success']:.0%} | {on['filter_steps']:.3g} |"
        )
    atomic.write_text(path, "\n".join(lines) + "\n")


def write_plots(results: dict[str, Any], traces: dict[str, list[float]], out: Path) -> None:
    """``tank_energy.png`` (one episode per combination), ``comparison.png`` (bars with
    CIs) and ``sensitivity.png`` (figures against the cost limit)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    tank = results["config"]["tank"] or {}
    t_min = tank.get("minimum", 0.05)
    fig, axes = plt.subplots(2, 2, figsize=(10, 6), sharex=True, sharey=True)
    for ax, (key, label) in zip(axes.flat, LABELS.items(), strict=True):
        trace = traces[key]
        ax.plot([0.05 * i for i in range(len(trace))], trace, lw=1.2)
        ax.axhline(t_min, color="red", ls="--", lw=1, label="T_min")
        ax.set_title(label, fontsize=10)
        ax.grid(alpha=0.3)
    for ax in axes[1]:
        ax.set_xlabel("time (s)")
    for ax in axes[:, 0]:
        ax.set_ylabel("tank energy (J)")
    axes[0, 0].legend(loc="upper right")
    fig.suptitle("Energy tank over one maze episode (same layout and start)")
    fig.tight_layout()
    _save(fig, out / "tank_energy.png")

    figures = [
        ("success", "success rate"),
        ("energy_violation_total", "violation (J/ep)"),
        ("energy_injected_total", "injected (J/ep)"),
        ("filter_steps", "filter interventions/ep"),
    ]
    fig, axes = plt.subplots(1, len(figures), figsize=(14, 3.6))
    keys = list(LABELS)
    colors = ["#c44e52", "#dd8452", "#4c72b0", "#55a868"]
    for ax, (fig_key, title) in zip(axes, figures, strict=True):
        means = [results["summary"][k][fig_key]["mean"] for k in keys]
        cis = [results["summary"][k][fig_key]["ci95"] for k in keys]
        cis = [c if math.isfinite(c) else 0.0 for c in cis]
        ax.bar(range(len(keys)), means, yerr=cis, color=colors, capsize=3)
        ax.set_xticks(range(len(keys)), ["agn/off", "agn/on", "aware/off", "aware/on"], fontsize=8)
        ax.set_title(title, fontsize=10)
        ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    _save(fig, out / "comparison.png")

    limits = list(results["sensitivity"])
    xs = [float(x) for x in limits]
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.4))
    for f, style in (("filter_off", "o-"), ("filter_on", "s--")):
        axes[0].plot(xs, [results["sensitivity"][k][f]["success"] for k in limits], style, label=f)
        axes[1].plot(xs, [results["sensitivity"][k][f]["energy_violation_total"] for k in limits], style, label=f)
    axes[0].set(xlabel="cost limit (J/episode)", ylabel="success rate", title="success")
    axes[1].set(xlabel="cost limit (J/episode)", ylabel="J/episode", title="energy violation")
    for ax in axes:
        ax.grid(alpha=0.3)
        ax.legend()
    fig.tight_layout()
    _save(fig, out / "sensitivity.png")


def _save(fig: Any, path: Path) -> None:
    import matplotlib.pyplot as plt

    tmp = path.with_name(path.name + ".tmp.png")
    fig.savefig(tmp, dpi=110)
    plt.close(fig)
    tmp.replace(path)
