"""Robustness curves: success as each physical parameter moves beyond its training range.

For each axis (a field of the robot's randomization), the policy, its task's reference
controller (a residual policy's PID or trot with a zero residual; else the robot's
classical controller) and, where the robot has one, its oracle (a model-based controller
told each episode's true parameters: the drone's PID with the true mass and thrust) run
with the same seeds at constant values from the middle of the training range to two
half-widths beyond its edge (magnitudes trained from zero: to three times their top),
the rest nominal; then every axis widened together x1 (the training ranges), x2 and x3;
with a task's tracking error where it has one (a robot that slows down may still succeed);
then the old held-out preset (the stress test). With an oracle it also finds the
feasible held-out preset (each axis as far as the oracle still succeeds in 95 percent of
episodes) and the policy's transfer ratio there (its success over the oracle's; target
0.9). Writes robustness.json and robustness.png into --out; success comes with its 95
percent Wilson interval. Axes the robot's training does not randomize are listed as skipped.

Model-error axes (--axes damping,condim,... or --axes model for all) sweep what a model
may get wrong instead of a trained range, at explicit values: the quadruped's joint
damping (0.05 to 2 N m s/rad, public Go2 models' range), joint friction, armature, foot
radius, foot contact condim 3/4/6, torsional and rolling friction (at condim 6), the
friction cone (pyramidal or elliptic) and impratio (at a quarter of the physics step, which
it needs), contact softness (foot sinkage) and the motors' torque-speed limit. They run
only when named and are not widened into the combined points or the feasible preset.

--sim2sim runs the sim-to-sim check instead: the policy and its reference under the
training randomization, on the same episodes, with the task's own simulator settings and
with RK4, the implicit integrator, half the physics timestep, contacts twice as soft, and
all three together; it writes sim2sim.json with each one's change in success.

POLICY is an exported policy: its .onnx, metadata .json or folder (such as
policies/baselines/DroneHover).

--ray [ADDR] evaluates the points as Ray tasks, one CPU each (a local Ray instance, or
the cluster at ADDR), each loading the policy from its file: the same figures, since
every point runs with controllers of its own and its own seeds.

Examples:
  sim2real robustness policies/baselines/DroneHover --out runs/robust-hover
  sim2real robustness policies/baselines/ArmReach --axes mass,latency,obs_noise --episodes 32 --json
  sim2real robustness policies/baselines/QuadrupedVelocity --sim2sim --episodes 100
  sim2real robustness policies/baselines/QuadrupedVelocity --axes damping,condim --episodes 16
  sim2real robustness policies/baselines/DroneHover --episodes 256 --ray 10.0.0.5:6379
"""

from __future__ import annotations

import argparse
from pathlib import Path

from sim2real.commands.base_velocity import add_base_velocity_flag, base_velocity_options
from sim2real.commands.output import add_json_flag, console, emit_json, stdout
from sim2real.policies.common.cluster import add_ray_flag


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from sim2real.policies.studies.robustness import AXES, MODEL, all_model_axes

    model = "; ".join(f"the {robot}'s {','.join(names)}" for robot, names in all_model_axes().items())
    parser.add_argument("policy", type=Path, help="exported policy (.onnx, its .json or folder)")
    parser.add_argument("--axes", help=f"comma-separated axes (default: all the robot trains on): {','.join(AXES)}; "
                                       f"model-error axes, run only when named ('{MODEL}': all of the robot's): "
                                       f"{model}")
    parser.add_argument("--episodes", type=int, default=64, help="episodes per point and controller")
    parser.add_argument("--feasible-episodes", type=int, help="episodes on the feasible held-out preset, where the "
                                                                 "transfer ratio is measured (default: --episodes)")
    parser.add_argument("--n-envs", type=int, default=16, help="environments stepped as one batch")
    parser.add_argument("--seed", type=int, default=20_000, help="seed of the evaluation episodes")
    parser.add_argument("--out", type=Path, help="folder for robustness.json and robustness.png (default: "
                                                  "runs/robustness-<task>)")
    add_base_velocity_flag(parser)
    parser.add_argument("--sim2sim", action="store_true",
                        help="only the sim-to-sim check (other integrators, a finer timestep, softer contacts)")
    add_ray_flag(parser, "the points")
    add_json_flag(parser)


