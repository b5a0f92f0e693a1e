"""One deployment run: the robot's node graph from ``config/<robot>.yaml`` for a fixed
time, then a summary (task success, safety-filter interventions, latencies, deadline
misses). Behind ``sim2real deploy``; tests call :func:`run_deployment` directly.

Every figure comes from the nodes' own counters: read directly in one process, or
from their ``diagnostics`` key-values when each node runs in its own process.
"""

from __future__ import annotations

import json
import math
import os
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from sim2real.errors import GraphError
from sim2real.hardware.realtime_demand import RealtimeDemand
from sim2real.policies.shipped import default_policy
from sim2real.ros_nodes.graph import (
    NODE_MODULES,
    InProcessGraph,
    ProcessGraph,
    check_parameters,
    config_dir,
    load_config,
    merge,
    sections,
)
from sim2real.sim import robot_deployment
from sim2real.sim.core.errors import ConfigError
from sim2real.stopping import StopRequest

EXTERNAL = "external"
"""``policy: external``: no policy node; another program publishes ``raw_command``."""


@dataclass
class DeployOptions:
    robot: str
    backend: str = "sim"
    policy: str = ""
    """ONNX file/folder, ``classical``, ``external`` (no policy node: another program
    publishes ``raw_command``, e.g. the HIL-SERL actor), or empty: :func:`default_policy`."""
    task: str = ""
    """Simulated task of the sim bridge or the emulator (empty: the policy's, else the
    robot's deployment task)."""
    duration: float = 20.0
    processes: bool = False
    """One OS process per node instead of all nodes on one executor in this process."""
    config: str = ""
    seed: int = 0
    record: str = ""
    """Folder of an MCAP bag of the run (empty: no recorder)."""
    domain_id: int = 0
    overrides: dict[str, dict[str, Any]] = field(default_factory=dict)
    console: bool = False
    """Serve the correction console (and render the robot's live cameras in simulation)."""
    console_port: int = 8765
    log_dir: str = ""
    """One process per node: keep each node's log here (``<node>.log``; default: a
    temporary folder removed at the end)."""
    emulate: bool = False
    """With ``backend="real"``: start the robot's protocol emulator (its own process) and
    connect the hardware bridge to it, enabled once the pre-flight check passes."""
    emulator_faults: tuple[str, ...] = ()
    """``--fault`` items for the emulator (``swap_joints=1,3``, ...)."""
    emulated: bool = False
    """Set by the run itself: the robot is an emulator started for this run."""
    action_mode: str = ""
    """The command space of a classical or external policy (the drone's ``velocity``, an
    arm's ``ee_impedance``); every node that reads commands runs in it. Empty: the
    parameter file's, else the robot's. An ONNX policy's is its own."""


