"""HIL-SERL's actor environment on a real arm's graph, against the emulated Franka: how
well it keeps the arm's real time and how fresh its observations are.

    python benchmarks/hil_real_arm.py --steps 400 [--json]

Starts `sim2real deploy --robot arm --backend real --emulate --policy external --task
ArmPegInsert` (emulator, hardware bridge, safety filter; the cell's cameras), then steps
`GraphArmEnv` with uniform random actions (what an actor does before its first weights),
episodes of 40 steps with the return to the start pose and the scene reset between
them. Reports the step period (p50 / p99 / max against the 50 ms control period), the
age of the state and of the camera frames each observation is built from, the returns'
durations, and the graph's own figures (filter interventions, commands sent to
ros2_control, the emulator's overruns and frames); `--json` one object.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=400)
    parser.add_argument("--episode-steps", type=int, default=40)
    parser.add_argument("--domain-id", type=int, default=90 + os.getpid() % 40)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    os.environ["ROS_DOMAIN_ID"] = str(args.domain_id)
    os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")

    from sim2real.policies.hil.config import HilConfig
    from sim2real.ros_nodes.hil_env import GraphArmEnv

    graph = subprocess.Popen([sys.executable, "-m", "sim2real", "deploy", "--robot", "arm", "--backend", "real",
                              "--emulate", "--policy", "external", "--task", "ArmPegInsert", "--duration", "3600",
                              "--domain-id", str(args.domain_id), "--json"],
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    cfg = HilConfig.from_dict({"env": {"task": "ArmPegInsert", "cameras": ["wrist", "front"],
                                       "max_episode_steps": args.episode_steps,
                                       "graph": {"reset_scene_service": "/franka/reset_scene", "start_timeout": 90}}})
    rng = np.random.default_rng(0)
    periods, state_age, image_age, returns = [], [], [], []
    env = GraphArmEnv(cfg.env, seed=0, log=lambda s: None)
    try:
        steps = 0
        while steps < args.steps:
            t0 = time.monotonic()
            env.reset()
            returns.append(time.monotonic() - t0)
            last, done = time.monotonic(), False
            while not done and steps < args.steps:
                _, _, terminated, truncated, _ = env.step(rng.uniform(-1, 1, env.action_dim).astype(np.float32))
                now = time.monotonic()
                periods.append(now - last)
                last = now
                m = env.measurements()
                state_age.append(now - min(m.stamps.values()))
                image_age.append(now - min(t for _, t in env._frames.values()))
                done, steps = terminated or truncated, steps + 1
    finally:
        env.close()
        graph.terminate()
        out, _ = graph.communicate(timeout=60)
    summary = json.loads(out)

    def pct(values: list[float]) -> dict[str, float]:
        a = np.asarray(values) * 1e3
        return {"p50_ms": round(float(np.percentile(a, 50)), 1), "p99_ms": round(float(np.percentile(a, 99)), 1),
                "max_ms": round(float(a.max()), 1)}

    emulator = summary["emulator"]
    result = {"steps": len(periods), "episodes": len(returns), "step_period": pct(periods),
              "state_age": pct(state_age), "image_age": pct(image_age), "return_to_start_s": {
                  "p50": round(float(np.median(returns)), 2), "max": round(float(np.max(returns)), 2)},
              "filter": summary["interventions"], "hardware": {k: summary["hardware"].get(k) for k in
                                                              ("commands_sent", "commands_while_disabled",
                                                               "deadman_trips", "phase")},
              "emulator": {k: emulator.get(k) for k in ("episodes", "overruns", "state_rate_hz", "cameras")}}
    if args.json:
        print(json.dumps(result))
    else:
        for key, value in result.items():
            print(f"{key}: {value}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
