"""Deployment latency: state message in -> command message out, for the arm's safety
filter driven at 500 Hz, in one process and across processes, next to a bare rclpy
publisher -> subscriber echo measured the same way in the same run (the floor).

A driver publishes ``joint_states`` + ``ee_pose`` at ``rate_hz`` (and a raw command at
the policy's 20 Hz, which keeps the watchdog satisfied). The node under test answers
every state with one message (``publish_on: state``, like a ros2_control update) and
times it: from the state's header stamp (the driver's send time; one clock, one
machine) to the answer's publish. A deadline miss is a state answered later than one
period, or not at all (dropped by the keep-last-1 sensor QoS when the node fell behind).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from typing import Any

import numpy as np

from sim2real.commands.output import add_json_flag, emit_json, status_line, stdout

HELP = "ROS 2 state-in to command-out latency (safety filter vs bare echo), 500 Hz, arm"


def percentiles_ms(seconds: Any, deadline: float = 0.0) -> dict[str, float]:
    from sim2real.ros_nodes.base import percentiles_ms as compute  # rclpy only when the bench runs

    return compute(seconds, deadline)


def _echo_node(context: Any, deadline: float = 0.002) -> tuple[Any, Any]:
    """Bare rclpy: every joint_states message is republished unchanged on ``command``,
    timed like the safety filter (header stamp -> publish), with its ``~/reset_stats``
    service and ``diagnostics``. Returns the node and its latency statistics."""

    from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
    from rclpy.node import Node
    from sensor_msgs.msg import JointState
    from std_srvs.srv import Trigger

    from sim2real.ros_nodes.latency import LatencyStats
    from sim2real.ros_nodes.messages import stamp_to_sec
    from sim2real.ros_nodes.qos import command_qos, sensor_qos, status_qos

    node = Node("echo", context=context)
    latency = LatencyStats(deadline)
    pub = node.create_publisher(JointState, "command", command_qos())
    diag = node.create_publisher(DiagnosticArray, "diagnostics", status_qos())

    def on_state(msg: JointState) -> None:
        pub.publish(msg)
        latency.record(node.get_clock().now().nanoseconds * 1e-9 - stamp_to_sec(msg.header.stamp))

    def reset(request: Any, response: Any) -> Any:
        latency.clear()
        response.success = True
        return response

    def report() -> None:
        values = {f"state_to_command_{k}": v for k, v in percentiles_ms(latency).items()}
        status = DiagnosticStatus(name="echo", values=[KeyValue(key=k, value=str(v)) for k, v in values.items()])
        diag.publish(DiagnosticArray(status=[status]))

    node.create_subscription(JointState, "joint_states", on_state, sensor_qos())
    node.create_service(Trigger, "~/reset_stats", reset)
    node.create_timer(0.5, report)
    return node, latency


def _safety_params(deadline: float) -> list[Any]:
    from rclpy.parameter import Parameter

    return [Parameter("robot", value="arm"), Parameter("publish_on", value="state"),
            Parameter("diagnostics_rate", value=2.0), Parameter("latency_deadline", value=deadline)]


class Driver:
    """Publishes the state stream; reads the node's counters."""

    def __init__(self, context: Any, echo: bool) -> None:
        from diagnostic_msgs.msg import DiagnosticArray
        from geometry_msgs.msg import PoseStamped
        from rclpy.node import Node
        from sensor_msgs.msg import JointState
        from std_msgs.msg import Float64MultiArray
        from std_srvs.srv import Trigger

        from sim2real.ros_nodes import messages as M
        from sim2real.ros_nodes.qos import command_qos, sensor_qos, status_qos
        from sim2real.sim import robot_deployment
        from sim2real.sim.arm import constants as ARM

        self.M = M
        self.target = "echo" if echo else "safety_filter"
        self.node = Node("bench_driver", context=context)
        self.pub_js = self.node.create_publisher(JointState, "joint_states", sensor_qos())
        self.pub_ee = self.node.create_publisher(PoseStamped, "ee_pose", sensor_qos())
        self.pub_raw = self.node.create_publisher(Float64MultiArray, "raw_command", command_qos())
        answer_type = JointState if echo else Float64MultiArray
        self.node.create_subscription(answer_type, "command", self._on_answer, command_qos())
        self.node.create_subscription(DiagnosticArray, "diagnostics", self._on_diag, status_qos())
        self.reset_client = self.node.create_client(Trigger, f"/{self.target}/reset_stats")
        self.names = robot_deployment("arm").joints
        self.q = np.r_[ARM.HOME_QPOS, 0.02, 0.02]
        self.answers = 0
        self.report: tuple[float, dict[str, str]] | None = None

    def _on_answer(self, msg: Any) -> None:
        self.answers += 1

    def _on_diag(self, msg: Any) -> None:
        from sim2real.ros_nodes.messages import node_status

        status = node_status(msg, self.target)
        if status is not None:
            self.report = (time.monotonic(), status[0])

    def latency_after(self, since: float, timeout: float = 5.0) -> dict[str, float]:
        """The state-to-command latency figures of the first diagnostics report of the
        node under test received after ``since`` (``time.monotonic``), waiting up to
        ``timeout`` seconds for it."""
        fresh = _wait(lambda: self.report is not None and self.report[0] > since, timeout)
        report = self.report
        if not fresh or report is None:
            raise RuntimeError(f"no diagnostics from {self.target} after the run")
        return {k.removeprefix("state_to_command_"): float(v) for k, v in report[1].items()
                if k.startswith("state_to_command_")}

    def publish(self, i: int) -> None:
        stamp = self.node.get_clock().now().to_msg()
        self.pub_ee.publish(self.M.pose_stamped(np.array([0.5, 0.0, 0.4]), np.array([0.0, 1.0, 0.0, 0.0]), stamp))
        if i % 25 == 0:  # 20 Hz policy commands at 500 Hz
            self.pub_raw.publish(self.M.command_array(np.r_[np.zeros(6), 0.04]))
        self.pub_js.publish(self.M.joint_state(self.names, self.q, np.zeros(9), None, stamp))

    def reset_stats(self) -> None:
        from std_srvs.srv import Trigger

        if not self.reset_client.wait_for_service(timeout_sec=10.0):
            raise RuntimeError(f"/{self.target}/reset_stats is not available")
        future = self.reset_client.call_async(Trigger.Request())
        end = time.monotonic() + 5.0
        while not future.done() and time.monotonic() < end:
            time.sleep(0.005)


