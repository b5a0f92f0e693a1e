"""Pictures of the hierarchy on held-out confined courses: the planned path and the
path the robot's trunk took, seen from the top (walls and blocks) and the side
(ceilings, the heights the planner allows and the trunk's height), one PNG per course,
with any other controllers of ``benchmarks/hierarchy.py`` drawn on the same course.

    python benchmarks/hierarchy_pictures.py --follower policies/baselines/QuadrupedWaypoints \\
        --velocity policies/baselines/QuadrupedVelocity --courses 4 --out docs/images/hierarchy
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from hierarchy import SEED, Controller, velocity_on_the_path

import sim2real.sim as S
from sim2real.policies.deploy import OnnxPolicy
from sim2real.sim.quadruped import constants as c
from sim2real.sim.quadruped import layouts
from sim2real.sim.quadruped.waypoints import Waypoints

COLOURS = {"hierarchy": "tab:blue", "velocity_pursuit": "tab:orange", "end_to_end": "tab:green"}


def trajectory(controller: Controller, options: dict[str, Any], seed: int) -> tuple[Any, np.ndarray, np.ndarray, bool]:
    """One episode on the course of ``seed``: (layout, waypoints, trunk positions [T, 3], success)."""
    env = S.make("QuadrupedWaypoints", seed=seed, action_mode="gait_residual", **options)
    obs, _ = env.reset(seed=seed)
    task = env.task
    assert isinstance(task, Waypoints)
    layout, waypoints = task.layouts[0], task.waypoints[0].copy()
    path, success = [env.data.qpos[:3].copy()], False
    while True:
        obs, _, terminated, truncated, info = env.step(np.asarray(controller(obs[None].astype(np.float32)))[0])
        path.append(env.data.qpos[:3].copy())
        if terminated or truncated:
            success = bool(info["is_success"])
            break
    env.close()
    return layout, waypoints, np.array(path), success


def draw(course: int, runs: dict[str, tuple[Any, np.ndarray, np.ndarray, bool]], out: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle

    layout, waypoints, _, _ = next(iter(runs.values()))
    fig, (top, side) = plt.subplots(2, 1, figsize=(11, 6.5), sharex=True, gridspec_kw={"height_ratios": [3, 2]})
    for xmin, xmax, ymin, ymax in layout.wall_boxes():
        top.add_patch(Rectangle((xmin, ymin), xmax - xmin, ymax - ymin, color="0.55"))
    top.plot(waypoints[:, 0], waypoints[:, 1], "k.--", lw=0.8, ms=4, label="planned waypoints")
    for cx, z in layout.ceilings:
        half = layouts.PIECE_LENGTH / 2
        side.add_patch(Rectangle((cx - half, z), 2 * half, 0.05, color="tab:cyan", alpha=0.7))
        top.add_patch(Rectangle((cx - half, -layouts.CORRIDOR_HALF_WIDTH), 2 * half, 2 * layouts.CORRIDOR_HALF_WIDTH,
                                color="tab:cyan", alpha=0.12))
    side.plot(waypoints[:, 0], waypoints[:, 2] + c.TRUNK_HALF_HEIGHT, "k.--", lw=0.8, ms=4,
              label="the planner's allowed trunk top")
    for name, (_, _, path, success) in runs.items():
        label = f"{name} ({'reached the goal' if success else 'failed'})"
        top.plot(path[:, 0], path[:, 1], color=COLOURS.get(name, "tab:red"), lw=1.5, label=label)
        side.plot(path[:, 0], path[:, 2] + c.TRUNK_HALF_HEIGHT, color=COLOURS.get(name, "tab:red"), lw=1.5)
    top.set_xlim(-0.5, float(layout.goal[0]) + 0.7)
    top.set_ylim(-layouts.CORRIDOR_HALF_WIDTH, layouts.CORRIDOR_HALF_WIDTH)
    top.set_ylabel("y (m)")
    top.legend(loc="upper left", fontsize=7, ncol=2)
    top.set_title(f"held-out course {course} (seed {SEED + course}): top view; blue bands: low ceilings")
    side.set_ylim(0.0, 0.45)
    side.set_xlabel("x (m)")
    side.set_ylabel("trunk top (m)")
    side.set_title("side view: ceilings (cyan), the planner's allowed trunk top (dashed), the trunk's top")
    fig.tight_layout()
    path = out / f"course_{course}.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--follower", required=True, help="the hierarchy's exported follower")
    parser.add_argument("--velocity", help="also the velocity policy steered by pure pursuit")
    parser.add_argument("--courses", type=int, default=4)
    parser.add_argument("--out", type=Path, default=Path("docs/images/hierarchy"))
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    follower = OnnxPolicy(args.follower)
    course_options = {"num_sections": 3, "section_kinds": list(layouts.SECTION_KINDS)}
    controllers: dict[str, tuple[Controller, dict[str, Any]]] = {
        "hierarchy": (follower, {**(follower.metadata.get("task_options") or {}), **course_options})}
    if args.velocity:
        velocity = OnnxPolicy(args.velocity)
        layout = S.make("QuadrupedWaypoints", action_mode="gait_residual").task.observation_layout()
        controllers["velocity_pursuit"] = (velocity_on_the_path(velocity, layout),
                                           {**(velocity.metadata.get("task_options") or {}), **course_options,
                                            "reference_crouch": False})
    for course in range(args.courses):
        runs = {name: trajectory(ctl, options, SEED + course) for name, (ctl, options) in controllers.items()}
        print(draw(course, runs, args.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
