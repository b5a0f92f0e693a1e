"""A residual policy against its own reference controller: evaluate an exported
policy trained in a reference mode (``ctbr_residual``, ``gait_residual``) and the
reference alone (the same task and mode with a zero residual), on the same
episodes (same seeds), under the training and the held-out randomization.

    python benchmarks/reference_controllers.py policies/baselines/DroneHover --episodes 100

``--task-option KEY=VALUE`` (a YAML value, repeatable) changes one of the policy's task
options for both controllers, e.g. ``--task-option "residual_tilt_gate=[15, 30]"`` to
try a tilt gate on a policy trained without one.
"""

from __future__ import annotations

import argparse
import json
import sys

import numpy as np
import yaml

from sim2real.policies.common.evaluation import Evaluator
from sim2real.policies.deploy import OnnxPolicy
from sim2real.sim.core.registry import REGISTRY


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("policy", help="exported policy (policy.onnx, its .json or folder)")
    parser.add_argument("--episodes", type=int, default=100, help="episodes per case")
    parser.add_argument("--n-envs", type=int, default=8)
    parser.add_argument("--task-option", action="append", default=[], metavar="KEY=VALUE",
                        help="override one of the policy's task options (VALUE is YAML)")
    args = parser.parse_args(argv)

    policy = OnnxPolicy(args.policy)
    task_cls = REGISTRY.get(policy.task)
    options = dict(policy.metadata.get("task_options") or {})
    for pair in args.task_option:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            parser.error(f"--task-option {pair!r} is not KEY=VALUE")
        options[key] = yaml.safe_load(value)
    act_size = sum(int(n) for _, n in policy.action_layout)
    controllers = {"policy": policy, "reference alone": lambda obs: np.zeros((len(obs), act_size))}
    out: dict[str, dict[str, dict]] = {}
    for dr in ("train", "heldout"):
        for name, controller in controllers.items():
            ev = Evaluator(task_cls, n_envs=args.n_envs, action_mode=policy.action_mode, dr=dr, task_options=options)
            d = ev.run(controller, args.episodes).to_dict()
            out.setdefault(dr, {})[name] = {k: d[k] for k in ("successes", "episodes", "success_rate", "metrics_final")}
            print(f"{dr:8s} {name:16s} {d['successes']}/{d['episodes']}  "
                  + " ".join(f"{k} {v:.3f}" for k, v in d["metrics_final"].items()), file=sys.stderr, flush=True)
    print(json.dumps({"policy": args.policy, "task": policy.task, "action_mode": policy.action_mode, "results": out}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
