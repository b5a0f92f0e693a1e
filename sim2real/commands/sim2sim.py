"""The commanded-velocity tracking table of a quadruped velocity policy in our simulator.

For each command of a grid (standing still, forward 0.5 and 1 m/s, backward, sideways,
turning, forward while turning) a batch of episodes holds the command; over each
episode's second half the table gives the achieved body velocity and yaw rate against
the command, the relative error, falls, mechanical power and foot slip. Run it on an
imported policy (`sim2real import`) before a real robot, and under `--dr train` or
`heldout` for where it breaks; `sim2real robustness` sweeps each parameter.

Examples:
  sim2real sim2sim imported/go2_robot_lab --dr none
  sim2real sim2sim policies/baselines/QuadrupedVelocity --episodes 20 --json
  sim2real sim2sim imported/himloco --video runs/himloco_sim2sim.mp4
"""

from __future__ import annotations

import argparse

from sim2real.commands.output import add_json_flag, console, emit_json, stdout


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("policy", help="exported quadruped velocity policy (.onnx or its folder)")
    parser.add_argument("--episodes", type=int, default=20, help="episodes per command")
    parser.add_argument("--seconds", type=float, default=10.0, help="episode length; the second half is measured")
    parser.add_argument("--dr", default="train", help="randomization preset (train, heldout, none) or a DR file")
    parser.add_argument("--seed", type=int, default=30_000)
    parser.add_argument("--video", metavar="PATH", help="also write an mp4: one episode per command, in the "
                                                        "table's order")
    parser.add_argument("--video-seconds", type=float, default=4.0, help="seconds of each command in the video")
    add_json_flag(parser)


def run(args: argparse.Namespace) -> int:
    from rich.table import Table

    from sim2real.policies.deploy import OnnxPolicy
    from sim2real.policies.studies.tracking import as_dicts, tracking_table, tracking_video
    from sim2real.sim.core.errors import ConfigError

    if args.episodes < 1 or not args.seconds > 0 or not args.video_seconds > 0:
        raise ConfigError("--episodes/--seconds", "need at least 1 episode and positive lengths")
    policy = OnnxPolicy(args.policy)
    if policy.metadata["robot"] != "quadruped" or "QuadrupedVelocity" not in policy.task:
        raise ConfigError("policy", f"{args.policy} is a {policy.task} policy; the table is for QuadrupedVelocity")
    with console.status("tracking") as status:
        rows = tracking_table(policy, args.episodes, args.seconds, args.dr, args.seed,
                              on_row=lambda name: status.update(f"tracking: {name}"))
        if args.video:
            status.update("rendering the video")
            tracking_video(policy, args.video, args.video_seconds, dr=args.dr, seed=args.seed)
    if args.json:
        emit_json({"policy": str(policy.path), "dr": args.dr, "episodes": args.episodes, "rows": as_dicts(rows),
                   "video": args.video})
        return 0
    table = Table(title=f"{policy.path} under dr={args.dr}, {args.episodes} episodes of {args.seconds:g} s per command")
    for col in ("command", "achieved vx, vy, yaw rate", "error", "falls", "power W", "foot slip m/s"):
        table.add_column(col)
    for r in rows:
        err = "-" if r.relative_error is None else f"{100 * r.relative_error:.1f} %"
        table.add_row(r.command, ", ".join(f"{x:+.3f}" for x in r.achieved), err, f"{r.falls}/{r.episodes}",
                      f"{r.power_w:.0f}", f"{r.foot_slip_m_s:.3f}")
    stdout.print(table)
    if args.video:
        stdout.print(f"video: {args.video}")
    return 0
