"""The hierarchy against its alternatives on held-out confined courses (issue 19;
"Dexterous Legged Locomotion in Confined 3D Spaces"): the same courses (layout seeds
never used in training), the same episodes for every controller.

    python benchmarks/hierarchy.py --follower policies/baselines/QuadrupedWaypoints \\
        --velocity policies/baselines/QuadrupedVelocity --episodes 100 --json

Controllers (each where its policy is given):

* ``hierarchy``: the planner's waypoints, pure pursuit as the gait reference (with its
  crouch) and the learned follower's residual (``--follower``);
* ``end_to_end``: a policy given only the goal and the rangefinders (``--end-to-end``,
  trained with ``guidance: goal``);
* ``velocity_pursuit``: the planner's path, pure pursuit's twist as the command of the
  shipped velocity policy (``--velocity``); it cannot crouch;
* ``classical``: the trot reference along the path with a zero residual (pure pursuit's
  twist and crouch, no learning).

Per course kind (``--kinds``; ``mixed``: three sections of any kind): success with its
95 % Wilson interval, the successes in which the trunk never touched anything, time to
the goal of the successful episodes, share of steps with
the trunk touching a wall or ceiling, falls, share of waypoints reached.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from sim2real.policies.common.evaluation import Episode, Evaluator, wilson_interval
from sim2real.policies.deploy import OnnxPolicy
from sim2real.sim.core.layout import layout_slices
from sim2real.sim.core.registry import REGISTRY
from sim2real.sim.quadruped import layouts

Controller = Callable[[np.ndarray], np.ndarray]
SEED = 90_000
"""First evaluation seed: training draws its courses from seeds below 10,000."""


def velocity_on_the_path(policy: OnnxPolicy, waypoint_layout: list[tuple[str, int]]) -> Controller:
    """The velocity policy fed the waypoints task's proprioception, with pure pursuit's
    twist (the ``reference`` block's first three values) as its command."""
    have = layout_slices(waypoint_layout)
    wanted = [(block["name"], int(block["size"])) for block in policy.metadata["observation"]["layout"]]

    def act(obs: np.ndarray) -> np.ndarray:
        parts = [obs[:, have["reference"]][:, :3] if name == "command" else obs[:, have[name]] for name, _ in wanted]
        return policy(np.concatenate(parts, axis=1).astype(np.float32))

    return act


def run(name: str, controller: Controller, options: dict[str, Any], kind: str, episodes: int, n_envs: int,
        dr: str) -> dict[str, Any]:
    task_cls = REGISTRY.get("QuadrupedWaypoints")
    kinds = {"section_kinds": list(layouts.SECTION_KINDS) if kind == "mixed" else [kind],
             "num_sections": 3 if kind == "mixed" else 1}
    ev = Evaluator(task_cls, n_envs=n_envs, action_mode="gait_residual", dr=dr, seed=SEED,
                   task_options={**options, **kinds})
    t0 = time.perf_counter()
    rows: list[Episode] = ev.run_episodes(controller, episodes)
    k = sum(r.success for r in rows)
    lo, hi = wilson_interval(k, len(rows))
    dt = float(ev.task.control_dt)
    times = [r.length * dt for r in rows if r.success]
    return {
        "controller": name, "courses": kind, "episodes": len(rows), "successes": k,
        "success_rate": k / len(rows), "ci": [lo, hi],
        "time_to_goal_s": float(np.mean(times)) if times else None,
        "collision_share": float(np.mean([r.mean["trunk_collision"] for r in rows])),
        "clean_successes": sum(r.success and r.mean["trunk_collision"] == 0.0 for r in rows),
        "falls": float(np.mean([r.final["fell"] for r in rows])),
        "waypoint_fraction": float(np.mean([r.final["waypoint_fraction"] for r in rows])),
        "seconds": time.perf_counter() - t0,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--follower", help="the hierarchy's exported follower (QuadrupedWaypoints, planner guidance)")
    parser.add_argument("--end-to-end", help="an exported QuadrupedWaypoints policy trained with guidance: goal")
    parser.add_argument("--velocity", help="the exported QuadrupedVelocity policy, steered by pure pursuit")
    parser.add_argument("--no-classical", action="store_true", help="leave out the zero-residual reference")
    parser.add_argument("--kinds", default="mixed," + ",".join(layouts.SECTION_KINDS),
                        help="course kinds, comma-separated (mixed: three sections of any kind)")
    parser.add_argument("--episodes", type=int, default=100, help="episodes per controller and course kind")
    parser.add_argument("--n-envs", type=int, default=16)
    parser.add_argument("--dr", default="train", choices=["train", "heldout", "none"],
                        help="the robot's randomization (the courses are held out in every case)")
    parser.add_argument("--json", action="store_true", help="one JSON object on stdout")
    args = parser.parse_args(argv)

    task_cls = REGISTRY.get("QuadrupedWaypoints")
    layout = task_cls(num_envs=1, action_mode="gait_residual").observation_layout()
    controllers: list[tuple[str, Controller, dict[str, Any]]] = []
    if args.follower:
        follower = OnnxPolicy(args.follower)
        controllers.append(("hierarchy", follower, dict(follower.metadata.get("task_options") or {})))
    if args.end_to_end:
        e2e = OnnxPolicy(args.end_to_end)
        controllers.append(("end_to_end", e2e, dict(e2e.metadata.get("task_options") or {})))
    if args.velocity:
        velocity = OnnxPolicy(args.velocity)
        options = {**(velocity.metadata.get("task_options") or {}), "reference_crouch": False}
        controllers.append(("velocity_pursuit", velocity_on_the_path(velocity, layout), options))
    if not args.no_classical:
        controllers.append(("classical", lambda obs: np.zeros((obs.shape[0], 12), dtype=np.float32),
                            {"action_scale": 0.3}))
    rows = []
    for kind in args.kinds.split(","):
        for name, controller, options in controllers:
            row = run(name, controller, options, kind, args.episodes, args.n_envs, args.dr)
            rows.append(row)
            if not args.json:
                t = row["time_to_goal_s"]
                print(f"{kind:12s} {name:17s} success {row['successes']:3d}/{row['episodes']} "
                      f"[{row['ci'][0]:.0%}, {row['ci'][1]:.0%}] ({row['clean_successes']} untouched)  "
                      f"time {'-' if t is None else f'{t:.1f} s':>7s}  "
                      f"collisions {row['collision_share']:.1%}  falls {row['falls']:.0%}  "
                      f"waypoints {row['waypoint_fraction']:.0%}  ({row['seconds']:.0f} s)", flush=True)
    if args.json:
        print(json.dumps({"dr": args.dr, "seed": SEED, "rows": rows}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