def _start_in_process(context: Any, echo: bool, period: float) -> tuple[Any, Any]:
    """The node under test in this process (echo, or the safety filter configured and
    active) and its latency statistics."""
    from sim2real.ros_nodes.safety_filter import SafetyFilterNode

    if echo:
        return _echo_node(context, period)
    node = SafetyFilterNode(context=context, parameter_overrides=_safety_params(period))
    node.trigger_configure()
    node.trigger_activate()
    return node, node.state_latency


def _start_process(domain: int, echo: bool, period: float) -> subprocess.Popen[bytes]:
    """The node under test as a process of its own on ROS domain ``domain``."""
    env = {**os.environ, "ROS_DOMAIN_ID": str(domain)}
    if echo:
        cmd = [sys.executable, "-m", "sim2real.bench.deploy", "echo"]
    else:
        cmd = [sys.executable, "-m", "sim2real.ros_nodes.safety_filter", "--ros-args", "-p", "robot:=arm",
               "-p", "publish_on:=state", "-p", "diagnostics_rate:=2.0", "-p", f"latency_deadline:={period}"]
    return subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _stop_process(proc: subprocess.Popen[bytes]) -> None:
    """Interrupt the process, killing it if it has not exited within 5 s."""
    proc.send_signal(signal.SIGINT)  # rclpy's handler shuts the node down cleanly
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=5)


def _measure(driver: Driver, in_process: bool, latency: Any, seconds: float, period: float,
             warmup: float, load: int | None = None) -> tuple[int, dict[str, float]]:
    """Warm up, reset the node's statistics, stream for ``seconds``; returns the states sent
    and the latency figures (in process: from ``latency``, else from the node's diagnostics).
    With ``load``: that many CPU-bound competitors run through the window, and the driver
    (the robot's state stream) runs as an emulated robot does (:mod:`sim2real.bench.load`)."""
    from sim2real.bench.load import SETTLE, competitors
    from sim2real.hardware.realtime import EMULATOR_PRIORITY, FIRST_CPU, realtime_thread

    _wait_for_answers(driver, timeout=60.0)
    _stream(driver, warmup, period)
    with (competitors(load) if load is not None else contextlib.nullcontext(),
          realtime_thread("bench state stream", EMULATOR_PRIORITY, FIRST_CPU) if load is not None
          else contextlib.nullcontext()):
        time.sleep(SETTLE if load else 0.0)
        driver.reset_stats()
        sent = _stream(driver, seconds, period)
    end = time.monotonic()
    time.sleep(0.1)
    return sent, percentiles_ms(latency) if in_process else driver.latency_after(end + 0.05)


