"""The deployment graph without a ROS 2 installation: the same nodes and the same
``config/<robot>.yaml`` a launch file uses, either in one process (a multi-threaded
executor) or one process per node (``python -m sim2real.ros_nodes.<node>``).

Each graph gets its own DDS domain (``domain_id``); callers keep DDS on loopback
with ``ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST``.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import yaml

from sim2real.errors import GraphError
from sim2real.hardware.realtime import EXECUTOR_PRIORITY
from sim2real.sim.core.errors import ConfigError

NODE_MODULES: dict[str, str] = {
    "sim_bridge": "sim2real.ros_nodes.sim_bridge",
    "hardware_bridge": "sim2real.ros_nodes.hardware_bridge",
    "safety_filter": "sim2real.ros_nodes.safety_filter",
    "policy": "sim2real.ros_nodes.policy",
    "recorder": "sim2real.ros_nodes.recorder",
    "camera": "sim2real.ros_nodes.camera",
    "console": "sim2real.ros_nodes.console",
    "planner": "sim2real.ros_nodes.planner",
}
START_ORDER = ("sim_bridge", "hardware_bridge", "safety_filter", "planner", "policy", "recorder", "console")
"""Robot first, then its guard, then whatever commands it (the planner before the
policy that follows its path)."""


STOP_GRACE = 5.0
"""s a node has after SIGTERM before it is killed (launch's default ``sigterm_timeout``)."""


def stop_grace(name: str, robot: str, backend: str = "") -> float:
    """s node ``name`` of ``robot``'s graph has after SIGTERM: a hardware bridge's backend
    (``backend``, default the robot's own) needs the time its ``close`` takes to leave the
    robot at rest (a Go2 lying down and handed back to sport mode, a Crazyflie's
    landing), or the kill cuts it short."""
    if name != "hardware_bridge":
        return STOP_GRACE
    from sim2real.hardware.backend import backend_class
    from sim2real.sim import robot_deployment

    cls = backend_class(backend or robot_deployment(robot).real_backend)
    return max(STOP_GRACE, cls.close_seconds + 3.0)


def config_dir() -> Path:
    """``config/`` of the source tree, else ``share/sim2real/config`` of a pip install
    (``sys.prefix``) or of a colcon install (the ament index)."""
    here = Path(__file__).resolve().parents[1] / "config"
    if here.is_dir():
        return here
    installed = Path(sys.prefix) / "share" / "sim2real" / "config"
    if installed.is_dir():
        return installed
    try:
        from ament_index_python.packages import get_package_share_directory

        return Path(get_package_share_directory("sim2real")) / "config"
    except Exception:  # no ament index: report the source-tree path in the error
        return here


def load_config(path: str | Path, domain_id: int | None = None, namespace: str = "/") -> dict[str, dict[str, Any]]:
    """``{node: {parameter: value}}`` for the graph's nodes (in ``namespace``) from a ROS
    parameter file, read by rcl itself (the parser ``ros2 launch`` and ``--params-file``
    use): ``/**`` and ``/**/NODE`` sections, namespaces (``/robot1/NODE`` or nested
    ``robot1: {NODE: ..}``) matched against each node's fully qualified name, a node's
    own section winning over a wildcard, nested mappings as dotted names (``limits:
    {max_tilt: ..}`` is ``limits.max_tilt``, which the node refuses as unknown), quoted
    strings kept strings (:mod:`sim2real.ros_nodes.params_file`).

    Raises:
        ConfigError: naming the file: it is missing or malformed, or a section of it
            reaches no node of the graph.
    """
    from sim2real.ros_nodes.params_file import load_params_file

    return load_params_file(path, NODE_MODULES, namespace, domain_id)


def sections(path: str | Path, namespace: str = "/") -> set[str]:
    """The graph's nodes a parameter file has a section of their own for (``/**/NODE``
    and ``/robot1/NODE`` count where they reach the node; ``/**`` alone does not)."""
    from sim2real.ros_nodes.params_file import fully_qualified, read_sections

    return {name for s in read_sections(path) for name in NODE_MODULES
            if s.own(name) and s.applies_to(fully_qualified(name, namespace))}


def merge(config: dict[str, dict[str, Any]], overrides: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    out = {k: dict(v) for k, v in config.items()}
    for node, values in overrides.items():
        out.setdefault(node, {}).update(values)
    return out


NODE_CLASSES = {"sim_bridge": "SimBridge", "hardware_bridge": "HardwareBridge", "safety_filter": "SafetyFilterNode",
                "policy": "PolicyNode", "recorder": "Recorder", "camera": "CameraNode",
                "console": "ConsoleNode", "planner": "PlannerNode"}


def node_class(name: str) -> type:
    import importlib

    return getattr(importlib.import_module(NODE_MODULES[name]), NODE_CLASSES[name])


def _parameter(parameter: Any, node: str, name: str, value: Any) -> Any:
    """A ROS parameter, or a one-line error naming it (a list mixing types, a mapping)."""
    try:
        return parameter(name, value=value)
    except TypeError as exc:
        raise ConfigError(f"{node}.{name}", f"{value!r} is not a ROS parameter value ({exc})") from None


def check_parameters(params: dict[str, dict[str, Any]], nodes: list[str], domain_id: int, config: str | Path,
                     overrides: dict[str, dict[str, Any]]) -> None:
    """Declare each of ``nodes``' parameters as the node itself does (its class, in a
    private context, never configured), so a bad value is an error before any node
    starts, under ``sim2real deploy`` and ``ros2 launch`` alike, naming where the value
    came from: ``--set``, or the parameter file ``config`` and its section.

    Raises:
        ConfigError: a value of the wrong type or out of range.
    """
    from sim2real.ros_nodes.params_file import discovery_off, origin

    try:
        # Invisible nodes: with discovery on, a second `safety_filter` (with a `command`
        # publisher) and the rest appeared for an instant in the domain of the graph about
        # to start, or of one already running.
        with discovery_off():
            graph = InProcessGraph(params, nodes, domain_id)
        graph.shutdown()
    except ConfigError as exc:
        node, _, key = exc.field.partition(".")
        source = "--set" if key in overrides.get(node, {}) else origin(config, node, key) if key else ""
        raise exc.with_source(source) from None


class InProcessGraph:
    """The nodes in this process, in their own context, on two executors: the control
    path's nodes (``executor_priority`` EXECUTOR_PRIORITY: bridge, filter, policy) on one that runs at
    real-time priority where permitted, every other node (cameras, recorder, console,
    mission) on one at normal priority. One shared executor made the cameras' rendering
    real-time too: it took a core from every normal process (the HIL actor beside the
    graph went 0.5 s without a message).

    Args:
        params: ``{node: {parameter: value}}`` (config file merged with overrides).
        nodes: Which nodes to run.
        domain_id: DDS domain of this graph.
        threads: Executor threads (``executor="multi"`` only).
        executor: ``"single"`` (default), ``"multi"`` or ``"events"``. rclpy's
            Python ``MultiThreadedExecutor`` re-scans every pending future on each
            spin; with a 200-500 Hz bridge timer it spent ~70 % of the CPU in that
            bookkeeping and the quadruped bridge ran at 1 % of real time, while the
            single-threaded executor keeps all three nodes at real time.
    """

    def __init__(self, params: dict[str, dict[str, Any]], nodes: list[str], domain_id: int, threads: int = 2,
                 executor: str = "single") -> None:
        import rclpy
        from rclpy.context import Context
        from rclpy.parameter import Parameter

        self.executor_kind, self.threads = executor, threads
        self.executors: dict[str, Any] = {}
        """``control`` and ``other`` (see the class)."""
        self.spinners: dict[str, threading.Thread] = {}
        self.error: Exception | None = None
        self._stopping = threading.Event()
        """Set by :meth:`shutdown`: what a spinning executor raises from then on is its
        teardown (rclpy drops an executor's guard condition while spin() may still touch
        it), not a node's failure."""
        self.context = Context()
        rclpy.init(context=self.context, domain_id=domain_id)
        self.nodes: dict[str, Any] = {}
        try:
            for name in START_ORDER:
                if name in nodes:
                    overrides = [_parameter(Parameter, name, k, v) for k, v in params.get(name, {}).items()
                                 if k != "autostart"]
                    self.nodes[name] = node_class(name)(context=self.context, parameter_overrides=overrides)
        except Exception:
            self.shutdown()
            raise

    def start(self) -> None:
        """Configure and activate every node (robot first), then spin in a thread."""
        from rclpy.lifecycle import TransitionCallbackReturn

        for name, node in self.nodes.items():
            if node.trigger_configure() != TransitionCallbackReturn.SUCCESS:
                raise ConfigError(name, f"cannot start: {node.load_error or 'configure failed'}")
            if node.trigger_activate() != TransitionCallbackReturn.SUCCESS:
                raise ConfigError(name, "cannot start: activate failed")
        self.executors = {"control": self._make_executor(), "other": self._make_executor()}
        for node in self.nodes.values():
            self.add_node(node)
        for role, executor in self.executors.items():
            self.spinners[role] = threading.Thread(target=self._spin, args=(role, executor), daemon=True,
                                                   name=f"graph {role} executor")
            self.spinners[role].start()

    def _make_executor(self) -> Any:
        from sim2real.ros_nodes.base import make_executor

        return make_executor(self.executor_kind, self.context, self.threads)

    def _spin(self, role: str, executor: Any) -> None:
        from sim2real.ros_nodes.base import executor_realtime

        try:
            if role == "control":
                with executor_realtime("graph", list(self.nodes.values())):
                    executor.spin()
            else:
                executor.spin()
        except Exception as exc:  # a callback raised: keep it for the caller, the graph is dead
            if self._stopping.is_set():
                return
            self.error = exc
            sys.stderr.write(f"executor stopped: {exc!r}\n")

    def add_node(self, node: Any) -> None:
        control = getattr(node, "executor_priority", None) == EXECUTOR_PRIORITY
        self.executors["control" if control else "other"].add_node(node)

    def remove_node(self, node: Any) -> None:
        for executor in self.executors.values():
            executor.remove_node(node)

    def raise_if_dead(self) -> None:
        """Raise ``GraphError`` when the executor has stopped (every node of the graph
        with it: nothing commands the robot any more)."""
        if self.error is not None or any(not t.is_alive() for t in self.spinners.values()):
            raise GraphError(f"the graph's executor stopped: {self.error!r}" if self.error is not None
                             else "the graph's executor stopped")

    def shutdown(self) -> None:
        import rclpy

        self._stopping.set()
        for executor in getattr(self, "executors", {}).values():
            executor.shutdown(timeout_sec=2.0)
        # Let spin() return before the nodes go: destroying a node the spinning thread
        # still waits on raises InvalidHandle there.
        for thread in getattr(self, "spinners", {}).values():
            if thread.is_alive():
                thread.join(timeout=2.0)
        for node in getattr(self, "nodes", {}).values():
            node.destroy_node()
        if self.context.ok():
            rclpy.shutdown(context=self.context)


class ProcessGraph:
    """One OS process per node, each ``python -m sim2real.ros_nodes.<node> --ros-args
    --params-file FILE`` with ``autostart: true``."""

    def __init__(self, params: dict[str, dict[str, Any]], nodes: list[str], domain_id: int,
                 log_dir: str | Path | None = None) -> None:
        self.params = params
        self.nodes = [n for n in START_ORDER if n in nodes]
        self.env = {**os.environ, "ROS_DOMAIN_ID": str(domain_id)}
        self.env.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
        self.tmp = tempfile.TemporaryDirectory(prefix="sim2real-graph-")
        self.log_dir = Path(log_dir) if log_dir else Path(self.tmp.name)
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self.procs: dict[str, subprocess.Popen] = {}

    def start(self) -> None:
        doc = {n: {"ros__parameters": {**self.params.get(n, {}), "autostart": True}} for n in self.nodes}
        path = Path(self.tmp.name) / "params.yaml"
        path.write_text(yaml.safe_dump(doc))
        for name in self.nodes:
            log = open(self.log_dir / f"{name}.log", "w")  # noqa: SIM115 (closed with the process)
            cmd = [sys.executable, "-m", NODE_MODULES[name], "--ros-args", "--params-file", str(path)]
            self.procs[name] = subprocess.Popen(cmd, env=self.env, stdout=log, stderr=subprocess.STDOUT)

    def raise_if_dead(self) -> None:
        """Raise ``ConfigError`` naming the first node process that has exited, with the
        last line of its log (a node that cannot load its policy exits at start)."""
        for name, proc in self.procs.items():
            code = proc.poll()
            if code is not None:
                lines = [ln for ln in self.log(name).splitlines() if ln.strip()]
                raise ConfigError(name, f"exited with code {code}: {lines[-1] if lines else 'no output'}")

    def kill(self, name: str) -> None:
        """Kill one node abruptly (fault injection)."""
        proc = self.procs[name]
        proc.kill()
        proc.wait(timeout=5)

    def log(self, name: str) -> str:
        return (self.log_dir / f"{name}.log").read_text(errors="replace")

    def shutdown(self) -> None:
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.terminate()
        end = time.monotonic()
        for name, proc in self.procs.items():
            try:
                bridge = self.params.get(name, {})
                grace = stop_grace(name, str(bridge.get("robot", "")), str(bridge.get("backend", "")))
                proc.wait(timeout=max(0.1, end + grace - time.monotonic()))
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=5)
        self.tmp.cleanup()
