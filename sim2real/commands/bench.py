"""Benchmarks. `sim2real bench sim`: simulation throughput against the raw physics limit and Gymnasium Ant-v5."""

from __future__ import annotations

import argparse

from sim2real.commands.output import add_json_flag, console, emit_json, stdout


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="which", metavar="BENCH", required=True)
    p = sub.add_parser(
        "sim", help="env steps/s: single env, batched env, raw rollout limit, Ant-v5 peer", description=__doc__
    )
    p.add_argument("--seconds", type=float, default=3.0, help="measurement window per figure")
    p.add_argument("--num-envs", type=int, default=64, help="batch size of the batched env and the raw limit")
    p.add_argument(
        "--robot", action="append", choices=["arm", "quadruped", "drone"], help="robot(s) to measure (default: all)"
    )
    add_json_flag(p)


def run(args: argparse.Namespace) -> int:
    if args.which == "sim":
        return _run_sim(args)
    return 2


def _run_sim(args: argparse.Namespace) -> int:
    from rich.table import Table

    from sim2real.bench.sim import run_sim_bench

    with console.status("benchmarking") as status:
        report = run_sim_bench(args.seconds, args.num_envs, args.robot, progress=lambda s: status.update(s))
    if args.json:
        emit_json(report)
        return 0
    peer = report["peer"]
    table = Table(title=f"Simulation throughput ({report['cpu_count']} cores, MuJoCo {report['mujoco']})")
    for col in (
        "robot / task",
        "decimation",
        "single env steps/s",
        "batched steps/s",
        "raw limit steps/s",
        "batched / raw",
        "single vs Ant-v5 (per physics step)",
    ):
        table.add_column(col)
    for robot, f in report["robots"].items():
        table.add_row(
            f"{robot} / {f['task']}",
            str(f["decimation"]),
            f"{f['single_env_steps_per_s']:,.0f}",
            f"{f['batched_env_steps_per_s']:,.0f}",
            f"{f['raw_limit_env_steps_per_s']:,.0f}",
            f"{f['batched_vs_raw']:.2f}",
            f"{f['single_vs_ant_per_physics_step']:.2f}x",
        )
    stdout.print(table)
    stdout.print(
        f"peer Ant-v5: {peer['env_steps_per_s']:,.0f} env steps/s = {peer['physics_steps_per_s']:,.0f} physics steps/s"
    )
    return 0
