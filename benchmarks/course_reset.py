"""How long a simulated robot's reset takes: the time the sim bridge's control loop stands
still at the end of an episode (it resets inside its period; past two periods the safety
filter's watchdog trips).

    python benchmarks/course_reset.py --policy policies/baselines/QuadrupedWaypoints --resets 100

The task, action mode and options are the policy's (its ``policy.onnx.json``), as the
sim bridge builds them. Prints p50, p90 and the maximum over ``--resets`` resets after a
first, untimed one (docs/BENCHMARKS.md, "The confined course's trips were its resets").
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

import sim2real  # noqa: F401  (first: picks MUJOCO_GL before mujoco is imported)
from sim2real.sim import REGISTRY
from sim2real.sim.core.env import SimEnv


def main() -> None:
    parser = argparse.ArgumentParser(description="the time a simulated robot's reset takes")
    parser.add_argument("--policy", type=Path, default=Path("policies/baselines/QuadrupedWaypoints"),
                        help="a policy folder (its policy.onnx.json names the task)")
    parser.add_argument("--resets", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    meta = json.loads((args.policy / "policy.onnx.json").read_text())
    task = meta["task"].split("/")[-1].removesuffix("-v0")
    env = SimEnv(REGISTRY.get(task), action_mode=meta["action_mode"], **(meta.get("task_options") or {}))
    env.reset(seed=args.seed)
    times = []
    for _ in range(args.resets):
        start = time.perf_counter()
        env.reset()
        times.append((time.perf_counter() - start) * 1e3)
    p50, p90 = np.percentile(times, [50, 90])
    print(f"{task}: {args.resets} resets, p50 {p50:.1f} ms, p90 {p90:.1f} ms, max {max(times):.1f} ms")


if __name__ == "__main__":
    main()