def graph_parameters(opts: DeployOptions) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """The merged parameters and the nodes to run."""
    path = Path(opts.config) if opts.config else config_dir() / f"{opts.robot}.yaml"
    unknown = sorted(set(opts.overrides) - set(NODE_MODULES))
    if unknown:
        raise ConfigError("--set", f"no node named {', '.join(unknown)}; the graph's: {', '.join(NODE_MODULES)}")
    params = load_config(path, opts.domain_id)
    if "policy" in params.get("policy", {}):
        # deploy and the launch files always pass the policy they deploy, so a value in
        # the file would be overridden without a word: refused instead.
        raise ConfigError(f"{path}: policy.policy", "the policy is chosen by `sim2real deploy --policy` or "
                                                    "`ros2 launch ... policy:=`, not the parameter file: remove it")
    has_driver = "hardware_bridge" in sections(path)
    policy = opts.policy or default_policy(opts.robot)
    extra: dict[str, dict[str, Any]] = {"policy": {"policy": policy}, "sim_bridge": {"seed": int(opts.seed)}}
    gains: dict[str, Any] = {}
    if opts.task:
        extra["sim_bridge"]["task"] = opts.task
    if policy not in ("classical", EXTERNAL):
        # The policy's metadata decides the task; the bridge must simulate the same one.
        # Loading it here (files, hash, sizes) makes a bad policy one clear error before
        # any node starts, instead of a node that cannot configure.
        from sim2real.policies.deploy import OnnxPolicy

        meta = OnnxPolicy(policy).metadata
        if meta.get("robot") != opts.robot:
            raise ConfigError("policy", f"{policy} was trained for {meta.get('robot')!r}, not {opts.robot!r}")
        if opts.backend == "real" and not opts.emulated:
            from sim2real.policies.importers.sim_check import failure

            refused = failure(meta)
            if refused:  # conventions a real robot would pay for: refused before anything starts
                raise ConfigError("policy", f"{policy}: {refused}")
        task = meta["task"].split("/")[-1].removesuffix("-v0")
        if opts.task and opts.task != task:
            raise ConfigError("--task", f"{policy} was trained on {task}, not {opts.task}")
        if opts.action_mode and opts.action_mode != meta["action_mode"]:
            raise ConfigError("--action-mode", f"{policy} acts in {meta['action_mode']}, not {opts.action_mode}")
        extra["sim_bridge"].update(task=task, task_options=json.dumps(meta.get("task_options") or {}))
        # The servo gains the robot runs under this policy (an imported policy's own): the
        # filter's joint limits follow them (policies/safety/presets.py: target_lead).
        from sim2real.policies.safety.presets import policy_safety_values

        extra["safety_filter"] = policy_safety_values(opts.robot, meta.get("task_options") or {})
        _deploy_in(extra, meta["action_mode"], has_driver)
        if has_driver:
            try:
                gains = robot_deployment(opts.robot).backend_options(meta.get("task_options") or {})
            except ValueError as exc:
                raise ConfigError("policy", str(exc)) from None
        planned = _planner_parameters(opts.robot, task, meta["action_mode"], meta.get("task_options") or {})
    elif policy == "classical":  # the controller runs the task the bridge simulates
        node, info = merge(params, extra)["policy"], robot_deployment(opts.robot)
        task = opts.task or node.get("task") or info.task
        extra["policy"]["task"] = task
        if opts.action_mode:
            extra["policy"]["action_mode"] = opts.action_mode
            _deploy_in(extra, opts.action_mode, has_driver)
        planned = _planner_parameters(opts.robot, task, opts.action_mode or node.get("action_mode")
                                      or info.action_mode, json.loads(node.get("task_options") or "{}"))
    else:
        if opts.action_mode:
            _deploy_in(extra, opts.action_mode, has_driver)
        planned = None
    if planned is not None:
        extra["planner"] = planned
    nodes = ["safety_filter"] + (["policy"] if policy != EXTERNAL else []) \
        + (["sim_bridge"] if opts.backend == "sim" else [])
    if opts.backend == "real" and has_driver:
        # The robot speaks the sim2real wire protocol (hardware/): its driver is ours.
        # Robots without a `hardware_bridge` section bring their own ROS 2 driver.
        nodes.append("hardware_bridge")
    if "planner" in extra:  # the policy follows a planned path
        nodes.append("planner")
    if opts.record:
        nodes.append("recorder")
        extra["recorder"] = {"output": str(opts.record)}
    if opts.console:
        nodes.append("console")
        _console_parameters(opts, params, extra)
    if (opts.backend == "sim" or opts.emulated) and not params.get("safety_filter", {}).get("latch_file"):
        # A simulated or emulated robot is new every run: its latches live for this run
        # only. Real robots keep theirs in $ROS_HOME across runs, restarts and crashes.
        latch = Path(tempfile.gettempdir()) / f"sim2real-latch-{os.getpid()}-{opts.domain_id}-{opts.robot}.json"
        latch.unlink(missing_ok=True)
        extra.setdefault("safety_filter", {})["latch_file"] = str(latch)
    merged = merge(params, extra)
    merged = merge(merged, {node: {k: typed_like(v, merged.get(node, {}).get(k)) for k, v in values.items()}
                            for node, values in opts.overrides.items()})
    if "hardware_bridge" in nodes:  # the policy's needs under whatever reaches the robot (explicit wins)
        bridge = merged["hardware_bridge"]
        bridge["backend_options"] = json.dumps({**gains, **json_object(bridge.get("backend_options"), BACKEND_OPTIONS)})
    check_parameters(merged, nodes, opts.domain_id, path, opts.overrides)
    return merged, nodes


