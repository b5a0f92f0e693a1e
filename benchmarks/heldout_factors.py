"""Which held-out randomization range hurts a policy? Evaluate an exported policy
under the training preset with one field at a time swapped to its held-out range,
then under the whole held-out preset.

    python benchmarks/heldout_factors.py policies/baselines/QuadrupedVelocity --episodes 32

With ``--drop-one`` it goes the other way: the held-out preset with one field at a
time back at its training range (which range, taken out of the conjunction, helps most).

With ``--sweep FIELD=LOW:HIGH,LOW:HIGH,...`` it instead evaluates the whole held-out
preset with that one range narrowed to each interval in turn (e.g. how success falls
with the size of the pushes), and ``--reference`` adds the task's reference
controller alone (a residual policy's PID or trot with a zero residual) to each case.

With ``--presets`` it evaluates only the two presets, training and held-out; with
``--reference`` too it is the residual policy against its own reference controller on
the same episodes (same seeds):

    python benchmarks/heldout_factors.py policies/baselines/DroneHover --presets --reference --episodes 100

``--task-option KEY=VALUE`` (a YAML value, repeatable) changes one of the policy's task
options for every controller, e.g. ``--task-option "residual_tilt_gate=[15, 30]"`` to
try a tilt gate on a policy trained without one.

With ``--by-draw`` it runs the whole held-out preset once and splits its episodes by
what each one drew: for every randomized value, the failure and fall (or crash) rate
in each quartile of its draws, and how many falls came before the first push. Vectors
(centre-of-mass shift, wind) count by their size, per-joint draws by their mean;
values the preset keeps constant are left out.

Prints one line per case (success, falls or crashes where the task reports them,
and the task's first metric), and with ``--json`` one JSON object.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from collections.abc import Callable
from typing import Any

import numpy as np

from sim2real.commands.overrides import parse_overrides
from sim2real.errors import ConfigError
from sim2real.policies.common.evaluation import Evaluator
from sim2real.policies.deploy import OnnxPolicy
from sim2real.sim.core.randomization import Range
from sim2real.sim.core.registry import REGISTRY


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("policy", help="exported policy (policy.onnx, its .json or folder)")
    parser.add_argument("--episodes", type=int, default=32, help="episodes per case")
    parser.add_argument("--n-envs", type=int, default=16)
    parser.add_argument("--sweep", metavar="FIELD=LOW:HIGH,...", help="narrow one held-out range in steps")
    parser.add_argument("--drop-one", action="store_true",
                        help="held-out preset with one field at a time back at its training range")
    parser.add_argument("--presets", action="store_true", help="only the training and the held-out preset")
    parser.add_argument("--reference", action="store_true", help="also evaluate the reference alone")
    parser.add_argument("--task-option", action="append", default=[], metavar="KEY=VALUE",
                        help="override one of the policy's task options (VALUE is YAML; repeatable)")
    parser.add_argument("--by-draw", action="store_true",
                        help="one held-out run, failures split by each randomized value's quartiles")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)

    policy = OnnxPolicy(args.policy)
    task_cls = REGISTRY.get(policy.task)
    options = dict(policy.metadata.get("task_options") or {})
    try:
        options.update(parse_overrides(args.task_option))
    except ConfigError as exc:
        parser.error(f"--task-option: {exc}")
    train, held = task_cls.dr_class.train(), task_cls.dr_class.heldout()
    act_size = sum(int(n) for _, n in policy.action_layout)
    controllers: dict[str, Callable[[np.ndarray], np.ndarray]] = {"": policy}
    if args.reference:
        controllers["reference alone, "] = lambda obs: np.zeros((len(obs), act_size))
    if args.by_draw:
        reports = {}
        for prefix, controller in controllers.items():
            ev = Evaluator(task_cls, n_envs=args.n_envs, action_mode=policy.action_mode, dr=held, task_options=options)
            push_every = held.push_interval_s / ev.task.control_dt
            reports[prefix.rstrip(", ") or "policy"] = by_draw(ev.run_episodes(controller, args.episodes), push_every)
        if args.json:
            print(json.dumps(reports))
        else:
            print("\n\n".join(f"{name}: {format_by_draw(r)}" for name, r in reports.items()))
        return 0

    if args.sweep:
        cases = sweep_cases(held, args.sweep)
    elif args.presets:
        cases = [("train", train), ("heldout", held)]
    elif args.drop_one:
        cases = factor_cases(held, train, labels=("heldout (all)", "heldout but training", "train"))
    else:
        cases = factor_cases(train, held)
    results = {}
    for case, dr in cases:
        for prefix, controller in controllers.items():
            label = prefix + case
            ev = Evaluator(task_cls, n_envs=args.n_envs, action_mode=policy.action_mode, dr=dr, task_options=options)
            d = ev.run(controller, args.episodes).to_dict()
            results[label] = {k: d[k] for k in ("successes", "episodes", "success_rate", "metrics_final",
                                                "metrics_mean")}
            if not args.json:
                extra = " ".join(f"{k} {v:.3f}" for k, v in d["metrics_mean"].items())
                print(f"{label:40s} success {d['success_rate']:.2f}  {extra}", flush=True)
    if args.json:
        print(json.dumps({"policy": args.policy, "task": policy.task, "action_mode": policy.action_mode,
                          "task_options": options, "episodes": args.episodes, "cases": results}))
    return 0


def factor_cases(base: Any, other: Any, labels: tuple[str, str, str] = ("train", "heldout", "heldout (all)")
                 ) -> list[tuple[str, Any]]:
    """``base``, then ``base`` with one field at a time taken from ``other``, then ``other``."""
    cases = [(labels[0], base)]
    for f in dataclasses.fields(base):
        if getattr(base, f.name) != getattr(other, f.name):
            cases.append((f"{labels[1]} {f.name}", dataclasses.replace(base, **{f.name: getattr(other, f.name)})))
    cases.append((labels[2], other))
    return cases


def draw_features(draw: dict[str, Any]) -> dict[str, float]:
    """One number per randomized value: signed lists are vectors (their size), others are
    per-joint or per-rotor draws (their mean)."""
    out = {}
    for name, value in draw.items():
        if isinstance(value, list):
            v = np.asarray(value, dtype=float)
            out[name] = float(np.linalg.norm(v)) if (v < 0).any() or name in ("com_shift", "wind") else float(v.mean())
        else:
            out[name] = float(value)
    return out


def by_draw(episodes: list[Any], push_every_steps: float) -> dict[str, Any]:
    """Failure and fall rates per quartile of every randomized value, over one run's episodes."""
    fall_key = next((k for k in ("fell", "crashed") if episodes and k in episodes[0].final), None)
    failed = np.array([not e.success for e in episodes])
    fell = np.array([bool(fall_key and e.final[fall_key] > 0) for e in episodes])
    lengths = np.array([e.length for e in episodes])
    features = [draw_features(e.draw) for e in episodes]
    report: dict[str, Any] = {
        "episodes": len(episodes), "failures": int(failed.sum()), "falls": int(fell.sum()), "fall_metric": fall_key,
        "falls_before_first_push": int((fell & (lengths <= push_every_steps)).sum()) if push_every_steps else None,
        "values": {},
    }
    for name in features[0] if features else []:
        v = np.array([f[name] for f in features])
        edges = np.quantile(v, [0.0, 0.25, 0.5, 0.75, 1.0])
        if edges[0] == edges[-1]:
            continue  # not randomized by this preset
        quartile = np.clip(np.searchsorted(edges[1:-1], v, side="right"), 0, 3)
        rows = [(int((quartile == q).sum()), float(failed[quartile == q].mean()) if (quartile == q).any() else None,
                 float(fell[quartile == q].mean()) if (quartile == q).any() else None) for q in range(4)]
        report["values"][name] = {"edges": edges.round(4).tolist(),
                                  "quartiles": [{"episodes": n, "failure_rate": f, "fall_rate": d} for n, f, d in rows]}
    return report


