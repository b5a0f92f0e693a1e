"""Render the arm tasks' pictures for ``docs/robots/arm.md``.

Usage: ``python -m sim2real.sim.arm.pictures docs/images`` (writes ``arm_<task>.png``,
480x360, through the project's env with ``render_mode="rgb_array"``).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np

import sim2real.sim as sim
from sim2real.sim.core.layout import layout_slices

Policy = Callable[[dict[str, np.ndarray]], np.ndarray]


def _blocks(task, obs: np.ndarray) -> dict[str, np.ndarray]:
    return {name: obs[block] for name, block in layout_slices(task.observation_layout()).items()}


def _move(offset: np.ndarray, gripper: float | None) -> np.ndarray:
    """ee_delta action moving the setpoint by ``offset`` (m), at most 1.5 cm per step."""
    step = offset * min(1.0, 0.015 / max(float(np.linalg.norm(offset)), 1e-9))
    action = np.r_[step / 0.05, np.zeros(3)]
    return action if gripper is None else np.r_[action, gripper]


SCENES: dict[str, tuple[str, str, int, Policy]] = {
    # task id, camera, control steps before the picture, scripted ee_delta policy
    "reach": ("ArmReach", "overview", 8, lambda o: _move(0.5 * (o["target_rel_ee"] - o["setpoint_offset"][:3]), 1.0)),
    "push": (
        "ArmPush",
        "overview",
        25,
        lambda o: _move(0.5 * (o["cube_rel_ee"] + [-0.06, 0.0, 0.03] - o["setpoint_offset"][:3]), -1.0),
    ),
    "peg_insert": (
        "ArmPegInsert",
        "workspace",
        12,
        lambda o: _move(0.5 * (o["hole_rel_peg_tip"] + [0.0, 0.0, 0.005] - o["setpoint_offset"][:3]), None),
    ),
    "maze": ("ArmMaze", "workspace", 0, lambda o: np.zeros(6)),
}


def render_all(out_dir: Path, width: int = 480, height: int = 360, seed: int = 1) -> list[Path]:
    import imageio.v2 as imageio

    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for name, (task_id, camera, steps, policy) in SCENES.items():
        env = sim.make(
            task_id,
            action_mode="ee_delta",
            seed=seed,
            render_mode="rgb_array",
            camera=camera,
            width=width,
            height=height,
        )
        obs, _ = env.reset(seed=seed)
        for _ in range(steps):
            obs, _, terminated, truncated, _ = env.step(policy(_blocks(env.task, obs)))
            if terminated or truncated:
                break
        path = out_dir / f"arm_{name}.png"
        imageio.imwrite(path, env.frame())
        env.close()
        written.append(path)
    return written


if __name__ == "__main__":
    for p in render_all(Path(sys.argv[1] if len(sys.argv) > 1 else "docs/images")):
        print(p)