BACKEND_OPTIONS = "hardware_bridge.backend_options"


def json_object(value: Any, what: str) -> dict[str, Any]:
    """A JSON-object parameter as a mapping: its JSON text (the parameter file's), or the
    mapping ``--set`` gives once YAML read ``{key: value}``; anything else is one line
    naming ``what``."""
    if value is None or isinstance(value, str):
        try:
            value = json.loads(value or "{}")
        except json.JSONDecodeError as exc:
            raise ConfigError(what, f"is not JSON ({exc})") from None
    if not isinstance(value, dict):
        raise ConfigError(what, f"must be a JSON object, got {value!r}")
    return value


def emulated_bridge(connect: dict[str, Any], bridge: dict[str, Any]) -> dict[str, Any]:
    """The hardware bridge's overrides against an emulator: the user's ``bridge`` overrides
    with their ``backend_options`` on top of the emulator's connection settings (the
    user's keys win, the rest still reaches the emulator), enabled once the check passes
    unless the user says otherwise."""
    user = json_object(bridge.get("backend_options"), BACKEND_OPTIONS)
    return {"auto_enable": True, **bridge, "backend_options": json.dumps({**connect, **user})}


def typed_like(value: Any, like: Any) -> Any:
    """An override ``value`` (as YAML read it from ``--set``) in the type of the value it
    replaces: ``[-7, -7, -0.5]`` for a list of doubles is all doubles, ``2`` for a double
    is ``2.0``; a list mixing ints and floats is all floats (ROS parameters have one
    element type)."""
    def number(v: Any) -> bool:
        return isinstance(v, (int, float)) and not isinstance(v, bool)

    if isinstance(value, list) and value and all(number(v) for v in value):
        as_float = any(isinstance(v, float) for v in value) or (
            isinstance(like, list) and any(isinstance(v, float) for v in like))
        return [float(v) for v in value] if as_float else value
    if isinstance(like, float) and (isinstance(value, int) and not isinstance(value, bool)):
        return float(value)
    return value


LIVE_VIEW = {"image_rate": 20.0, "image_width": 320, "image_height": 240}
"""The sim bridge's cameras for a person watching: 320x240, asked at 20 frames/s so that at least 15
reach the page when the machine is loaded (a frame still drawing when the next is due is skipped)."""


def _deploy_in(extra: dict[str, dict[str, Any]], action_mode: str, has_driver: bool) -> None:
    """Every node that reads commands in ``action_mode``: the filter, the simulator, the driver."""
    for node in ("sim_bridge", "safety_filter", *(("hardware_bridge",) if has_driver else ())):
        extra.setdefault(node, {})["action_mode"] = action_mode


def _planner_parameters(robot: str, task: str, mode: str, options: dict[str, Any]) -> dict[str, Any] | None:
    """The planner's parameters when the policy's observation needs a planned path (its
    task's waypoint spacing), else None."""
    from sim2real.ros_nodes.robots import make_task
    from sim2real.sim import robot_deployment

    made = make_task(task, mode, options)
    if "path" not in robot_deployment(robot).required(made):
        return None
    return {"robot": robot, "spacing": float(getattr(made, "spacing", 0.4))}


def _console_parameters(opts: DeployOptions, params: dict[str, dict[str, Any]],
                        extra: dict[str, dict[str, Any]]) -> None:
    """The console speaks the safety filter's command layout and shows the robot's cameras."""
    cameras = ",".join(robot_deployment(opts.robot).live_cameras)
    mode = extra.get("safety_filter", {}).get("action_mode") or params.get("safety_filter", {}).get("action_mode", "")
    extra["console"] = {"robot": opts.robot, "action_mode": mode, "port": int(opts.console_port),
                        "cameras": cameras if opts.backend == "sim" else params.get("console", {}).get("cameras", "")}
    if opts.backend == "sim":
        extra["sim_bridge"].update(cameras=cameras, **LIVE_VIEW)


def run_deployment(opts: DeployOptions, progress: Any = None) -> dict[str, Any]:
    """Run the graph for ``opts.duration`` seconds; returns the summary."""
    if opts.backend not in ("sim", "real"):
        raise ValueError(f"backend must be sim or real, got {opts.backend!r}")
    STOP.clear()  # a stop asked of an earlier run in this process is not this run's
    if opts.emulate:
        return _run_emulated(opts, progress)
    return _run_graph(opts, progress)[0]


