"""The passivity filter at scale: randomized episodes of the arm in ``ee_impedance``
mode (training randomization: masses, friction, contact stiffness, latency, pushes)
under random, energy-pumping and random-walk policies, with the filter on. Every
episode's energy-tank violations are counted: the guarantee is zero. The same
policies without the filter are the reference, run in the same process: how much
energy they overdraw, and the filter's cost in env steps/s (as a ratio).
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import numpy as np

from sim2real.commands.output import add_json_flag, console, emit_json, stdout

HELP = "energy-tank violations over many randomized arm episodes, passivity filter on vs off"

# Free-space reaching and contact-rich maze exploration, by share of the episodes.
TASK_SHARES = {"ArmReach": 0.75, "ArmMaze": 0.25}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--episodes", type=int, default=10_000, help="filtered episodes in all (split over the tasks)")
    parser.add_argument("--reference-share", type=float, default=0.1, help="unfiltered episodes, as a share")
    parser.add_argument("--n-envs", type=int, default=64, help="environments stepped as one batch")
    parser.add_argument("--seed", type=int, default=0)
    add_json_flag(parser)


def _policies(kind: np.ndarray, step: int, prev: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Per-env actions: 0 uniform random, 1 energy pump (stiffest spring, setpoint
    slammed back and forth), 2 random walk (smooth setpoint motion, drifting stiffness)."""
    n, size = prev.shape
    out = rng.uniform(-1, 1, (n, size))
    pump = np.ones((n, size))
    pump[:, :6] = 1.0 if step % 2 else -1.0
    out = np.where((kind == 1)[:, None], pump, out)
    walk = np.clip(prev + rng.normal(0, 0.3, (n, size)), -1, 1)
    return np.where((kind == 2)[:, None], walk, out)


def run_episodes(task: str, episodes: int, filter_on: bool, n_envs: int, seed: int) -> dict[str, Any]:
    from sim2real.sim import make_vec

    env = make_vec(task, n_envs, action_mode="ee_impedance", dr="train", seed=seed, passivity_filter=filter_on)
    rng = np.random.default_rng(seed)
    kind = np.arange(n_envs) % 3
    env.reset()
    prev = np.zeros((n_envs, env.action_space.shape[0]))
    done_count, steps, k = 0, 0, 0
    violation, violated_episodes, interventions = 0.0, 0, 0.0
    tank_low = np.inf
    episode_violation = np.zeros(n_envs)
    t0 = time.perf_counter()
    while done_count < episodes:
        prev = _policies(kind, k, prev, rng)
        _, _, dones, infos = env.step(prev)
        k += 1
        steps += n_envs
        for i, info in enumerate(infos):
            m = info["metrics"]
            episode_violation[i] += m["energy_violation"]
            tank_low = min(tank_low, m["tank_energy"])
            interventions += m["passivity_active"]
            if dones[i]:
                done_count += 1
                violation += episode_violation[i]
                violated_episodes += episode_violation[i] > 0
                episode_violation[i] = 0.0
    seconds = time.perf_counter() - t0
    env.close()
    return {
        "task": task,
        "filter": filter_on,
        "episodes": done_count,
        "env_steps": steps,
        "violation_J": violation,
        "episodes_with_violation": int(violated_episodes),
        "lowest_tank_J": float(tank_low),
        "filter_interventions": int(interventions),
        "env_steps_per_s": steps / seconds,
    }


def run(args: argparse.Namespace) -> int:
    rows = []
    for task, share in TASK_SHARES.items():
        n = max(1, int(round(args.episodes * share)))
        for filter_on, count in ((True, n), (False, max(1, int(round(n * args.reference_share))))):
            console.print(f"{task}: {count:,} episodes, filter {'on' if filter_on else 'off'}")
            rows.append(run_episodes(task, count, filter_on, args.n_envs, args.seed))
    on = [r for r in rows if r["filter"]]
    off = [r for r in rows if not r["filter"]]
    summary = {
        "filtered_episodes": sum(r["episodes"] for r in on),
        "filtered_violation_J": sum(r["violation_J"] for r in on),
        "filtered_episodes_with_violation": sum(r["episodes_with_violation"] for r in on),
        "lowest_tank_J": min(r["lowest_tank_J"] for r in on),
        "reference_episodes": sum(r["episodes"] for r in off),
        "reference_violation_J": sum(r["violation_J"] for r in off),
        "reference_episodes_with_violation": sum(r["episodes_with_violation"] for r in off),
        "filter_speed_ratio": {
            r["task"]: r["env_steps_per_s"] / next(o["env_steps_per_s"] for o in off if o["task"] == r["task"])
            for r in on
        },
        "rows": rows,
    }
    if args.json:
        emit_json(summary)
        return 0
    from rich.table import Table

    table = Table(title="passivity filter over randomized episodes")
    for col in ("task", "filter", "episodes", "violation (J)", "episodes violating", "lowest tank (J)", "steps/s"):
        table.add_column(col)
    for r in rows:
        table.add_row(r["task"], "on" if r["filter"] else "off", f"{r['episodes']:,}", f"{r['violation_J']:.4g}",
                      str(r["episodes_with_violation"]), f"{r['lowest_tank_J']:.4f}", f"{r['env_steps_per_s']:,.0f}")
    stdout.print(table)
    return 0
