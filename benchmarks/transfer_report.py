"""Markdown tables of robustness studies (``sim2real robustness`` folders): for each
policy its transfer ratio on the feasible held-out preset, the held-out stress test,
each axis's curve in one row, and the sim-to-sim check where the folder has one.

    python benchmarks/transfer_report.py runs/robust/DroneHover runs/robust/ArmReach ...
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any


def rate(r: dict[str, Any]) -> str:
    return f"{100 * r['success_rate']:.0f} %"


def policy_section(folder: Path) -> str:
    study = json.loads((folder / "robustness.json").read_text())
    task = study["task"].split("/")[-1].removesuffix("-v0")
    # The folder names the policy: two policies of one task (a student beside the shipped one) stay apart.
    title = folder.name if folder.name == task else f"{folder.name} ({task})"
    who = list(study["controllers"])
    lines = [f"#### {title} ({study['action_mode']}, {study['episodes_per_point']} episodes per point)", ""]
    if study["transfer_ratio"] is not None:
        f = study["feasible"]
        ranges = ", ".join(f"{k} {lo:g}-{hi:g}" for k, (lo, hi) in study["feasible_preset"].items())
        lines += [f"Transfer ratio **{study['transfer_ratio']:.2f}** (policy {rate(f['policy'])} / oracle "
                  f"{rate(f['oracle'])} on the feasible held-out preset: {ranges}).", ""]
    else:
        lines += [f"Transfer ratio: not computed ({study['transfer_note']}).", ""]
    held = study["heldout"]
    lines += ["Held-out preset (stress test): " + ", ".join(f"{w} {rate(held[w])}" for w in who) + ".", ""]
    lines += ["| axis (training range) | " + " | ".join(["value: " + "/".join(who)]) + " |", "|---|---|"]
    for axis, curve in study["axes"].items():
        low, high = curve["train_range"]
        cells = "; ".join(f"{p['value']:g}: " + "/".join(f"{100 * p[w]['success_rate']:.0f}" for w in who)
                          for p in curve["points"])
        lines.append(f"| {axis} ({low:g}-{high:g}) | {cells} |")
    cells = "; ".join(f"x{p['factor']:g}: " + "/".join(f"{100 * p[w]['success_rate']:.0f}" for w in who)
                      for p in study["combined"])
    lines.append(f"| all together, widened | {cells} |")
    if study["skipped_axes"]:
        lines += ["", "Not randomized in its training, so not swept: " + ", ".join(study["skipped_axes"]) + "."]
    s2s = folder / "sim2sim.json"
    if s2s.is_file():
        rows = json.loads(s2s.read_text())["sim2sim"]
        lines += ["", "Sim-to-sim (training randomization; policy, then its reference): " + "; ".join(
            f"{r['simulator']}: {rate(r['policy'])} ({100 * r['policy']['change']:+.0f}), "
            f"{rate(r['reference'])} ({100 * r['reference']['change']:+.0f})" for r in rows) + "."]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("folders", nargs="+", type=Path, help="sim2real robustness --out folders")
    args = parser.parse_args(argv)
    missing = [str(f) for f in args.folders if not (f / "robustness.json").is_file()]
    if missing:
        parser.error(f"no robustness.json in {', '.join(missing)}")
    print("\n\n".join(policy_section(f) for f in args.folders))
    return 0


if __name__ == "__main__":
    sys.exit(main())
