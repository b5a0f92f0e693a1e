"""The commanded-velocity tracking table of a quadruped velocity policy in our simulator.

For each command of a grid (standing still, forward 0.5 and 1 m/s, backward, sideways,
turning, forward while turning) a batch of episodes holds the command; over each
episode's second half the table gives the achieved body velocity and yaw rate against
the command, the relative error, falls, mechanical power and foot slip. Run it on an
imported policy (`sim2real import`) before a real robot, and under `--dr train` or
`heldout` for where it breaks; `sim2real robustness` sweeps each parameter.

With ``--model FOREIGN.xml`` the policy also runs in another MJCF of the Go2 (MuJoCo
Menagerie's ``unitree_go2/scene.xml``, Unitree's ``unitree_mujoco``) through the
deployment's observation and action path, with the model's own actuators (position
servos get the targets, torque motors the policy's PD at the model's timestep); our
model's rows run the same path beside it (both nominal: no randomization), and each row
adds trunk height, foot clearance, joint torque RMS and cost of transport (docs/transfer.md).
``--latency-steps K`` delays the motors by K control steps in every model, so a model
is compared with ours under the latency a randomized run has; given alone (even as 0) it
runs our model by itself through that path. ``--command VX,VY,WZ`` replaces the grid.

With ``--base-velocity estimated`` the policy observes the robot's own base-velocity
estimate instead of the simulator's truth: the Go2 backend's leg odometry fed each physics
step with the lowstate a Go2 sends (IMU, joints, foot contact forces; its noise and latency
by ``--state-delay-ms``, ``--gyro-noise``, ...), and each row adds the estimate's RMS
horizontal error. It runs through the deployment path above: with ``--model`` in both
models, without it in our model alone (the same nominal rows as ``ours``, no ``--dr``).
With ``--dr`` as well (and no ``--model``) it runs in the batched table instead, under that
randomization: each environment estimates from its own lowstate with the Go2's noise
(the task option ``base_velocity: estimated``, as ``eval`` and ``robustness`` take it).

Examples:
  sim2real sim2sim imported/go2_robot_lab --dr none
  sim2real sim2sim policies/baselines/QuadrupedVelocity --episodes 20 --json
  sim2real sim2sim imported/himloco --video runs/himloco_sim2sim.mp4
  sim2real sim2sim policies/baselines/QuadrupedVelocity --model mujoco_menagerie/unitree_go2/scene.xml
  sim2real sim2sim policies/baselines/QuadrupedVelocity --base-velocity estimated --state-delay-ms 5
  sim2real sim2sim policies/baselines/QuadrupedVelocity --base-velocity estimated --dr heldout
  sim2real sim2sim imported/go2_robot_lab --model unitree_mujoco/unitree_robots/go2/scene.xml \
      --command 0,0,1 --latency-steps 2
"""

from __future__ import annotations

import argparse
from dataclasses import asdict
from pathlib import Path
from typing import Any

from sim2real.commands.base_velocity import add_base_velocity_flag
from sim2real.commands.output import add_json_flag, console, emit_json, stdout


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("policy", help="exported quadruped velocity policy (.onnx or its folder)")
    parser.add_argument("--episodes", type=int, default=20, help="episodes per command")
    parser.add_argument("--seconds", type=float, default=10.0, help="episode length; the second half is measured")
    parser.add_argument("--dr", help="randomization preset (train, heldout, none) or a DR file (default train; "
                                      "not with --model)")
    parser.add_argument("--seed", type=int, default=30_000)
    parser.add_argument("--command", action="append", dest="held_commands", metavar="VX,VY,WZ",
                        help="hold this command (m/s, m/s, rad/s) instead of the grid; repeat for more rows")
    parser.add_argument("--latency-steps", type=int, metavar="K",
                        help="control steps between the policy's action and the motors, in every model, through "
                             "the deployment path (as --model runs it; given, even as 0, it selects that path; "
                             "with --dr the preset's own latency applies)")
    parser.add_argument("--video", metavar="PATH", help="also write an mp4: one episode per command, in the "
                                                        "table's order")
    parser.add_argument("--video-seconds", type=float, default=4.0, help="seconds of each command in the video")
    parser.add_argument("--model", metavar="XML", help="also run in this foreign MJCF of the robot (a scene with "
                                                       "a floor), our model's rows beside it")
    parser.add_argument("--joint-map", metavar="MAP", help="with --model: our joint names -> the model's, "
                                                           "'FR_hip_joint=fr_hip,...' or a YAML/JSON file; "
                                                           "unnamed joints keep our names")
    parser.add_argument("--base-body", metavar="BODY", help="with --model: the trunk body (default: the free "
                                                            "joint's body)")
    add_base_velocity_flag(parser, "true", "through the deployment path (see above); with --dr, in the "
                                           "batched engine under that randomization")
    for flag, name, unit in (("--state-delay-ms", "delay_ms", "ms"), ("--gyro-noise", "gyro_noise", "rad/s"),
                             ("--accel-noise", "accel_noise", "m/s^2"), ("--joint-noise", "joint_noise", "rad"),
                             ("--joint-vel-noise", "joint_vel_noise", "rad/s")):
        parser.add_argument(flag, dest=name, type=float, metavar=unit.upper().replace("/", "_").replace("^", ""),
                            help=f"with --base-velocity estimated: lowstate {flag[2:].replace('-', ' ')} ({unit}; "
                                 "noise: a standard deviation; default near a real Go2's, docs/transfer.md)")
    parser.add_argument("--contact-threshold", type=float, metavar="N",
                        help="with --base-velocity estimated: foot force (N) above which the estimator counts a "
                             "foot as standing (default: the Go2 backend's)")
    add_json_flag(parser)


