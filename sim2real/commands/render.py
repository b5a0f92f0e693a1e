"""Render a picture (PNG) or a short video (MP4) of a task from its camera."""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from sim2real.commands.output import console


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("task", help="task name, e.g. ArmReach or sim2real/ArmReach-v0")
    parser.add_argument("--out", required=True, type=Path, help="output .png (one frame) or .mp4 (a rollout)")
    parser.add_argument("--camera", help="camera name (default: the task's)")
    parser.add_argument("--seconds", type=float, default=3.0, help="video length (mp4 only)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--width", type=int, default=480)
    parser.add_argument("--height", type=int, default=360)
    parser.add_argument(
        "--steps-before",
        type=int,
        default=0,
        help="zero-action control steps before the picture (lets the scene settle)",
    )


def run(args: argparse.Namespace) -> int:
    import imageio.v3 as iio

    from sim2real.sim import make

    env = make(args.task, render_mode="rgb_array", camera=args.camera, width=args.width, height=args.height)
    env.reset(seed=args.seed)
    zero = np.zeros(env.action_space.shape)
    for _ in range(args.steps_before):
        env.step(zero)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    if args.out.suffix.lower() == ".png":
        iio.imwrite(args.out, env.frame())
    else:
        fps = env.metadata["render_fps"]
        frames = [env.frame()]
        for _ in range(int(args.seconds * fps)):
            _, _, term, trunc, _ = env.step(zero)
            frames.append(env.frame())
            if term or trunc:
                break
        iio.imwrite(args.out, np.stack(frames), fps=fps, codec="libx264")
    console.print(f"wrote {args.out}")
    return 0
