"""`sim2real deploy check --robot R`: the pre-flight check, before a robot is enabled.

Connects to the robot through its backend (no ROS graph; the robot stays in its safe
state), reads its state streams for --seconds, and compares them with the simulated
robot and the policy: joint names, order and units, gravity in the IMU, quaternion
order, stream rate and jitter, link latency, and whether the observation the policy
would get lies inside its training distribution (per-block z-scores against the
normalization statistics it was exported with), and whether the backend's vendor-rate
loop runs at real-time priority (WARN without the privilege), and whether the safety
filter's servo model (--config, --set as for `deploy`) and the backend's gains are the
policy's own (WARN: its targets cut short; FAIL: the servos' torque passes the filter's
effort limit). Prints a PASS/WARN/FAIL
table (--json: one object) and exits 1 on any FAIL.

    sim2real deploy check --robot quadruped --options '{"interface": "enp3s0"}'
    sim2real deploy check --robot quadruped --emulate --fault swap_joints=1,2
"""

from __future__ import annotations

import argparse
import json
import os
import time
from typing import Any

import numpy as np

from sim2real.commands.output import add_json_flag, console, emit_json, stdout
from sim2real.commands.overrides import add_set_flag, parse_overrides
from sim2real.errors import ConfigError
from sim2real.robot_names import ROBOT_NAMES

Z_FAIL = 6.0
"""|z| of an observation element beyond which the policy never saw anything like it."""
Z_WARN = 4.0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="sim2real deploy check", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--robot", choices=ROBOT_NAMES, required=True, help="robot class")
    parser.add_argument("--backend", default="", help="the robot's protocol (default: its own)")
    parser.add_argument("--options", default="{}", help="backend options as JSON (default: loopback)")
    parser.add_argument("--policy", default="", help="exported policy whose training distribution to check "
                                                      "(default: the shipped baseline; 'none': skip)")
    parser.add_argument("--config", default="", help="the deployment's parameter file (default: config/<robot>.yaml): "
                                                     "the safety filter's servo model is checked against the policy")
    add_set_flag(parser, "safety_filter.servo_kp=20 (as given to `sim2real deploy`)")
    parser.add_argument("--seconds", type=float, default=2.0, help="seconds of live state to read")
    parser.add_argument("--connect-timeout", type=float, default=10.0, help="seconds for the first state")
    parser.add_argument("--emulate", action="store_true", help="start the robot's emulator and check it")
    parser.add_argument("--fault", action="append", default=[], metavar="KEY=VALUE",
                        help="with --emulate: a mismatch to inject (see `sim2real hardware emulate --help`)")
    add_json_flag(parser)
    return parser