LOWSTATE_FLAGS = ("delay_ms", "gyro_noise", "accel_noise", "joint_noise", "joint_vel_noise", "contact_threshold")


def run(args: argparse.Namespace) -> int:
    from rich.table import Table

    from sim2real.policies.deploy import OnnxPolicy
    from sim2real.policies.studies.tracking import GRID, as_dicts, parse_command, tracking_table, tracking_video
    from sim2real.sim.core.errors import ConfigError

    if args.episodes < 1 or not args.seconds > 0 or not args.video_seconds > 0:
        raise ConfigError("--episodes/--seconds", "need at least 1 episode and positive lengths")
    if args.latency_steps is not None and args.latency_steps < 0:
        raise ConfigError("--latency-steps", f"must be 0 or more control steps, got {args.latency_steps}")
    args.grid = tuple(parse_command(c) for c in args.held_commands) if args.held_commands else GRID
    policy = OnnxPolicy(args.policy)
    if policy.metadata["robot"] != "quadruped" or "QuadrupedVelocity" not in policy.task:
        raise ConfigError("policy", f"{args.policy} is a {policy.task} policy; the table is for QuadrupedVelocity")
    lowstate_flags = any(getattr(args, k) is not None for k in LOWSTATE_FLAGS)
    if args.base_velocity != "estimated" and lowstate_flags:
        raise ConfigError("--state-delay-ms/--gyro-noise/...", "only with --base-velocity estimated")
    if args.model or args.latency_steps is not None or (args.base_velocity == "estimated" and args.dr is None):
        return run_foreign(args, policy)
    if args.joint_map or args.base_body:
        raise ConfigError("--joint-map/--base-body", "only with --model")
    if lowstate_flags:
        raise ConfigError("--state-delay-ms/--gyro-noise/...", "the deployment path's (without --dr); with --dr "
                                                                "the batched engine's estimate has the Go2's own noise")
    args.dr = args.dr or "train"
    # With --dr and the estimate: the batched engine under randomization, each environment
    # estimating from its own lowstate (sim/quadruped/onboard.py).
    estimated = {"base_velocity": "estimated"} if args.base_velocity == "estimated" else {}
    with console.status("tracking") as status:
        rows = tracking_table(policy, args.episodes, args.seconds, args.dr, args.seed,
                              on_row=lambda name: status.update(f"tracking: {name}"), task_options=estimated,
                              grid=args.grid)
        if args.video:
            status.update("rendering the video")
            tracking_video(policy, args.video, args.video_seconds, dr=args.dr, seed=args.seed, grid=args.grid)
    if args.json:
        emit_json({"policy": str(policy.path), "dr": args.dr, "episodes": args.episodes, "rows": as_dicts(rows),
                   "base_velocity": args.base_velocity, "video": args.video})
        return 0
    seen = ", on its estimated base velocity" if estimated else ""
    table = Table(title=f"{policy.path} under dr={args.dr}{seen}, {args.episodes} episodes of {args.seconds:g} s "
                        "per command")
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


def lowstate_configs(args: argparse.Namespace) -> tuple[Any, Any]:
    """(LowstateConfig, EstimatorConfig) of the flags, or (None, None) for the true velocity."""
    from dataclasses import replace

    from sim2real.sim.quadruped.estimator import EstimatorConfig
    from sim2real.sim.quadruped.lowstate import LowstateConfig

    if args.base_velocity != "estimated":
        return None, None
    given = {k: getattr(args, k) for k in LOWSTATE_FLAGS[:-1] if getattr(args, k) is not None}
    estimator = EstimatorConfig()
    if args.contact_threshold is not None:
        estimator = replace(estimator, contact_threshold=args.contact_threshold)
    return LowstateConfig(**given), estimator


