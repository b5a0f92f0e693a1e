"""Render the docs pictures of the quadruped tasks through the project's envs.

    python -m sim2real.sim.quadruped.pictures docs/images

Each picture is the task's default camera after one second of standing (servo
targets at the default pose plus the static knee offset), 480 x 360.
"""

from __future__ import annotations

import sys
from pathlib import Path

PICTURES: dict[str, tuple[int, dict]] = {
    # task name: (seed, task options), seeds chosen for a representative scene
    "velocity": (0, {}),
    "velocity_rough": (4, {"difficulty": 0.8}),
    "waypoints": (3, {"show_waypoints": True}),
}


def render(out_dir: Path, width: int = 480, height: int = 360) -> list[Path]:
    import imageio.v2 as imageio

    import sim2real.sim as s2r
    from sim2real.sim.quadruped import constants as c

    out_dir.mkdir(parents=True, exist_ok=True)
    stand = c.static_knee_offset() / c.ACTION_SCALE
    written = []
    for task, (seed, options) in PICTURES.items():
        env = s2r.make(f"quadruped/{task}", seed=seed, render_mode="rgb_array", width=width, height=height, **options)
        env.reset(seed=seed)
        for _ in range(int(1.0 / c.CONTROL_DT)):
            env.step(stand)
        path = out_dir / f"quadruped_{task}.png"
        imageio.imwrite(path, env.frame())
        env.close()
        written.append(path)
    return written


if __name__ == "__main__":
    for p in render(Path(sys.argv[1] if len(sys.argv) > 1 else "docs/images")):
        print(p)
