"""Access control for a robot's graph (SROS2): the permissions policy, read off the running graph.

    sim2real security policy --robot arm --backend real --emulate --out policy.xml

runs the graph a moment (on loopback, its own DDS domain), reads every node's topics and
services from the ROS graph and writes an SROS2 policy with one enclave per node
(``/sim2real/<node>``): only the safety filter may publish ``command``. Then, on the
robot's computer (docs/deployment.md, "Command authority"):

    ros2 security create_keystore ~/sros2_keys
    ros2 security create_permission ~/sros2_keys /sim2real/safety_filter policy.xml   # per node
"""

from __future__ import annotations

import argparse
import os
import threading
from pathlib import Path

from sim2real.commands.output import add_json_flag, console, emit_json
from sim2real.robot_names import ROBOT_NAMES


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("action", choices=["policy"], help="policy: write the graph's SROS2 permissions policy")
    parser.add_argument("--robot", required=True, choices=ROBOT_NAMES)
    parser.add_argument("--backend", choices=["sim", "real"], default="real",
                        help="the graph whose endpoints are read (real: the hardware bridge's)")
    parser.add_argument("--emulate", action="store_true",
                        help="with --backend real: run the robot's emulator so the hardware bridge can start")
    parser.add_argument("--policy", default="classical",
                        help="the policy node's policy (its topics do not depend on it)")
    parser.add_argument("--out", default="", help="write the policy here (default: stdout)")
    parser.add_argument("--domain-id", type=int, default=None, help="ROS_DOMAIN_ID of the short run")
    add_json_flag(parser)


def run(args: argparse.Namespace) -> int:
    import rclpy
    from rclpy.context import Context
    from rclpy.node import Node

    from sim2real.errors import ConfigError
    from sim2real.ros_nodes.deployment import (
        STARTUP_TIMEOUT,
        DeployOptions,
        graph_parameters,
        request_stop,
        run_deployment,
    )
    from sim2real.ros_nodes.security import allowed, graph_endpoints, sros2_policy

    if args.backend == "real" and not args.emulate:
        raise ConfigError("--emulate", "reading a real robot's graph needs its emulator here (add --emulate)")
    os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
    domain = args.domain_id if args.domain_id is not None else 1 + os.getpid() % 200
    opts = DeployOptions(robot=args.robot, backend=args.backend, policy=args.policy, duration=float("inf"),
                         domain_id=domain, emulate=args.emulate)
    nodes = graph_parameters(opts)[1]
    failure: list[BaseException] = []
    running = threading.Event()
    """Set at the graph's first progress line: every node configured and active, so every
    endpoint exists (a node makes some only when it configures; read before, the filter's
    `command` publisher was missing on a loaded machine)."""

    def deploy() -> None:
        try:
            run_deployment(opts, progress=lambda _line: running.set())
        except BaseException as exc:  # reported in the main thread
            failure.append(exc)
        finally:
            running.set()

    runner = threading.Thread(target=deploy, name="security-graph", daemon=True)
    context = Context()
    rclpy.init(context=context, domain_id=domain)
    probe = Node("sim2real_security_probe", context=context)
    try:
        console.print(f"reading the {args.robot} graph's endpoints ({', '.join(nodes)})")
        runner.start()
        running.wait(STARTUP_TIMEOUT + 30.0)
        if failure:
            raise failure[0]
        endpoints = graph_endpoints(probe, nodes)
    finally:
        request_stop()
        runner.join(timeout=60.0)
        probe.destroy_node()
        rclpy.shutdown(context=context)
    if failure:
        raise failure[0]
    policy = sros2_policy(endpoints)
    if args.out:
        Path(args.out).write_text(policy)
    commanders = allowed(policy, "publish", "/command")
    if args.json:
        emit_json({"robot": args.robot, "backend": args.backend, "enclaves": sorted(endpoints),
                   "command_publishers": commanders, "out": args.out, **({} if args.out else {"policy": policy})})
    elif not args.out:
        print(policy, end="")
    else:
        console.print(f"wrote {args.out}: {len(endpoints)} enclaves; /command may be published by {commanders}")
    return 0
