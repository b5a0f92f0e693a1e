"""Soak: the arm's safety filter in its own process under a 500 Hz state stream for a long
time (default 60 one-minute windows). Per window: the state-in -> command-out p50/p99,
the states not answered, and the filter process's resident memory (RSS). Flat RSS and
flat p99 from the first window to the last are the point: a node that keeps every
latency sample, or summarises a growing list on its control thread, grows in both.

Same driver and timing as ``sim2real bench deploy`` (header stamp at the driver ->
publish at the filter); the filter's ``~/reset_stats`` starts each window afresh.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import threading
import time
from typing import Any

from sim2real.bench.deploy import Driver, _stream, _wait_for_answers
from sim2real.commands.output import add_json_flag, console, emit_json, status_line, stdout

HELP = "safety filter for an hour at 500 Hz: p99 and RSS per minute (flat is the point)"
# Each window also records the 1-minute load average: a p99 step in a loaded window is
# the machine, not the node.


def rss_mb(pid: int) -> float:
    """Resident memory of a process (MB), from /proc."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    return float("nan")


def run_soak(windows: int = 60, window_seconds: float = 60.0, rate_hz: float = 500.0,
             progress: Any = None) -> dict[str, Any]:
    import rclpy
    from rclpy.context import Context
    from rclpy.executors import SingleThreadedExecutor

    os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")  # DDS on loopback
    domain = 1 + (os.getpid() * 17 + 11) % 232
    period = 1.0 / rate_hz
    env = {**os.environ, "ROS_DOMAIN_ID": str(domain)}
    cmd = [sys.executable, "-m", "sim2real.ros_nodes.safety_filter", "--ros-args", "-p", "robot:=arm",
           "-p", "publish_on:=state", "-p", "diagnostics_rate:=2.0", "-p", f"latency_deadline:={period}",
           "-p", f"latch_file:=/tmp/sim2real-soak-latch-{os.getpid()}.json"]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    context = Context()
    rclpy.init(context=context, domain_id=domain)
    executor = SingleThreadedExecutor(context=context)
    driver = Driver(context, echo=False)
    executor.add_node(driver.node)
    spinner = threading.Thread(target=executor.spin, daemon=True)
    spinner.start()
    rows: list[dict[str, float]] = []
    try:
        _wait_for_answers(driver, timeout=60.0)
        _stream(driver, 2.0, period)  # warm-up
        for w in range(windows):
            if progress is not None:
                progress(f"window {w + 1}/{windows} ({window_seconds:.0f} s at {rate_hz:.0f} Hz)")
            driver.reset_stats()
            sent = _stream(driver, window_seconds, period)
            end = time.monotonic()
            stats = driver.latency_after(end + 0.05)
            answered = int(stats["n"])
            rows.append({"window": w + 1, "p50_ms": stats["p50_ms"], "p99_ms": stats["p99_ms"],
                         "max_ms": stats["max_ms"], "states_sent": sent, "unanswered": max(0, sent - answered),
                         "deadline_misses": int(stats.get("over_deadline", 0)) + max(0, sent - answered),
                         "rss_mb": round(rss_mb(proc.pid), 2), "load_average_1min": round(os.getloadavg()[0], 2)})
    finally:
        executor.shutdown(timeout_sec=2.0)
        driver.node.destroy_node()
        spinner.join(timeout=2.0)
        rclpy.shutdown(context=context)
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)
    first, last = rows[0], rows[-1]
    return {"robot": "arm", "rate_hz": rate_hz, "window_seconds": window_seconds, "cpu_count": os.cpu_count(),
            "load_average_1min": round(os.getloadavg()[0], 2), "windows": rows,
            "p99_ratio_last_to_first": round(last["p99_ms"] / first["p99_ms"], 3),
            "rss_growth_mb": round(last["rss_mb"] - first["rss_mb"], 2)}


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--windows", type=int, default=60, help="number of windows (default 60: one hour)")
    p.add_argument("--window-seconds", type=float, default=60.0, help="seconds per window")
    p.add_argument("--rate", type=float, default=500.0, help="state rate (Hz)")
    add_json_flag(p)


def run(args: argparse.Namespace) -> int:
    from rich.table import Table

    if args.windows < 1 or not args.window_seconds > 0:
        console.print("sim2real bench soak: --windows must be >= 1 and --window-seconds > 0")
        return 2
    with status_line("soaking") as show:
        report = run_soak(args.windows, args.window_seconds, args.rate, progress=show)
    if args.json:
        emit_json(report)
        return 0
    table = Table(title=f"Safety filter soak at {report['rate_hz']:.0f} Hz ({report['cpu_count']} cores): "
                        f"p99 last/first {report['p99_ratio_last_to_first']}, RSS growth {report['rss_growth_mb']} MB")
    for col in ("window", "p50 ms", "p99 ms", "max ms", "deadline misses", "RSS MB", "load"):
        table.add_column(col)
    for r in report["windows"]:
        table.add_row(str(r["window"]), f"{r['p50_ms']:.3f}", f"{r['p99_ms']:.3f}", f"{r['max_ms']:.2f}",
                      f"{r['deadline_misses']}/{r['states_sent']}", f"{r['rss_mb']:.1f}", f"{r['load_average_1min']}")
    stdout.print(table)
    return 0
