"""The drone's hierarchy against its alternatives on held-out gate courses (issue 19):
the same courses (layout seeds never used in training), the same episodes for each.

    python benchmarks/gates.py --hierarchy runs/gates/export --end-to-end runs/gates_e2e/export --episodes 100

Controllers (each where its policy is given; the PIDs always):

* ``hierarchy``: the gate planner's path, the cascaded PID following a carrot along it
  and the learned residual (``--hierarchy``, trained with ``guidance: path``);
* ``end_to_end``: the learned residual with the PID aimed at each gate's centre in turn
  (``--end-to-end``, trained with ``guidance: gates``);
* ``pid_path``: the cascaded PID following the same path, no learning;
* ``pid_gates``: the cascaded PID aimed at each gate's centre, no planner, no learning.

Per controller: success (every gate passed in order without touching one) with its 95 %
Wilson interval, gates passed, crashes (a gate's frame, the ground), lap time of the
successful episodes.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from sim2real.policies.common.evaluation import Evaluator, wilson_interval
from sim2real.policies.deploy import OnnxPolicy
from sim2real.sim.core.registry import REGISTRY

SEED = 90_000
"""First evaluation seed: training draws its courses from seeds below 10,000."""


def run(name: str, controller: Callable[[np.ndarray], np.ndarray], options: dict[str, Any], episodes: int,
        n_envs: int, dr: str) -> dict[str, Any]:
    ev = Evaluator(REGISTRY.get("DroneGates"), n_envs=n_envs, action_mode="ctbr_residual", dr=dr, seed=SEED,
                   task_options=options)
    t0 = time.perf_counter()
    rows = ev.run_episodes(controller, episodes)
    k = sum(r.success for r in rows)
    lo, hi = wilson_interval(k, len(rows))
    laps = [r.length * float(ev.task.control_dt) for r in rows if r.success]
    return {"controller": name, "episodes": len(rows), "successes": k, "success_rate": k / len(rows), "ci": [lo, hi],
            "gates_passed": float(np.mean([r.final["gates_passed"] for r in rows])),
            "crashes": int(sum(r.final["crashed"] > 0 for r in rows)),
            "lap_time_s": float(np.mean(laps)) if laps else None, "seconds": time.perf_counter() - t0}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hierarchy", help="exported DroneGates policy trained with guidance: path")
    parser.add_argument("--end-to-end", help="exported DroneGates policy trained with guidance: gates")
    parser.add_argument("--episodes", type=int, default=100)
    parser.add_argument("--n-envs", type=int, default=16)
    parser.add_argument("--dr", default="train", choices=["train", "heldout", "none"],
                        help="the drone's randomization (the courses are held out in every case)")
    parser.add_argument("--json", action="store_true", help="one JSON object on stdout")
    args = parser.parse_args(argv)

    controllers: list[tuple[str, Callable[[np.ndarray], np.ndarray], dict[str, Any]]] = []
    for name, path in (("hierarchy", args.hierarchy), ("end_to_end", args.end_to_end)):
        if path:
            policy = OnnxPolicy(path)
            controllers.append((name, policy, dict(policy.metadata.get("task_options") or {})))
    for name, guidance in (("pid_path", "path"), ("pid_gates", "gates")):
        controllers.append((name, lambda obs: np.zeros((obs.shape[0], 4), dtype=np.float32), {"guidance": guidance}))
    rows = []
    for name, controller, options in controllers:
        row = run(name, controller, options, args.episodes, args.n_envs, args.dr)
        rows.append(row)
        if not args.json:
            lap = row["lap_time_s"]
            print(f"{name:11s} success {row['successes']:3d}/{row['episodes']} [{row['ci'][0]:.0%}, {row['ci'][1]:.0%}]"
                  f"  gates {row['gates_passed']:.2f}  crashes {row['crashes']:3d}  "
                  f"lap {'-' if lap is None else f'{lap:.1f} s':>6s}  ({row['seconds']:.0f} s)", flush=True)
    if args.json:
        print(json.dumps({"dr": args.dr, "seed": SEED, "rows": rows}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
