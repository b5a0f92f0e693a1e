"""Render the documentation pictures of the drone tasks.

    python -m sim2real.sim.drone.pictures docs/images

Each task is reset from a fixed seed and the drone is posed in flight along the
sampled course (nose tilted 15 degrees toward where it is heading, motors at
hover), then photographed through the task's camera with
``render_mode="rgb_array"``. Posing instead of flying keeps this module free of
any controller (the simulation layer imports nothing from ``policies``).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import mujoco
import numpy as np

from sim2real.sim.drone.base import HOVER_COMMAND, yaw_quat


def _pose(env: Any, position: np.ndarray, heading: np.ndarray) -> None:
    """Put the drone at ``position``, nose along ``heading`` (world xy) and pitched into it."""
    pitch = np.deg2rad(15.0) if np.linalg.norm(heading[:2]) > 1e-9 else 0.0
    quat = np.zeros(4)
    nose_down = np.array([np.cos(pitch / 2), 0.0, np.sin(pitch / 2), 0.0])
    mujoco.mju_mulQuat(quat, yaw_quat(float(np.arctan2(heading[1], heading[0]))), nose_down)
    data = env.data
    data.qpos[:3], data.qpos[3:7] = position, quat
    data.qvel[:] = 0.0
    data.act[:] = HOVER_COMMAND
    mujoco.mj_forward(env.model, data)


def _hover(env: Any, task: dict) -> None:
    target = np.array(task["target"])
    _pose(env, target + np.array([0.03, -0.02, -0.03]), np.zeros(3))


def _waypoints(env: Any, task: dict) -> None:
    a, b = np.array(task["waypoints"][1]), np.array(task["waypoints"][2])
    _pose(env, a + 0.4 * (b - a), b - a)


def _gates(env: Any, task: dict) -> None:
    gate = np.array(task["gates"][1])
    normal = np.array([np.cos(task["gate_yaw"][1]), np.sin(task["gate_yaw"][1]), 0.0])
    _pose(env, gate - 0.6 * normal, normal)


SHOTS = {"hover": ("DroneHover", _hover), "waypoints": ("DroneWaypoints", _waypoints), "gates": ("DroneGates", _gates)}
"""Picture name -> (task, how to pose the drone from the reset's ``info["task"]``)."""


def render_task_pictures(out_dir: Path, seed: int = 3, width: int = 480, height: int = 360) -> list[Path]:
    """Write ``drone_<task>.png`` for every entry of :data:`SHOTS`; returns the paths."""
    import imageio.v3 as iio

    from sim2real.sim import make

    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for picture, (task_id, pose) in SHOTS.items():
        env = make(task_id, seed=seed, render_mode="rgb_array", width=width, height=height)
        _, info = env.reset()
        pose(env, info["task"])
        path = out_dir / f"drone_{picture}.png"
        iio.imwrite(path, env.frame())
        env.close()
        written.append(path)
    return written


def main() -> None:
    parser = argparse.ArgumentParser(description="Render the drone task pictures for the docs.")
    parser.add_argument("out_dir", type=Path, nargs="?", default=Path("docs/images"))
    parser.add_argument("--seed", type=int, default=3)
    args = parser.parse_args()
    for path in render_task_pictures(args.out_dir, args.seed):
        print(path)


if __name__ == "__main__":
    main()