def run(args: argparse.Namespace) -> int:
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    from sim2real.policies.classical import ORACLES
    from sim2real.policies.common import atomic
    from sim2real.policies.deploy import OnnxPolicy
    from sim2real.policies.studies import robustness_runs as R
    from sim2real.policies.studies.robustness_plot import plot_study
    from sim2real.sim.core.errors import ConfigError
    from sim2real.sim.core.registry import REGISTRY

    if args.episodes < 1 or args.n_envs < 1 or (args.feasible_episodes is not None and args.feasible_episodes < 1):
        raise ConfigError("--episodes", "--episodes, --feasible-episodes and --n-envs must be >= 1")
    names = [a.strip() for a in args.axes.split(",") if a.strip()] if args.axes else None
    policy = OnnxPolicy(args.policy)
    task_cls = REGISTRY.get(policy.task)
    train = task_cls.dr_class.train()
    total = len(R.SIM2SIM) if args.sim2sim else R.point_count(train, names, task_cls.robot in ORACLES)
    out = args.out or Path("runs") / f"robustness-{policy.task.split('/')[-1].removesuffix('-v0')}"
    with Progress(TextColumn("{task.description}"), BarColumn(), TextColumn("{task.completed}/{task.total} points"),
                  TimeElapsedColumn(), console=console) as progress:
        bar = progress.add_task("robustness", total=total)

        def advance(label: str) -> None:
            progress.update(bar, advance=1, description=f"robustness: {label}")

        if args.sim2sim:
            return _sim2sim(R.sim2sim(policy, args.episodes, args.n_envs, args.seed, on_point=advance,
                                      ray_address=args.ray, task_options=base_velocity_options(args)), out, args.json)
        study = R.study(policy, names, args.episodes, args.n_envs, args.seed, on_point=advance,
                        feasible_episodes=args.feasible_episodes, ray_address=args.ray,
                        task_options=base_velocity_options(args))
    out.mkdir(parents=True, exist_ok=True)
    atomic.write_json(out / "robustness.json", study)
    study["png"] = str(plot_study(study, out / "robustness.png"))
    study["json_file"] = str(out / "robustness.json")
    if args.json:
        emit_json(study)
        return 0
    _print(study)
    return 0


def _print(study: dict) -> None:
    from rich.table import Table

    who = list(study["controllers"])
    table = Table(title=f"robustness of {study['policy']} ({study['task']})")
    for col in ("axis", "training range", "value", *(f"{w} success" for w in who), "policy tracking errors"):
        table.add_column(col)
    for name, curve in study["axes"].items():
        trained = f"{curve['train_range'][0]:g}-{curve['train_range'][1]:g}" if curve["train_range"] else "-"
        for p in curve["points"]:
            table.add_row(name, trained, f"{p['value']:g}", *(_rate(p[w]) for w in who), _tracking(p["policy"]))
    for p in study["combined"]:
        table.add_row("combined", "x1 = training", f"x{p['factor']:g}", *(_rate(p[w]) for w in who),
                      _tracking(p["policy"]))
    table.add_row("held-out preset", "", "", *(_rate(study["heldout"][w]) for w in who),
                  _tracking(study["heldout"]["policy"]))
    if study["feasible"] is not None:
        table.add_row("feasible held-out", "", "", *(_rate(study["feasible"][w]) for w in who),
                      _tracking(study["feasible"]["policy"]))
    stdout.print(table)
    for name, why in study["skipped_axes"].items():
        stdout.print(f"skipped {name}: {why}")
    if study["transfer_ratio"] is not None:
        stdout.print(f"feasible held-out preset: {study['feasible_preset']}")
        stdout.print(f"transfer ratio {study['transfer_ratio']:.2f} ({study['transfer_note']})")
    else:
        stdout.print(f"transfer ratio: not computed ({study['transfer_note']})")
    stdout.print(f"wrote {study['json_file']} and {study['png']}")


def _sim2sim(check: dict, out: Path, as_json: bool) -> int:
    from rich.table import Table

    from sim2real.policies.common import atomic

    out.mkdir(parents=True, exist_ok=True)
    atomic.write_json(out / "sim2sim.json", check)
    check["json_file"] = str(out / "sim2sim.json")
    if as_json:
        emit_json(check)
        return 0
    table = Table(title=f"sim-to-sim check of {check['policy']} ({check['task']}, training randomization)")
    for col in ("simulator", "policy success", "change", "reference success", "change"):
        table.add_column(col)
    for row in check["sim2sim"]:
        p, r = row["policy"], row["reference"]
        table.add_row(row["simulator"], _rate(p), f"{p['change']:+.2f}", _rate(r), f"{r['change']:+.2f}")
    stdout.print(table)
    stdout.print(f"wrote {check['json_file']}")
    return 0


def _tracking(r: dict) -> str:
    """The task's mean tracking errors (its ``*_error`` metrics), or "-"."""
    errors = {k: v for k, v in (r.get("metrics_mean") or {}).items() if k.endswith("_error")}
    return ", ".join(f"{k.removesuffix('_error').removesuffix('_tracking')} {v:.3f}" for k, v in errors.items()) or "-"


def _rate(r: dict) -> str:
    return f"{r['success_rate']:.2f} [{r['ci_low']:.2f}, {r['ci_high']:.2f}]"
