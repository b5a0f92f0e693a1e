"""``sim2real reward eval``'s results as lines of text for people: per model, one line per
alpha, then the quality report (VOC, success detection, the hacking audit's table)."""

from __future__ import annotations

from typing import Any


def _signed(value: float | None) -> str:
    return "n/a" if value is None else f"{value:+.3f}"


def _plain(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def _percent(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.1f} %"


def quality_lines(quality: dict[str, Any], indent: str = "  ") -> list[str]:
    """VOC, success detection and the hacking audit (``evaluate_reward``'s ``quality``), one
    fact per line, with the audit's failure kinds as a table."""
    lines = [f"{indent}quality at alpha {quality['alpha']:.2f}:"]
    voc = quality["voc"]
    if voc["mean"] is None:
        lines.append(f"{indent}  VOC n/a (no successful episode of 3 frames or more)")
    else:
        lines.append(
            f"{indent}  VOC {voc['mean']:+.3f} over {voc['episodes']} successful episodes "
            f"({voc['constant_episodes']} constant, counted as 0)"
        )
    det = quality["success_detection"]
    if det is None:
        lines.append(f"{indent}  success detection n/a (needs successes in two episodes and failures)")
    else:
        lines += [
            f"{indent}  success detection on {det['positives']} success and {det['negatives']} failed frames "
            f"(asked {det['negative_ratio']:g}:1):",
            f"{indent}    AUROC {det['auroc']:.3f}; accuracy {_percent(det['accuracy'])} at reward >= "
            f"{det['threshold']:.4f} on the test half",
            f"{indent}    (balanced {_percent(det['balanced_accuracy'])}, "
            f"all-failure {_percent(det['majority_accuracy'])})",
        ]
    audit = quality["audit"]
    if audit is None:
        lines.append(f"{indent}  hacking audit n/a (no success frame to set its threshold)")
        return lines
    lines += [
        f"{indent}  hacking audit: {audit['fooled_frames']} of {audit['failed_frames']} failed frames "
        f"({_percent(audit['fooled_share'])}) score",
        f"{indent}    >= {audit['threshold']:.4f}, "
        + ("the scripted success frames' median" if audit["threshold_given"] else "the success frames' median"),
    ]
    width = max([len("failure kind"), *(len(k["kind"]) for k in audit["kinds"])])
    lines.append(f"{indent}    {'failure kind':<{width}}  {'failed':>7}  {'fooled':>7}  {'fooled share':>12}  "
                 f"{'of all fooled':>13}")
    for k in audit["kinds"]:
        lines.append(
            f"{indent}    {k['kind']:<{width}}  {k['failed']:>7}  {k['fooled']:>7}  "
            f"{_percent(k['fooled_share']):>12}  {_percent(k['share_of_fooled']):>13}"
        )
    return lines


def eval_lines(results: dict[str, Any]) -> list[str]:
    """Every model's block of ``evaluate_reward`` results (and of its ``policy_states``)."""
    lines = []
    for name, res in results.items():
        lines.append(f"{name}: {res['frames']} frames, {res['success_frames']} successful, {res['episodes']} episodes")
        for row in res["alphas"]:
            rho, d, rp = row["pearson_success"], row["epic_distance"], row["pearson_progress"]
            lines += [
                f"  alpha {row['alpha']:.2f}: rho(success) {_signed(rho)}  EPIC {_signed(d)}  "
                f"rho(progress) {_signed(rp)}",
                f"    VOC {_signed(row['voc'])}  AUROC {_plain(row['auroc'])}",
            ]
            bands = row["mean_reward_by_caption"]
            lines.append(
                "    mean reward per caption, farthest first: "
                + " ".join(f"{m:.2f}" for m in bands["mean"])
                + f" ({bands['dips']} dips)"
            )
        lines.extend(quality_lines(res["quality"]))
        if "policy_states" in res:
            visited = res["policy_states"]
            lines.append(f"  on the states {visited['run']} visits ({visited['frames']} frames):")
            for row in visited["alphas"]:
                lines.append(
                    f"    alpha {row['alpha']:.2f}: rho(progress) {_signed(row['pearson_progress'])}; per caption: "
                    + " ".join(f"{m:.2f}" for m in row["mean_reward_by_caption"]["mean"])
                )
            lines.extend(quality_lines(visited["quality"], indent="    "))
    return lines
