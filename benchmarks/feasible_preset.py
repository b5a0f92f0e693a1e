"""A policy on the feasible held-out preset of an earlier robustness study, with more
episodes: the transfer ratio's headline figure, and any policy of the same task
(a retrained one) on the same preset. Also the training and the old held-out preset.

    python benchmarks/feasible_preset.py runs/robust/DroneHover/robustness.json \\
        policies/baselines/DroneHover --episodes 200

The preset comes from the study's oracle curves (each axis as far as the oracle succeeds
in 95 % of episodes, :func:`sim2real.policies.studies.robustness.feasible_preset`); the
oracle runs again on it, with the study's seeds.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from sim2real.policies.common.evaluation import Evaluator
from sim2real.policies.deploy import OnnxPolicy
from sim2real.policies.studies import robustness as R
from sim2real.policies.studies import robustness_runs as RR
from sim2real.sim.core.registry import REGISTRY


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("study", type=Path, help="robustness.json of `sim2real robustness` (with an oracle)")
    parser.add_argument("policy", help="exported policy of the study's task")
    parser.add_argument("--episodes", type=int, default=200, help="episodes on the feasible preset")
    parser.add_argument("--preset-episodes", type=int, default=100,
                        help="episodes on the training and held-out presets")
    parser.add_argument("--n-envs", type=int, default=16)
    args = parser.parse_args(argv)
    study = json.loads(args.study.read_text())
    policy = OnnxPolicy(args.policy)
    if policy.task != study["task"]:
        parser.error(f"{args.policy} is a {policy.task} policy; the study is of {study['task']}")
    if study.get("feasible") is None:
        parser.error(f"{args.study} has no oracle, so no feasible preset")
    task_cls = REGISTRY.get(policy.task)
    train = task_cls.dr_class.train()
    axes, _ = R.axes_for(train, list(study["axes"]))
    ok = {name: [p["oracle"]["success_rate"] >= RR.FEASIBLE_SUCCESS for p in curve["points"]]
          for name, curve in study["axes"].items()}
    dr, ranges = R.feasible_preset(train, axes, ok)
    options = dict(policy.metadata.get("task_options") or {})
    controllers = RR.controllers_for(policy, task_cls, options, args.n_envs)
    controllers.pop("reference")
    feasible = RR.evaluate_point(task_cls, dr, controllers, args.episodes, args.n_envs, study["seed"])
    oracle = feasible["oracle"]["success_rate"]
    out = {"policy": args.policy, "feasible_preset": ranges, "feasible": {
        k: {f: v[f] for f in ("successes", "episodes", "ci_low", "ci_high")} for k, v in feasible.items()},
        "transfer_ratio": feasible["policy"]["success_rate"] / oracle if oracle > 0 else None}
    for preset in ("train", "heldout"):
        ev = Evaluator(task_cls, n_envs=args.n_envs, action_mode=policy.action_mode, dr=preset, task_options=options)
        out[preset] = ev.run(policy, args.preset_episodes).successes
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