def _run_graph(opts: DeployOptions, progress: Any) -> tuple[dict[str, Any], float]:
    """The summary, and when the measured window ended (``time.monotonic()``)."""
    params, nodes = graph_parameters(opts)
    if "hardware_bridge" in nodes and not opts.processes and _needs_own_process(params["hardware_bridge"]):
        opts = replace(opts, processes=True)
    start = time.perf_counter()
    window: list[float] = []
    demand = RealtimeDemand().start()

    def window_ended() -> None:
        window.append(time.monotonic())
        demand.stop()

    run = _run_processes if opts.processes else _run_in_process
    try:
        stats = run(params, nodes, opts, progress, window_ended)
    finally:
        demand.stop()
    summary = summarize(opts, params, stats, time.perf_counter() - start)
    summary["realtime_demand"] = demand.summary()
    return summary, window[0] if window else time.monotonic()


def _needs_own_process(bridge: dict[str, Any]) -> bool:
    from sim2real.hardware.backend import backend_class

    name = bridge.get("backend") or robot_deployment(bridge.get("robot", "arm")).real_backend
    return backend_class(name).needs_own_process


def _run_emulated(opts: DeployOptions, progress: Any) -> dict[str, Any]:
    """The real backend against the robot's emulator: the emulator's episodes are the
    run's task success (a real robot's are counted by its operator)."""
    from sim2real.ros_nodes.emulation import EmulatorProcess

    if opts.backend != "real":
        raise ConfigError("--emulate", "emulates a real robot: use it with --backend real")
    if progress is not None:
        progress("starting the emulator")
    from sim2real.hardware.emulator.base import emulator_class

    deployment = robot_deployment(opts.robot)
    backend = opts.overrides.get("hardware_bridge", {}).get("backend") or deployment.real_backend
    cameras = deployment.live_cameras if emulator_class(backend).has_cell_cameras() else ()
    user_options = json_object(opts.overrides.get("hardware_bridge", {}).get("backend_options"), BACKEND_OPTIONS)
    # The emulated robot plays the task the sim bridge would simulate for this policy (its
    # metadata's): a waypoint policy's robot flies waypoints, and publishes their course.
    params, _ = graph_parameters(replace(opts, emulate=False, emulated=True))
    task = str(params.get("sim_bridge", {}).get("task") or opts.task)
    with EmulatorProcess(opts.robot, opts.domain_id, backend=backend, seed=opts.seed, task=task,
                         faults=opts.emulator_faults, cameras=cameras, backend_options=user_options) as emulator:
        bridge = emulated_bridge(emulator.connect_options, opts.overrides.get("hardware_bridge", {}))
        overrides = {**opts.overrides, "hardware_bridge": bridge}
        if opts.console and cameras:  # the emulated cell's cameras, drawn while the page shows them
            overrides["console"] = {"cameras": ",".join(cameras), **opts.overrides.get("console", {})}
        inner = replace(opts, emulate=False, emulated=True, overrides=overrides)
        summary, window_end = _run_graph(inner, progress)
    # Episodes that ended after the window (the robot put in its safe state while the
    # graph shuts down) are not the policy's.
    ends = emulator.summary.get("episode_ends", [])
    results = [r for r, t in zip(emulator.summary.get("episode_results", []), ends, strict=False) if t <= window_end]
    episodes, successes = len(results), sum(results)
    summary["task_success"].update(episodes=episodes, successes=successes,
                                   success_rate=round(successes / episodes, 3) if episodes else None)
    # A walking robot has no episodes: its success is tracking the commanded velocity and
    # not falling in the window (after it, the bridge lies the robot down: no fall).
    summary["task_success"].update({k: emulator.summary[k] for k in ("cmd_vel", "walking_s", "mean_vx",
                                                                     "velocity_error_rms")
                                    if k in emulator.summary})
    if "fall_times" in emulator.summary:
        summary["task_success"]["falls"] = sum(t <= window_end for t in emulator.summary["fall_times"])
    summary["emulator"] = emulator.summary
    requested, moved = summary.get("hardware", {}).get("first_enable_requested_at"), emulator.summary.get(
        "first_motion_at")
    if isinstance(requested, float):  # how long the robot could do its task in the window
        summary["task_success"]["enabled_s"] = round(max(0.0, window_end - requested), 2)
    if isinstance(requested, float) and isinstance(moved, float):  # one machine: one monotonic clock
        summary["enable_to_first_motion_ms"] = round((moved - requested) * 1e3, 1)
    return summary