def _case_row(stats: dict[str, float], sent: int, period: float, report: dict[str, str] | None = None
              ) -> dict[str, Any]:
    """The figures of one case: percentiles, states answered, deadline misses (late or
    unanswered) and, for the safety filter, its watchdog trips (from its diagnostics)."""
    answered = int(stats["n"])
    unanswered = max(0, sent - answered)
    row = {"p50_ms": stats["p50_ms"], "p99_ms": stats["p99_ms"], "max_ms": stats["max_ms"], "states_sent": sent,
           "answered": answered, "unanswered": unanswered,
           "deadline_misses": int(stats.get("over_deadline", 0)) + unanswered, "deadline_ms": round(period * 1e3, 3)}
    if report is not None and "watchdog_trips" in report:
        row["watchdog_trips"] = int(float(report["watchdog_trips"]))
    return row


def _run_case(in_process: bool, echo: bool, seconds: float, rate_hz: float, warmup: float = 2.0,
              load: int | None = None) -> dict[str, Any]:
    """One measurement: the echo or the safety filter, in this process or its own, driven at ``rate_hz``."""
    import rclpy
    from rclpy.context import Context
    from rclpy.executors import SingleThreadedExecutor

    domain = 1 + (os.getpid() * 13 + int(echo) * 3 + int(in_process) * 5) % 232
    context = Context()
    rclpy.init(context=context, domain_id=domain)
    executor = SingleThreadedExecutor(context=context)
    driver = Driver(context, echo)
    executor.add_node(driver.node)
    proc = None
    under_test = latency = None
    period = 1.0 / rate_hz
    if in_process:
        under_test, latency = _start_in_process(context, echo, period)
        executor.add_node(under_test)
    else:
        proc = _start_process(domain, echo, period)
    spinner = threading.Thread(target=executor.spin, daemon=True)
    spinner.start()
    try:
        sent, stats = _measure(driver, in_process, latency, seconds, period, warmup, load)
    finally:
        executor.shutdown(timeout_sec=2.0)
        for n in (driver.node, under_test):
            if n is not None:
                n.destroy_node()
        spinner.join(timeout=2.0)
        rclpy.shutdown(context=context)
        if proc is not None:
            _stop_process(proc)
    return _case_row(stats, sent, period, driver.report[1] if driver.report is not None else None)


def _stream(driver: Driver, seconds: float, period: float) -> int:
    """Publish at the rate for ``seconds``; returns how many states were sent."""
    start = time.perf_counter()
    i = 0
    while time.perf_counter() - start < seconds:
        driver.publish(i)
        i += 1
        _sleep_until(start + i * period)
    return i


def _wait(predicate: Any, timeout: float) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.01)
    return bool(predicate())


def _wait_for_answers(driver: Driver, timeout: float) -> None:
    """Send states slowly until the node under test answers (start-up, discovery)."""
    end = time.monotonic() + timeout
    i = 0
    while time.monotonic() < end and driver.answers < 10:
        driver.publish(i)
        i += 1
        time.sleep(0.02)
    if driver.answers < 10:
        raise RuntimeError("the node under test never answered (is DDS on loopback working?)")


def _sleep_until(deadline: float) -> None:
    remaining = deadline - time.perf_counter()
    if remaining > 0.0005:
        time.sleep(remaining - 0.0004)
    while time.perf_counter() < deadline:
        pass


def run_deploy_bench(seconds: float = 60.0, rate_hz: float = 500.0, progress: Any = None) -> dict[str, Any]:
    """Four measurements of ``seconds`` each: {echo, safety filter} x {one process, across processes}."""
    os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")  # DDS on loopback
    out: dict[str, Any] = {"robot": "arm", "rate_hz": rate_hz, "seconds": seconds, "cpu_count": os.cpu_count(),
                           "load_average_1min": round(os.getloadavg()[0], 2), "cases": {}}
    for where, in_process in (("one_process", True), ("across_processes", False)):
        for what, echo in (("echo_floor", True), ("safety_filter", False)):
            if progress is not None:
                progress(f"{what}, {where.replace('_', ' ')}: {seconds:.0f} s at {rate_hz:.0f} Hz")
            out["cases"][f"{what}/{where}"] = _run_case(in_process, echo, seconds, rate_hz)
    out["load_average_1min_after"] = round(os.getloadavg()[0], 2)
    return out


