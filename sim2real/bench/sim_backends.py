"""Batched env steps/s of each physics backend, measured in one run on one machine:
CPU MuJoCo (``mujoco.rollout`` on all cores) against MuJoCo Warp on Warp's default
device (a CUDA GPU when there is one, else the CPU). Same task, batch size, domain
randomization and random actions; only the physics differs, so the ratio is the figure."""

from __future__ import annotations

import os
from collections.abc import Callable

import mujoco

from sim2real.bench.sim import BENCH_TASKS, batched_env_rate


def run_backend_bench(seconds: float, num_envs: int, robots: list[str] | None, backend: str,
                      progress: Callable[[str], None] = lambda s: None) -> dict:
    """CPU MuJoCo against ``backend`` for every robot; returns the JSON-ready report."""
    from sim2real.sim.core.warp_physics import _import_warp

    wp, mjw = _import_warp()
    figures: dict[str, dict] = {}
    for robot in robots or list(BENCH_TASKS):
        task = BENCH_TASKS[robot]
        progress(f"{robot}: CPU MuJoCo x{num_envs}")
        cpu = batched_env_rate(task, num_envs, seconds, physics="mujoco")
        progress(f"{robot}: {backend} x{num_envs}")
        other = batched_env_rate(task, num_envs, seconds, physics=backend)
        figures[robot] = {
            "task": task,
            "num_envs": num_envs,
            "mujoco_env_steps_per_s": round(cpu, 1),
            f"{backend}_env_steps_per_s": round(other, 1),
            f"{backend}_vs_mujoco": round(other / cpu, 4),
        }
    return {
        "benchmark": "sim_backends",
        "backend": backend,
        "device": str(wp.get_device()),
        "cpu_count": os.cpu_count(),
        "mujoco": mujoco.__version__,
        "mujoco_warp": mjw.__version__,
        "warp": wp.__version__,
        "seconds_per_measurement": seconds,
        "robots": figures,
    }