def run_foreign(args: argparse.Namespace, policy: Any) -> int:
    """The table in our model and the foreign ``--model``, side by side (without --model:
    our model alone, through the same deployment path)."""
    from rich.table import Table

    from sim2real.policies.studies.foreign_tracking import foreign_tracking_table, our_model, policy_gains
    from sim2real.ros_nodes.robots import ObservationBuilder, make_task
    from sim2real.sim.core.errors import ConfigError
    from sim2real.sim.quadruped.foreign import ForeignQuadruped, parse_joint_map

    if args.dr is not None or args.video:
        raise ConfigError("--dr/--video", "not with --model, --latency-steps, or --base-velocity estimated without "
                                          "--dr: the deployment path runs the models as given, without randomization")
    if not args.model and (args.joint_map or args.base_body):
        raise ConfigError("--joint-map/--base-body", "only with --model")
    lowstate, estimator = lowstate_configs(args)
    models = [("ours", our_model(policy))]
    if args.model:
        kp, kd = policy_gains(policy)
        models.append((Path(args.model).name, ForeignQuadruped.from_file(
            args.model, policy.control_dt, kp, kd, parse_joint_map(args.joint_map), args.base_body)))
    options = dict(policy.metadata.get("task_options") or {})
    # The policy node's own checks and observation builder: the layout must be the trained one.
    policy.check_observation_layout(make_task(policy.task, policy.action_mode, options).observation_layout())

    def make_source() -> ObservationBuilder:
        return ObservationBuilder("quadruped", make_task(policy.task, policy.action_mode, options), policy.action_size)

    latency_steps = args.latency_steps or 0  # given or not, the deployment path here
    with console.status("tracking") as status:
        rows = foreign_tracking_table(policy, models, make_source, args.episodes, args.seconds, args.seed,
                                      on_row=lambda row: status.update(f"tracking: {row}"), lowstate=lowstate,
                                      estimator=estimator, grid=args.grid, latency_steps=latency_steps)
    drives = {model: {"drive": robot.drive.describe(robot.kp, robot.kd), "timestep_s": robot.model.opt.timestep,
                      "decimation": robot.decimation} for model, robot in models}
    observed = "true" if lowstate is None else {"estimated": {**asdict(lowstate), **asdict(estimator)}}
    if args.json:
        emit_json({"policy": str(policy.path), "model": args.model and str(args.model), "episodes": args.episodes,
                   "seconds": args.seconds, "seed": args.seed, "base_velocity": observed,
                   "latency_steps": latency_steps, "models": drives,
                   "rows": [asdict(r) for r in rows]})
        return 0
    where = f"in our model and {args.model}" if args.model else "in our model (deployment path)"
    seen = "true base velocity" if lowstate is None else "estimated base velocity"
    delay = f", the motors {args.latency_steps} control steps behind" if args.latency_steps else ""
    table = Table(title=f"{policy.path} {where}, {args.episodes} episodes of {args.seconds:g} s per command, "
                        f"no randomization{delay}, {seen}")
    columns = ["command", "model", "achieved vx, vy, yaw rate", "error", "falls", "stalled", "trunk m", "clearance m",
               "torque RMS Nm (knee max)", "power W", "CoT", "foot slip m/s"]
    for col in columns + ([] if lowstate is None else ["estimate err m/s"]):
        table.add_column(col)
    for r in rows:
        err = "-" if r.relative_error is None else f"{100 * r.relative_error:.1f} %"
        clearance = "-" if r.foot_clearance_m is None else f"{r.foot_clearance_m:.3f}"
        cells = [r.command, r.model, ", ".join(f"{x:+.3f}" for x in r.achieved), err, f"{r.falls}/{r.episodes}",
                 str(r.stalled),
                 f"{r.trunk_height_m:.3f}", clearance, f"{r.torque_rms_nm:.1f} ({r.knee_torque_rms_max_nm:.1f})",
                 f"{r.power_w:.0f}", "-" if r.cost_of_transport is None else f"{r.cost_of_transport:.2f}",
                 f"{r.foot_slip_m_s:.3f}"]
        if lowstate is not None:
            cells.append("-" if r.estimate_error_m_s is None else f"{r.estimate_error_m_s:.3f}")
        table.add_row(*cells)
    stdout.print(table)
    for model, info in drives.items():
        stdout.print(f"{model}: {info['drive']}, timestep {info['timestep_s'] * 1e3:g} ms, "
                     f"decimation {info['decimation']}")
    return 0