STARTUP_TIMEOUT = 90.0
"""s: every node of a one-process-per-node graph reports within this of its start."""
SILENT_AFTER = 5.0
"""s: a node that reported and then says nothing for this long is taken as dead (nodes
report at 1 Hz; five missed reports is no scheduling hiccup)."""

STOP = StopRequest()
"""Set by :func:`request_stop` (SIGINT/SIGTERM, in a signal handler: so no lock): the
run's window ends now, the graph and the emulator shut down and the summary is still
made."""


def request_stop() -> None:
    STOP.set()


def _wait(duration: float, progress: Any, alive: Any) -> None:
    """Until ``duration`` ends or a stop is asked; ``alive()`` (raising when a node died)
    is called several times a second, so a dead node ends the run at once."""
    end = time.monotonic() + duration
    while (left := end - time.monotonic()) > 0 and not STOP.is_set():
        alive()
        if progress is not None:
            progress(_left(left))
        STOP.wait(min(0.25, left))
    alive()


def _left(seconds: float) -> str:
    return "running until Ctrl-C" if math.isinf(seconds) else f"running: {seconds:.0f} s left"


def _run_in_process(params: dict, nodes: list[str], opts: DeployOptions, progress: Any,
                    window_ended: Callable[[], None]) -> dict[str, dict]:
    graph = InProcessGraph(params, nodes, opts.domain_id)
    try:
        graph.start()
        _wait(opts.duration, progress, graph.raise_if_dead)
        window_ended()
        return {name: node.summary() for name, node in graph.nodes.items() if hasattr(node, "summary")}
    finally:
        graph.shutdown()


def _run_processes(params: dict, nodes: list[str], opts: DeployOptions, progress: Any,
                   window_ended: Callable[[], None]) -> dict[str, dict]:
    import rclpy
    from rclpy.context import Context
    from rclpy.executors import SingleThreadedExecutor

    from sim2real.ros_nodes.monitor import Monitor

    context = Context()
    rclpy.init(context=context, domain_id=opts.domain_id)
    graph = ProcessGraph(params, nodes, opts.domain_id, log_dir=opts.log_dir or None)
    monitor = Monitor(context=context)
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(monitor)
    try:
        graph.start()
        end = time.monotonic() + STARTUP_TIMEOUT  # imports and discovery, whatever the run's duration
        while not monitor.all_reporting(nodes) and not STOP.is_set():
            if time.monotonic() > end:
                silent = ", ".join(n for n in nodes if n not in monitor.statuses)
                raise GraphError(f"{silent} never reported within {STARTUP_TIMEOUT:.0f} s of starting")
            executor.spin_once(timeout_sec=0.1)
            graph.raise_if_dead()
        if "console" in nodes:
            _announce_console(graph)
        monitor.reset_window()

        def alive() -> None:
            graph.raise_if_dead()
            silent = monitor.silent(nodes, SILENT_AFTER)
            if silent:
                raise GraphError(f"{', '.join(silent)} stopped reporting for {SILENT_AFTER:.0f} s (hung or its "
                                 "executor died): the graph is stopped and the robot held")

        stop = time.monotonic() + opts.duration
        while time.monotonic() < stop and not STOP.is_set():
            executor.spin_once(timeout_sec=0.1)
            alive()
            if progress is not None:
                progress(_left(stop - time.monotonic()))
        window_ended()
        for _ in range(15):  # the 1 Hz reports after the window
            executor.spin_once(timeout_sec=0.1)
        return monitor.latest()
    finally:
        graph.shutdown()
        executor.shutdown()
        monitor.destroy_node()
        rclpy.shutdown(context=context)


