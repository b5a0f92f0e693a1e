"""Which held-out randomization range hurts a policy? Evaluate an exported policy
under the training preset with one field at a time swapped to its held-out range,
then under the whole held-out preset.

    python benchmarks/heldout_factors.py policies/baselines/QuadrupedVelocity --episodes 32

Prints one line per case (success, falls or crashes where the task reports them,
and the task's first metric), and with ``--json`` one JSON object.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys

from sim2real.policies.common.evaluation import Evaluator
from sim2real.policies.deploy import OnnxPolicy
from sim2real.sim.core.registry import REGISTRY


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("policy", help="exported policy (policy.onnx, its .json or folder)")
    parser.add_argument("--episodes", type=int, default=32, help="episodes per case")
    parser.add_argument("--n-envs", type=int, default=16)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)

    policy = OnnxPolicy(args.policy)
    task_cls = REGISTRY.get(policy.task)
    options = dict(policy.metadata.get("task_options") or {})
    train, held = task_cls.dr_class.train(), task_cls.dr_class.heldout()
    cases = [("train", train)]
    for f in dataclasses.fields(train):
        if getattr(train, f.name) != getattr(held, f.name):
            cases.append((f"heldout {f.name}", dataclasses.replace(train, **{f.name: getattr(held, f.name)})))
    cases.append(("heldout (all)", held))

    results = {}
    for label, dr in cases:
        ev = Evaluator(task_cls, n_envs=args.n_envs, action_mode=policy.action_mode, dr=dr, task_options=options)
        d = ev.run(policy, args.episodes).to_dict()
        results[label] = {"success_rate": d["success_rate"], "metrics_final": d["metrics_final"],
                          "metrics_mean": d["metrics_mean"]}
        if not args.json:
            extra = " ".join(f"{k} {v:.3f}" for k, v in d["metrics_mean"].items())
            print(f"{label:32s} success {d['success_rate']:.2f}  {extra}", flush=True)
    if args.json:
        print(json.dumps({"policy": args.policy, "task": policy.task, "episodes": args.episodes, "cases": results}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
