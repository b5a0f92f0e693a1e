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

Prints one line per case (success, falls or crashes where the task reports them,
and the task's first metric), and with ``--json`` one JSON object.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from typing import Any

import numpy as np

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
    parser.add_argument("--reference", action="store_true", help="also evaluate the reference alone")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)

    policy = OnnxPolicy(args.policy)
    task_cls = REGISTRY.get(policy.task)
    options = dict(policy.metadata.get("task_options") or {})
    train, held = task_cls.dr_class.train(), task_cls.dr_class.heldout()
    if args.sweep:
        cases = sweep_cases(held, args.sweep)
    elif args.drop_one:
        cases = factor_cases(held, train, labels=("heldout (all)", "heldout but training", "train"))
    else:
        cases = factor_cases(train, held)
    act_size = sum(int(n) for _, n in policy.action_layout)
    controllers = {"": policy}
    if args.reference:
        controllers["reference alone, "] = lambda obs: np.zeros((len(obs), act_size))

    results = {}
    for case, dr in cases:
        for prefix, controller in controllers.items():
            label = prefix + case
            ev = Evaluator(task_cls, n_envs=args.n_envs, action_mode=policy.action_mode, dr=dr, task_options=options)
            d = ev.run(controller, args.episodes).to_dict()
            results[label] = {"success_rate": d["success_rate"], "metrics_final": d["metrics_final"],
                              "metrics_mean": d["metrics_mean"]}
            if not args.json:
                extra = " ".join(f"{k} {v:.3f}" for k, v in d["metrics_mean"].items())
                print(f"{label:40s} success {d['success_rate']:.2f}  {extra}", flush=True)
    if args.json:
        print(json.dumps({"policy": args.policy, "task": policy.task, "episodes": args.episodes, "cases": results}))
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
