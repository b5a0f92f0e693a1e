"""Videos of a policy's episodes: frames from the task camera of one CPU MuJoCo env, as mp4."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from sim2real.policies.common.evaluation import PolicyFn
from sim2real.sim.core.task import Task


def render_episodes(
    policy: PolicyFn,
    task_cls: type[Task],
    episodes: int = 1,
    action_mode: str | None = None,
    dr: Any = "none",
    seed: int = 10_000,
    task_options: dict[str, Any] | None = None,
    width: int = 480,
    height: int = 360,
    max_steps: int | None = None,
) -> tuple[list[np.ndarray], float]:
    """Frames of ``episodes`` episodes from the task camera (each cut at ``max_steps``
    control steps if given) and the frame rate."""
    from sim2real.sim.core.env import SimEnv

    env = SimEnv(
        task_cls,
        action_mode=action_mode,
        dr=dr,
        render_mode="rgb_array",
        width=width,
        height=height,
        seed=seed,
        **(task_options or {}),
    )
    try:
        frames = []
        for ep in range(episodes):
            obs, _ = env.reset(seed=seed + ep)
            frames.append(env.render())
            done, steps = False, 0
            while not done and (max_steps is None or steps < max_steps):
                action = np.asarray(policy(obs[None].astype(np.float32)))[0]
                obs, _, term, trunc, _ = env.step(action)
                frames.append(env.render())
                done, steps = term or trunc, steps + 1
    finally:
        env.close()
    return frames, float(env.metadata["render_fps"])


def write_mp4(path: str | Path, frames: list[np.ndarray], fps: float) -> None:
    """H.264 mp4 of ``frames``, written atomically."""
    import imageio.v3 as iio

    from sim2real.policies.common import atomic

    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    data = iio.imwrite(
        "<bytes>",
        np.stack(frames),
        extension=out.suffix or ".mp4",
        fps=fps,
        codec="libx264",
        macro_block_size=2,  # H.264 needs even sizes only; 16 would rescale 360-pixel frames
    )
    atomic.write_bytes(out, data)


def record_video(policy: PolicyFn, task_cls: type[Task], path: str | Path, **options: Any) -> int:
    """Write an mp4 of the episodes :func:`render_episodes` renders with ``options``;
    returns the frame count."""
    frames, fps = render_episodes(policy, task_cls, **options)
    write_mp4(path, frames, fps)
    return len(frames)