def format_by_draw(report: dict[str, Any]) -> str:
    lines = [f"{report['episodes']} held-out episodes: {report['failures']} failed, {report['falls']} "
             f"{report['fall_metric'] or 'falls'}; {report['falls_before_first_push']} of those before the first push",
             "value                  quartile edges                      failure rate / fall rate per quartile"]
    for name, v in report["values"].items():
        edges = " ".join(f"{e:7.3f}" for e in v["edges"])
        rates = "  ".join("  -  " if q["failure_rate"] is None else f"{q['failure_rate']:.2f}/{q['fall_rate']:.2f}"
                          for q in v["quartiles"])
        lines.append(f"{name:22s} {edges}   {rates}")
    return "\n".join(lines)


def sweep_cases(held: Any, spec: str) -> list[tuple[str, Any]]:
    """The held-out preset with one ``Range`` field narrowed to each ``LOW:HIGH`` interval."""
    name, _, intervals = spec.partition("=")
    if not isinstance(getattr(held, name, None), Range):
        raise SystemExit(f"--sweep: {name!r} is not a range of {type(held).__name__}")
    cases = []
    for interval in intervals.split(","):
        low, high = (float(v) for v in interval.split(":"))
        cases.append((f"heldout, {name} {low:g}-{high:g}", dataclasses.replace(held, **{name: Range(low, high)})))
    return cases


if __name__ == "__main__":
    sys.exit(main())