def _announce_console(graph: ProcessGraph, wait: float = 10.0) -> None:
    """The console's URL (with its token) on this process's stderr, as the
    in-process console prints it: in its own process the console writes it to its log."""
    end = time.monotonic() + wait
    while time.monotonic() < end:
        line = next((ln for ln in graph.log("console").splitlines() if ln.startswith("console: ")), None)
        if line is not None:
            print(line, file=sys.stderr, flush=True)
            return
        time.sleep(0.1)
    print(f"console: its URL did not appear in {graph.log_dir / 'console.log'}", file=sys.stderr, flush=True)


def _num(value: Any) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


def summarize(opts: DeployOptions, params: dict, stats: dict[str, dict], seconds: float) -> dict[str, Any]:
    """The JSON summary of a run from the nodes' flat counters."""
    bridge = stats.get("sim_bridge") or stats.get("hardware_bridge") or {}
    safety, policy = stats.get("safety_filter", {}), stats.get("policy", {})
    acted = {k.removeprefix("acted_"): int(_num(v)) for k, v in safety.items() if k.startswith("acted_")}
    episodes = int(_num(bridge.get("episodes", 0))) if bridge else 0
    successes = int(_num(bridge.get("successes", 0))) if bridge else 0

    def lat(d: dict, prefix: str) -> dict[str, float]:
        return {k: _num(d.get(f"{prefix}_{k}")) for k in ("p50_ms", "p99_ms", "max_ms")}

    return {
        "robot": opts.robot,
        "backend": opts.backend,
        "policy": params.get("policy", {}).get("policy"),
        "task": params.get("sim_bridge", {}).get("task") if opts.backend == "sim" else None,
        "executor": "one process per node" if opts.processes else "one process, single-threaded executor",
        "duration_s": opts.duration,
        "wall_s": round(seconds, 1),
        "task_success": {
            "episodes": episodes,
            "successes": successes,
            "success_rate": round(successes / episodes, 3) if episodes else None,
            # Held by a latched guard (a fall, the e-stop) until a person resets it: not the policy's.
            "episodes_under_latch": int(_num(bridge.get("episodes_under_latch", 0))) if bridge else 0,
            "sim_time_s": _num(bridge.get("sim_time")),
            "simulated_s": _num(bridge.get("simulated_total")),
        },
        "interventions": {
            "filter_steps": int(_num(safety.get("steps", 0))),
            "steps_with_intervention": int(_num(safety.get("interventions", 0))),
            "safe_action_steps": int(_num(safety.get("mode_safe", 0))),
            "watchdog_trips": int(_num(safety.get("watchdog_trips", 0))),
            "rejected_commands": int(_num(safety.get("rejected", 0))),
            "max_change": _num(safety.get("max_change_total")),
            "by_filter": acted,
        },
        "latency_ms": {
            "state_to_command": lat(policy, "state_to_command"),
            "inference": lat(policy, "inference"),
            "safety_filter": lat(safety, "processing"),
            "sim_step": lat(bridge, "step"),
        },
        **({"hardware": _hardware_figures(stats["hardware_bridge"])} if stats.get("hardware_bridge") else {}),
        "scheduling": {name: str(s["scheduling"]) for name, s in stats.items() if "scheduling" in s},
        "policy_ticks": int(_num(policy.get("ticks", 0))),
        "deadline_misses": {  # each a count of misses (the verdict adds them up)
            "policy_ticks_late": int(_num(policy.get("deadline_misses", 0))),
            "policy_ticks_skipped": int(_num(policy.get("skipped", 0))),
            "command_deadline": int(_num(bridge.get("command_deadline_misses", 0))),
            "sim_step_overruns": int(_num(bridge.get("step_overruns", 0))),
        },
    }


def _hardware_figures(bridge: dict) -> dict[str, Any]:
    """The hardware bridge's commands, the backend's link counters, its phase and the
    pre-flight verdict."""
    keep = ("commands_", "link_", "deadman_", "states_", "publish_", "state_age", "preflight_runs",
            "first_enable_requested_at")
    out: dict[str, Any] = {k: _num(v) for k, v in bridge.items() if k.startswith(keep)}
    out.update({k: str(bridge[k]) for k in ("phase", "reason", "preflight", "preflight_failed", "preflight_checks")
                if k in bridge})
    return out
