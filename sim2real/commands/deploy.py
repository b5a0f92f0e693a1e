"""Deploy a policy through the ROS 2 graph: sim bridge -> policy -> safety filter -> robot.

Runs the nodes and parameter files the launch files use (config/<robot>.yaml), without
a ROS 2 installation: in one process with a multi-threaded executor (default) or one
process per node (--processes). DDS stays on loopback (ROS_AUTOMATIC_DISCOVERY_RANGE
defaults to LOCALHOST). Prints task success, safety-filter interventions, latency
percentiles and deadline misses; --json prints them as one JSON object.

`sim2real deploy --backend real` drives the robot through its own protocol (docs/hardware.md);
add --emulate to start its simulator-backed emulator too. `sim2real deploy check --robot R`
runs the pre-flight check (`sim2real deploy check --help`).

`sim2real deploy --node NAME -- --ros-args ...` runs a single node of the graph (what the
launch files start): it notes Ctrl-C and SIGTERM from its first instant (no traceback
while it starts) and ends when the process that started it ends (docs/deployment.md).
"""

from __future__ import annotations

import argparse
import os
import sys

from sim2real.commands.output import add_json_flag, console, emit_json, status_line, stdout
from sim2real.commands.overrides import add_set_flag, parse_overrides
from sim2real.robot_names import ROBOT_NAMES


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--robot", choices=ROBOT_NAMES,
                        help="robot (required for a run)")
    parser.add_argument("--backend", choices=["sim", "real"], default="sim",
                        help="sim: start the sim bridge; real: the robot's driver provides the topics")
    parser.add_argument("--policy", default="",
                        help="exported policy (.onnx, its .json or folder), 'classical', or 'external' (no policy "
                             "node: another program publishes raw_command, e.g. `sim2real hil actor --env ros`); "
                             "default: the shipped baseline, else the classical controller")
    parser.add_argument("--task", default="",
                        help="simulated task of the sim bridge or the emulator (default: the policy's, else the "
                             "robot's deployment task)")
    parser.add_argument("--action-mode", default="",
                        help="command space of a classical or external policy, for every node (e.g. the drone's "
                             "velocity: the vehicle's own controller flies the filtered velocities); an exported "
                             "policy's is its own")
    parser.add_argument("--duration", type=float, default=None,
                        help="seconds to run (default 20; with --console until Ctrl-C)")
    parser.add_argument("--processes", action="store_true", help="one process per node")
    parser.add_argument("--config", default="", help="parameter file (default: config/<robot>.yaml)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the simulated targets/commands")
    parser.add_argument("--record", default="", help="record an MCAP rosbag2 into this (new) folder")
    parser.add_argument("--log-dir", default="", help="one process per node: keep each node's log here (<node>.log)")
    parser.add_argument("--domain-id", type=int, default=None,
                        help="ROS_DOMAIN_ID of the run (default: $ROS_DOMAIN_ID, else derived from the pid)")
    parser.add_argument("--node", metavar="NAME",
                        help="run only this node of the graph (a name of ros_nodes/graph.py's NODE_MODULES; an "
                             "unknown name lists them); ROS arguments follow `--` (launch files)")
    parser.add_argument("--console", action="store_true",
                        help="serve the correction console (prints a URL with its access token)")
    parser.add_argument("--console-port", type=int, default=8765, help="0: any free port")
    parser.add_argument("--emulate", action="store_true",
                        help="with --backend real: start the robot's protocol emulator and drive it")
    parser.add_argument("--fault", action="append", default=[], metavar="KEY=VALUE",
                        help="with --emulate: a data mismatch for the emulator to inject (the pre-flight check "
                             "then keeps the robot disabled)")
    add_set_flag(parser, "safety_filter.max_tilt=0.5")
    parser.add_argument("ros_args", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    add_json_flag(parser)


def run(args: argparse.Namespace) -> int:
    if args.node:  # started by a launch file: the launch environment decides the DDS settings
        return run_node(args.node, args.ros_args[1:] if args.ros_args[:1] == ["--"] else args.ros_args)
    if args.ros_args[:1] == ["check"]:
        from sim2real.commands.deploy_check import run_check

        return run_check(args.ros_args[1:])
    if not args.robot:
        console.print("sim2real deploy: --robot is required")
        return 2
    if args.backend == "sim" or args.emulate:  # a simulated or emulated robot lives on this machine
        os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
    from sim2real.ros_nodes.deployment import DeployOptions, run_deployment

    domain = args.domain_id
    if domain is None:
        domain = int(os.environ.get("ROS_DOMAIN_ID", 1 + os.getpid() % 200))
    duration = args.duration if args.duration is not None else (float("inf") if args.console else 20.0)
    opts = DeployOptions(robot=args.robot, backend=args.backend, policy=args.policy, task=args.task, duration=duration,
                         processes=args.processes, config=args.config, seed=args.seed, record=args.record,
                         domain_id=domain, overrides=node_overrides(parse_overrides(args.overrides)),
                         console=args.console, console_port=args.console_port, emulate=args.emulate,
                         log_dir=args.log_dir, action_mode=args.action_mode,
                         emulator_faults=tuple(args.fault))
    from sim2real.ros_nodes.deployment import request_stop
    from sim2real.stopping import stop_on_signals

    # Ctrl-C or SIGTERM (a launcher, a test) ends the window early: the graph and the
    # emulator shut down and the summary is printed as at the end of --duration.
    with status_line(f"deploying {args.robot}") as show, stop_on_signals(request_stop):
        summary = run_deployment(opts, progress=lambda s: show(f"{args.robot}: {s}"))
    warning = summary.get("realtime_demand", {}).get("warning")
    if warning:  # on stderr, so it reaches a person whatever the output format
        console.print(f"warning: {warning}")
    if args.json:
        emit_json(summary)
        return 0
    _print(summary)
    return 0


def run_node(name: str, ros_args: list[str]) -> int:
    """One node of the graph in this process, until a stop signal or its parent's end."""
    import importlib
    import signal

    from sim2real.ros_nodes.process_life import end_with_parent, note_stop_signals

    # First, before the seconds of imports: a stop signal ends the process at once (0,
    # nothing to undo yet), and the launcher's end (even by SIGKILL) sends SIGTERM here.
    note_stop_signals()
    end_with_parent(signal.SIGTERM)
    from sim2real.errors import ConfigError
    from sim2real.ros_nodes.graph import NODE_MODULES

    if name not in NODE_MODULES:
        raise ConfigError("--node", f"no node named {name!r}; the graph's nodes: {', '.join(NODE_MODULES)}")
    module = importlib.import_module(NODE_MODULES[name])
    return int(module.main([sys.argv[0], *ros_args]))


def node_overrides(flat: dict) -> dict[str, dict]:
    """``{"safety_filter.max_tilt": 0.5}`` -> ``{"safety_filter": {"max_tilt": 0.5}}``."""
    from sim2real.errors import ConfigError

    out: dict[str, dict] = {}
    for key, value in flat.items():
        node, sep, name = key.partition(".")
        if not sep or not name:
            raise ConfigError(f"--set {key}", "expected NODE.PARAMETER=VALUE, e.g. safety_filter.max_tilt=0.5")
        out.setdefault(node, {})[name] = value
    return out


def _print(s: dict) -> None:
    from rich.table import Table

    t = s["task_success"]
    i = s["interventions"]
    lat = s["latency_ms"]
    table = Table(title=f"sim2real deploy: {s['robot']} ({s['backend']}, {s['executor']}), policy {s['policy']}")
    table.add_column("figure")
    table.add_column("value")
    if s["backend"] == "sim":
        held = t.get("episodes_under_latch") or 0
        table.add_row("task success", f"{t['successes']}/{t['episodes']} episodes"
                      + (f" (and {held} under a latched safety guard, not counted)" if held else ""))
    table.add_row("interventions", f"{i['steps_with_intervention']}/{i['filter_steps']} filter steps "
                                   f"({i['safe_action_steps']} safe action, {i['rejected_commands']} rejected)")
    table.add_row("filters that acted", ", ".join(f"{k} x{v}" for k, v in i["by_filter"].items()) or "none")
    for key in ("state_to_command", "safety_filter", "inference"):
        v = lat[key]
        table.add_row(f"{key} latency", f"p50 {v['p50_ms']:.2f} ms, p99 {v['p99_ms']:.2f} ms, max {v['max_ms']:.2f} ms")
    table.add_row("deadline misses", ", ".join(f"{k} {v}" for k, v in s["deadline_misses"].items())
                  + f" (of {s['policy_ticks']} policy ticks)")
    if "realtime_demand" in s:
        d = s["realtime_demand"]
        table.add_row("real-time threads", f"{d['cores']:.2f} of {d['machine_cores']} cores")
    stdout.print(table)
