"""System identification: fit the simulator's physical parameters to a recorded run.

Reads an MCAP bag written by the recorder (`sim2real deploy --record DIR`, or a real
robot's `ros2 bag record` of the same topics: joint_states and/or odom, and command),
replays the recorded commands from recorded states in short windows, and fits the
parameters by CMA-ES on the state-prediction error, for each command latency (whole
control steps). Prints the fit and the prediction error before and after, and writes a
randomization file centred on the fit, for `--dr FILE` in `train`, `eval` and the sim
bridge's `dr` parameter.

Parameters: mass, friction, motor_strength, kp_scale (position-servo gains), thrust
(the drone's thrust coefficient), latency. Robots: the quadruped (joint targets) and the
drone (collective thrust and body rates; the state nobody records, its rotor thrusts and
rate controller, settles on the recording before each window is scored). Defaults:
mass,kp_scale,friction,latency for the quadruped, mass,thrust,latency for the drone.

Examples:
  sim2real deploy --robot quadruped --duration 30 --record bags/walk
  sim2real sysid bags/walk --robot quadruped --params mass,kp_scale,friction,latency --out fitted.yaml
  sim2real eval policies/baselines/QuadrupedVelocity/policy.onnx --dr fitted.yaml
"""

from __future__ import annotations

import argparse
from pathlib import Path

from sim2real.commands.output import add_json_flag, console, emit_json, stdout


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("bag", type=Path, help="bag folder or .mcap file")
    parser.add_argument("--robot", required=True, choices=["quadruped", "drone"], help="the recorded robot")
    parser.add_argument("--params", default="",
                        help="comma-separated parameters to fit (default: the robot's, see above)")
    parser.add_argument("--task", default="", help="task whose scene the robot ran in (default: the robot's)")
    parser.add_argument("--action-mode", default="", help="the policy's action mode (default: the robot's)")
    parser.add_argument("--window", type=float, default=0.5, help="s, length of each replayed window")
    parser.add_argument("--windows", type=int, default=32, help="most windows used, spread over the run")
    parser.add_argument("--max-latency", type=int, default=3, help="largest latency tried, control steps")
    parser.add_argument("--iterations", type=int, default=40, help="CMA-ES generations per latency")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=Path("fitted.yaml"), help="randomization file to write")
    add_json_flag(parser)


def run(args: argparse.Namespace) -> int:
    import yaml

    from sim2real.policies.common import atomic
    from sim2real.policies.sysid.fit import DEFAULT_PARAMS, Replay, fit, fitted_preset
    from sim2real.policies.sysid.recording import read_recording
    from sim2real.sim import robot_deployment
    from sim2real.sim.core.errors import ConfigError

    names = [p.strip() for p in (args.params or DEFAULT_PARAMS[args.robot]).split(",") if p.strip()]
    if not names:
        raise ConfigError("--params", "name at least one parameter")
    if args.window <= 0 or args.windows < 2 or args.iterations < 1 or not 0 <= args.max_latency <= 10:
        raise ConfigError("--window", "--window > 0, --windows >= 2, --iterations >= 1, --max-latency in [0, 10]")
    max_latency = args.max_latency if "latency" in names else 0
    continuous = [n for n in names if n != "latency"]
    info = robot_deployment(args.robot)
    rec = read_recording(args.bag, info.joints, info.floating_base)
    probe_dt = _control_dt(args)
    replay = Replay(args.robot, args.task, args.action_mode, rec, max(1, round(args.window / probe_dt)),
                    args.windows, batch=8, max_latency=max_latency)
    try:
        with console.status("fitting") as status:
            result = fit(replay, continuous, max_latency, args.iterations, args.seed,
                         on_generation=lambda lat, loss: status.update(f"fitting: latency {lat}, error {loss:.4g}"))
        preset = fitted_preset(replay.dr_class, result)
    finally:
        replay.close()
    atomic.write_text(args.out, "# sim2real sysid " + str(args.bag) + ": randomization centred on the fit\n"
                      + yaml.safe_dump(preset, sort_keys=False))
    out = {"bag": str(args.bag), "robot": args.robot, "seconds_recorded": round(rec.duration, 2), **result.to_dict(),
           "fitted_file": str(args.out), "fitted_preset": preset}
    if args.json:
        emit_json(out)
        return 0
    _print(out)
    return 0


def _control_dt(args: argparse.Namespace) -> float:
    from sim2real.sim import robot_deployment
    from sim2real.sim.core.registry import REGISTRY

    info = robot_deployment(args.robot)
    return float(REGISTRY.get(args.task or info.task).control_dt)


def _print(out: dict) -> None:
    from rich.table import Table

    table = Table(title=f"sim2real sysid {out['bag']} ({out['robot']}, {out['seconds_recorded']} s, "
                        f"{out['windows']} windows of {out['window_steps']} steps)")
    table.add_column("parameter")
    table.add_column("fitted")
    for name, value in out["params"].items():
        table.add_row(name, f"{value:g}" + (" control steps" if name == "latency" else " x nominal"))
    stdout.print(table)
    errors = Table(title="prediction error (RMS over the windows)")
    for col in ("quantity", "nominal", "fitted"):
        errors.add_column(col)
    for key, before in out["rms_nominal"].items():
        if before > 0:
            errors.add_row(key, f"{before:.4g}", f"{out['rms_fitted'][key]:.4g}")
    errors.add_row("scaled loss", f"{out['loss_nominal']:.4g}", f"{out['loss_fitted']:.4g}")
    stdout.print(errors)
    if not out["converged"]:
        stdout.print(f"[yellow]CMA-ES did not converge within --iterations (residual {out['loss_fitted']:.4g}); "
                     "the fit may improve with more[/yellow]")
    stdout.print(f"wrote {out['fitted_file']} (use: --dr {out['fitted_file']})")