def run_check(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
    try:
        options = json.loads(args.options)
    except json.JSONDecodeError as exc:
        raise ConfigError("--options", f"not JSON: {exc}") from None
    if not isinstance(options, dict):
        raise ConfigError("--options", "must be a JSON object")
    if args.emulate:
        from sim2real.ros_nodes.emulation import EmulatorProcess

        domain = int(os.environ.get("ROS_DOMAIN_ID", 1 + os.getpid() % 200))
        with EmulatorProcess(args.robot, domain, backend=args.backend, faults=args.fault, mission=False,
                             backend_options=options) as emu:
            items = check(args, {**emu.connect_options, **options})
    elif args.fault:
        raise ConfigError("--fault", "faults are injected into an emulator: add --emulate")
    else:
        items = check(args, options)
    from sim2real.hardware.preflight import format_table, verdict

    failed = verdict(items)
    if args.json:
        emit_json({"robot": args.robot, "passed": not failed, "items": [i.__dict__ for i in items]})
    else:
        stdout.print(format_table(items), markup=False, highlight=False, soft_wrap=True)
        stdout.print(failed or "pre-flight check passed", markup=False, highlight=False, soft_wrap=True)
    return 1 if failed else 0


def check(args: argparse.Namespace, options: dict[str, Any]) -> list[Any]:
    from sim2real.hardware.backend import HardwareError, backend_class
    from sim2real.hardware.preflight import Preflight, robot_writers_item
    from sim2real.sim import robot_deployment

    info = robot_deployment(args.robot)
    backend = backend_class(args.backend or info.real_backend)(info.driver_mode(info.action_mode, {})[0], options)
    preflight = Preflight(info, backend, args.seconds)
    backend.on_state(preflight.add)
    try:
        with console.status(f"connecting to the {args.robot} ({backend.protocol})"):
            try:
                backend.connect(args.connect_timeout)
            except HardwareError as exc:
                raise ConfigError("connect", str(exc)) from None
            end = time.monotonic() + args.seconds + args.connect_timeout
            while not preflight.finished() and time.monotonic() < end:
                time.sleep(0.05)
        detail = backend.health().detail
        found = robot_writers_item(detail.get("robot_writers"))
        items = [*preflight.items(), realtime_item(detail.get("realtime")), kernel_item(),
                 *([found] if found else []),
                 *backend.driver_items()]
    finally:
        backend.close()
    latest = [m for _, m in preflight.samples()]
    policy = _policy_path(args.robot, args.policy)
    if policy and latest:
        items.append(observation_item(args.robot, policy, latest))
    gains = servo_gains_item(args.robot, policy, filter_parameters(args, policy), options) if policy else None
    return items + ([gains] if gains else [])


def filter_parameters(args: argparse.Namespace, policy: str) -> dict[str, Any]:
    """The safety filter's parameters as `sim2real deploy` would set them for ``policy``
    (the parameter file, the policy's own settings, then ``--set``)."""
    from sim2real.commands.deploy import node_overrides
    from sim2real.ros_nodes.deployment import DeployOptions, graph_parameters

    params, _ = graph_parameters(DeployOptions(robot=args.robot, policy=policy, config=args.config,
                                               overrides=node_overrides(parse_overrides(args.overrides))))
    return params.get("safety_filter", {})


def servo_gains_item(robot: str, policy_path: str, filter_params: dict[str, Any], options: dict[str, Any]) -> Any:
    """Whether the safety filter's servo model, and the gains the backend will send, are
    the ones the policy was trained with (None for a robot without joint servos). A filter
    softer than the servos lets their torque pass its effort limit (FAIL); a stiffer one
    cuts the policy's targets short (WARN: a kp 20 policy under the kp 35 model fell)."""
    from sim2real.hardware.preflight import Item
    from sim2real.policies.deploy import OnnxPolicy
    from sim2real.policies.safety.presets import PARAMS, policy_safety_values
    from sim2real.sim import robot_deployment

    defaults = PARAMS[robot]()
    modelled = {k: getattr(defaults, k, None) for k in ("servo_kp", "servo_kd")}
    if None in modelled.values():  # no joint servos in this robot's filter
        return None
    task_options = dict(OnnxPolicy(policy_path).metadata.get("task_options") or {})
    wanted = {**modelled, **policy_safety_values(robot, task_options)}
    model = {k: float(filter_params.get(k, wanted[k])) for k in wanted}
    name, expected = "servo gains (policy)", f"kp {wanted['servo_kp']:g}, kd {wanted['servo_kd']:g}: the policy's"
    measured = f"safety filter kp {model['servo_kp']:g}, kd {model['servo_kd']:g}"
    fix = "set safety_filter.servo_kp/servo_kd to the policy's gains (deploy does, unless --set says otherwise)"
    if model["servo_kp"] < wanted["servo_kp"]:
        return Item(name, "FAIL", measured, expected, "a softer model than the servos: their torque passes the "
                    "filter's effort limit; " + fix)
    if model != wanted:
        return Item(name, "WARN", measured, expected, "the filter cuts the policy's targets short; " + fix)
    sent = robot_deployment(robot).backend_options(task_options) if task_options.get("servo_kp") is not None else {}
    overridden = {k: options[k] for k, v in sent.items() if k in options and options[k] != v}
    if overridden:
        return Item(name, "WARN", f"{measured}; backend options {overridden}", f"{expected} (backend {sent})",
                    "the robot's servos will not run the policy's gains")
    if any(len(set(np.atleast_1d(task_options.get(k, [])).tolist())) > 1 for k in wanted):
        return Item(name, "WARN", measured + " (the stiffest joint's)", expected + " per joint",
                    "the filter models one gain for all joints")
    return Item(name, "PASS", measured, expected)


def realtime_item(status: dict[str, Any] | None) -> Any:
    """Whether the backend's vendor-rate loop got real-time scheduling
    (:class:`~sim2real.hardware.realtime.RealtimeStatus` as a dict): WARN without it, the
    robot can run, but its loop is only as punctual as the busiest process on the computer."""
    from sim2real.hardware.preflight import Item

    expected = "SCHED_FIFO, memory locked"
    hint = "give the stack real-time priority: docs/deployment.md, 'Real-time priority on a robot computer'"
    if not status:
        return Item("real-time priority", "INFO", "the backend's loop did not report its scheduling", expected)
    if "name" not in status and status and all(isinstance(v, dict) for v in status.values()):
        # Several loops (PX4's setpoint stream and its reader): each judged, the worst counts.
        loops = [realtime_item(v) for v in status.values() if v]
        if not loops:
            return Item("real-time priority", "INFO", "the backend's loops did not report their scheduling", expected)
        worst = max(loops, key=lambda i: ("INFO", "PASS", "WARN", "FAIL").index(i.status))
        return Item("real-time priority", worst.status, "; ".join(i.measured for i in loops), expected, worst.hint)
    name, reason = status.get("name", "the loop"), status.get("reason", "")
    if not status.get("realtime"):
        return Item("real-time priority", "WARN", f"{name}: {status.get('policy', '?')} ({reason})", expected, hint)
    cpus = ",".join(str(c) for c in status.get("cpus", []))
    measured = f"{name}: SCHED_FIFO {status.get('priority')} on CPU {cpus}"
    if not status.get("memory_locked"):
        return Item("real-time priority", "WARN", f"{measured}, memory not locked ({reason})", expected, hint)
    return Item("real-time priority", "PASS", f"{measured}, memory locked", expected)


def kernel_item(limits: Any = None) -> Any:
    """Whether the kernel may stop every real-time loop at once to run normal threads: the
    fair server (kernel 6.12+, 50 ms of every second per CPU by default) and the classic
    throttle (``sched_rt_runtime_us``). Measured here: a SCHED_FIFO executor held off
    its CPU for 53 ms while both CPUs ran normal processes, longer than the filter's 60 ms
    watchdog leaves after a tick (docs/BENCHMARKS.md)."""
    from sim2real.hardware.preflight import Item
    from sim2real.hardware.realtime_demand import kernel_limits

    k = limits or kernel_limits()
    stall = k.stall_ms()
    fair = ("fair server " + (f"{max(k.fair_server_ms):g} ms of {k.fair_server_period_ms:g} ms per CPU"
                              if k.fair_server_ms is not None else f"unknown ({k.fair_server_why})"))
    throttle = ("throttle off" if k.rt_runtime_us == -1 else "throttle unknown" if k.rt_runtime_us is None
                else f"throttle {k.rt_runtime_us} of {k.rt_period_us} us")
    measured = f"{fair}; {throttle}"
    expected = "no stall of real-time loops (fair server runtime 0, sched_rt_runtime_us -1)"
    if stall <= 0:
        return Item("kernel real-time limits", "PASS", measured, expected)
    return Item("kernel real-time limits", "WARN", f"{measured}: loops may stop for up to {stall:g} ms", expected,
                "on a robot computer: echo 0 > /sys/kernel/debug/sched/fair_server/cpuN/runtime for each CPU and "
                "sysctl kernel.sched_rt_runtime_us=-1 (RLIMIT_RTTIME still ends a runaway loop): docs/deployment.md")


def _policy_path(robot: str, policy: str) -> str:
    if policy == "none":
        return ""
    if policy:
        return policy
    from sim2real.ros_nodes.deployment import default_policy

    found = default_policy(robot)
    return "" if found == "classical" else found


START_STATES = 128
"""Episode starts drawn to find the range of the observation at a start (:func:`start_envelope`)."""
START_MARGIN = 0.05
"""The drawn range widened by this share of itself each side: finitely many draws fall
short of what the start distribution spans (128 uniform headings leave ~3 degrees)."""


def start_envelope(task: str, meta: dict[str, Any], shape: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    """The elementwise range of the policy's observation over ``START_STATES`` resets of
    its task with its own options (no randomization; widened by ``START_MARGIN``): what it
    saw at the start of every training episode. An empty range (low above high) when the task's observation is not
    the policy's (an imported policy's own layout)."""
    from sim2real.sim import REGISTRY
    from sim2real.sim.core.env import SimEnv

    env = SimEnv(REGISTRY.get(task), action_mode=meta["action_mode"], privileged_info=False,
                 **(meta.get("task_options") or {}))
    try:
        starts = np.array([env.reset(seed=k)[0] for k in range(START_STATES)], dtype=np.float64)
    finally:
        env.close()
    if starts.shape[1:] != shape:
        return np.full(shape, np.inf), np.full(shape, -np.inf)
    low, high = starts.min(axis=0), starts.max(axis=0)
    margin = START_MARGIN * (high - low)
    return low - margin, high + margin


def observation_item(robot: str, policy_path: str, samples: list[Any]) -> Any:
    """The observation the policy would get holding still (goal where the robot is, no
    velocity command), normalized with its training statistics: the largest |z| per block,
    an element inside the range of the task's start states (:func:`start_envelope`) counting 0."""
    from sim2real.hardware.preflight import Item
    from sim2real.policies.deploy import OnnxPolicy
    from sim2real.policies.importers.sim_check import failure as sim_check_failure
    from sim2real.ros_nodes.robots import ObservationBuilder, make_task

    policy = OnnxPolicy(policy_path)
    if policy.privileged_inputs:
        return Item("observation (policy)", "FAIL", "a privileged teacher: it reads simulator state no robot "
                    "measures (distill a student from it)", "every block")
    meta = policy.metadata
    failed = sim_check_failure(meta)
    if failed:
        return Item("observation (policy)", "FAIL", failed, "an imported policy that stood, walked and turned "
                    "in our simulator", "sim2real sim2sim the policy; fix its foreign config and import again")
    norm = meta["observation"]["normalization"]
    if not norm.get("enabled"):
        return Item("observation (policy)", "INFO", "the policy has no normalization statistics", "-")
    task = meta["task"].split("/")[-1].removesuffix("-v0")
    builder = ObservationBuilder(robot, make_task(task, meta["action_mode"], meta.get("task_options") or {}),
                                 int(meta["action"]["size"]))
    mean, std = np.asarray(norm["mean"]), np.sqrt(np.asarray(norm["var"]) + float(norm["epsilon"]))
    low, high = start_envelope(task, meta, mean.shape)
    worst: dict[str, float] = {}
    for m in samples[-50:]:
        m.goal = m.goal if m.goal is not None else (m.ee_pos if m.ee_pos is not None else m.base_pos)
        m.cmd_vel = m.cmd_vel if m.cmd_vel is not None else np.zeros(3)
        if builder.missing(m):
            return Item("observation (policy)", "FAIL", f"missing {builder.missing(m)}", "every block")
        obs = builder.build(m, np.zeros(int(meta["action"]["size"])))
        # A value within the range of the task's own start states was seen at every
        # episode's start, however rare it is in the running statistics (a drone resting
        # at any heading: the policy turns to its own within a second, so the statistics
        # hold little else).
        z = np.where((obs >= low) & (obs <= high), 0.0, np.abs((obs - mean) / std))
        start = 0
        for name, size in builder.layout:
            worst[name] = max(worst.get(name, 0.0), float(z[start:start + size].max()))
            start += size
    top = sorted(worst.items(), key=lambda kv: -kv[1])[:3]
    measured = ", ".join(f"{k} {v:.1f}" for k, v in top)
    expected = f"max |z| < {Z_WARN:.0f}"
    if top and top[0][1] > Z_FAIL:
        return Item("observation (policy)", "FAIL", measured, expected,
                    f"{top[0][0]} lies far outside what the policy saw in training")
    if top and top[0][1] > Z_WARN:
        return Item("observation (policy)", "WARN", measured, expected, "at the edge of the training distribution")
    return Item("observation (policy)", "PASS", measured, expected)