def run_load_bench(load: int, seconds: float = 30.0, rate_hz: float = 500.0, idle: bool = True,
                   progress: Any = None) -> dict[str, Any]:
    """``--load N``: the safety filter and the echo, each in its own process, beside N
    CPU-bound competitors (idle and loaded, real-time scheduling off and on: :mod:`sim2real.bench.load`)."""
    from sim2real.bench.load import run_cases

    os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")  # DDS on loopback

    def measure(n: int, s: float, say: Any) -> dict[str, Any]:
        say("safety filter, across processes")
        row = {"safety_filter": _run_case(False, False, s, rate_hz, load=n)}
        say("echo floor, across processes")
        return {**row, "echo_floor": _run_case(False, True, s, rate_hz, load=n)}

    out = run_cases(measure, load, seconds, idle, progress or (lambda s: None))
    return {"robot": "arm", "rate_hz": rate_hz, **out}


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--seconds", type=float, default=None,
                   help="measurement window per case (4 cases; default 60 s, with --load 30 s)")
    p.add_argument("--rate", type=float, default=500.0, help="state rate (Hz)")
    p.add_argument("--load", type=int, default=None,
                   help="N CPU-bound competitors at normal priority beside the nodes: idle and loaded, "
                        "real-time scheduling off and on (sim2real bench go2 --help)")
    p.add_argument("--no-idle", action="store_true", help="with --load: skip the idle cases")
    add_json_flag(p)


def _load_table(report: dict[str, Any]) -> Any:
    from rich.table import Table

    table = Table(title=f"State in -> command out at {report['rate_hz']:.0f} Hz across processes, "
                        f"{report['seconds']:.0f} s per case ({report['cpu_count']} cores)")
    for col in ("case", "filter p50 / p99 ms", "filter deadline misses", "watchdog trips", "echo p99 ms",
                "echo deadline misses", "load avg"):
        table.add_column(col)
    for c in report["cases"]:
        f, e = c["safety_filter"], c["echo_floor"]
        table.add_row(c["case"], f"{f['p50_ms']:.3f} / {f['p99_ms']:.3f}", f"{f['deadline_misses']}/{f['states_sent']}",
                      str(f.get("watchdog_trips", "-")), f"{e['p99_ms']:.3f}",
                      f"{e['deadline_misses']}/{e['states_sent']}",
                      f"{c['load_average_before']} -> {c['load_average_after']}")
    return table


def run(args: argparse.Namespace) -> int:
    from rich.table import Table

    if args.load is not None:
        with status_line("benchmarking") as show:
            report = run_load_bench(args.load, args.seconds or 30.0, args.rate, idle=not args.no_idle,
                                    progress=show)
        if args.json:
            emit_json(report)
        else:
            stdout.print(_load_table(report))
        return 0
    with status_line("benchmarking") as show:
        report = run_deploy_bench(args.seconds or 60.0, args.rate, progress=show)
    if args.json:
        emit_json(report)
        return 0
    table = Table(title=f"State in -> command out at {report['rate_hz']:.0f} Hz, {report['seconds']:.0f} s per case "
                        f"({report['cpu_count']} cores, load {report['load_average_1min']})")
    for col in ("case", "p50 ms", "p99 ms", "max ms", "deadline misses", "unanswered"):
        table.add_column(col)
    for name, c in report["cases"].items():
        table.add_row(name, f"{c['p50_ms']:.3f}", f"{c['p99_ms']:.3f}", f"{c['max_ms']:.3f}",
                      f"{c['deadline_misses']}/{c['states_sent']}", str(c["unanswered"]))
    stdout.print(table)
    return 0


def _echo_main() -> int:
    import rclpy
    from rclpy.executors import ExternalShutdownException

    from sim2real.hardware.realtime import EXECUTOR_PRIORITY, realtime_thread

    os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
    rclpy.init()
    node, _latency = _echo_node(None)
    # Scheduled as the graph's executors are (real-time where permitted), so the floor stays a floor.
    with (contextlib.suppress(KeyboardInterrupt, ExternalShutdownException),
          realtime_thread("echo executor", EXECUTOR_PRIORITY, cpu=None)):
        rclpy.spin(node)
    return 0


if __name__ == "__main__" and sys.argv[1:2] == ["echo"]:
    raise SystemExit(_echo_main())
