"""The Go2's ``rt/lowcmd`` writer under load: its emulator in a process of its own, the
backend in this one (the bridge's process), and N CPU-bound competitors at normal
priority, without and with real-time scheduling (``sim2real bench go2 --load N``).

This process plays the hardware bridge: the backend's state thread (frames parsed, leg
odometry) and an executor stand-in that holds the GIL 1 ms in every 5 (a ROS executor
publishing state and serving callbacks) and hands the backend the filtered command every
20 ms; with real-time scheduling on, that thread runs at
:data:`~sim2real.hardware.realtime.EXECUTOR_PRIORITY`, as the graph's executors do.
Per case, over the measurement window: the writer's rate, its interval jitter
``|dt - 2 ms|`` and lateness (p99), deadline misses (a write more than 1 ms late) and
overruns, the watchdog trips (the link dropping the robot to damping: stale command,
stale state; the executor enables it again), ``rt/lowstate`` as this process receives
it, and the emulator's tick jitter (its whole run).

After the window, with the backend closed and the competitors still running, a reference
shows why the writer is a process of its own: a 500 Hz thread in this process, scheduled
as the writer is, doing nothing but sleep to its deadlines beside the executor stand-in
(it still needs the GIL).
"""

from __future__ import annotations

import argparse
import select
import signal
import subprocess
import sys
import threading
import time
from typing import Any

from sim2real.bench import load as L
from sim2real.commands.output import emit_json, status_line, stdout

HELP = "Go2 rt/lowcmd writer (500 Hz) beside N CPU-bound competitors, with and without real-time scheduling"
PERIOD = 0.002


def _start_emulator(domain: int) -> subprocess.Popen[str]:
    proc = subprocess.Popen([sys.executable, "-m", "sim2real.hardware.emulator.go2_serve", "--domain-id",
                             str(domain)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    end = time.monotonic() + 120
    assert proc.stderr is not None
    while time.monotonic() < end:
        if select.select([proc.stderr], [], [], 0.5)[0]:
            line = proc.stderr.readline()
            if line.strip() == "ready":
                return proc
            if not line and proc.poll() is not None:
                break
    proc.kill()
    raise RuntimeError("the Go2 emulator did not start")


def _stop_emulator(proc: subprocess.Popen[str]) -> dict[str, Any]:
    import json

    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
    out, _ = proc.communicate(timeout=30)
    lines = out.strip().splitlines()
    return json.loads(lines[-1]) if lines else {}


def reference(seconds: float, realtime: bool) -> dict[str, Any]:
    """A 500 Hz loop thread in this process, scheduled as the writer is, beside the executor stand-in."""
    from sim2real.hardware.realtime import WRITER_PRIORITY, realtime_thread
    from sim2real.hardware.timing import PeriodicSchedule, TimingRecord

    stop = threading.Event()
    busy = threading.Thread(target=L.executor_stand_in, args=(stop, None, 4, False), daemon=True)
    busy.start()
    record = TimingRecord(PERIOD, capacity=int(seconds / PERIOD) + 1000)
    try:
        with realtime_thread("reference thread in the bridge's process", WRITER_PRIORITY, cpu=None):
            schedule = PeriodicSchedule(PERIOD, record)
            end = time.monotonic() + seconds
            while time.monotonic() < end:
                schedule.tick(schedule.sleep())
    finally:
        stop.set()
        busy.join(2.0)
    return record.summary()


def measure(load: int, seconds: float, progress: Any) -> dict[str, Any]:
    from sim2real.hardware.go2.backend import Go2Backend
    from sim2real.hardware.realtime import enabled
    from sim2real.sim.quadruped import constants as C

    domain = L.domain_id()
    progress("starting the emulator")
    emulator = _start_emulator(domain)
    backend = Go2Backend("joint_pos", {"domain_id": domain})
    arrivals: list[float] = []
    backend.on_state(lambda m: arrivals.append(m.stamps["joint_states"]))
    # The filtered command; the robot enabled again after a trip.
    driven = L.DrivenBackend(backend, C.DEFAULT_POSE + C.static_knee_offset(), every=4)

    def writer_then_reference(t0: float) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
        writer, status = backend.writer_timing(since=t0), backend.detail()["realtime"]
        driven.stop()
        backend.close()
        progress("reference: a 500 Hz thread in this process")  # the competitors still run
        return writer, status, reference(min(seconds, 10.0), enabled())

    try:
        before, after, t0, t1, (writer, status, ref) = driven.loaded_window(load, seconds, progress, 60.0,
                                                                           writer_then_reference)
    finally:
        driven.stop()
        backend.close()
        emu = _stop_emulator(emulator)
    return {
        "writer": writer, "writer_realtime": status.get("policy", "?"),
        "watchdog_trips": after.get("faults", 0) - before.get("faults", 0),
        "watchdog_trips_by_cause": L.increase(after, before, "faults_"),
        "commands_dropped": after.get("commands_dropped", 0) - before.get("commands_dropped", 0),
        "lowstate_at_host": L.arrivals_summary(arrivals, t0, t1),
        "emulator": {"tick_jitter_ms": emu.get("tick_jitter_ms"), "deadline_misses": emu.get("deadline_misses"),
                     "realtime": (emu.get("realtime") or {}).get("policy")},
        "reference_thread_in_process": ref, **driven.counts,
    }


def add_arguments(p: argparse.ArgumentParser) -> None:
    L.add_arguments(p)


def run(args: argparse.Namespace) -> int:
    from rich.table import Table

    with status_line("benchmarking") as show:
        report = L.run_cases(measure, args.load, args.seconds, idle=not args.no_idle,
                             progress=show, realtime=args.realtime)
    report["robot"] = "quadruped (Unitree Go2 emulator)"
    if args.json:
        emit_json(report)
        return 0
    table = Table(title=f"Go2 rt/lowcmd writer, 500 Hz target, {report['seconds']:.0f} s per case "
                        f"({report['cpu_count']} cores)")
    for col in ("case", "writer Hz", "p99 |dt-2ms| ms", "p99 late ms", "misses", "watchdog trips",
                "lowstate Hz (gap p99 ms)", "in-process thread p99 |dt-2ms| ms", "load avg"):
        table.add_column(col)
    for c in report["cases"]:
        w, ref, low = c["writer"], c["reference_thread_in_process"], c["lowstate_at_host"]
        table.add_row(c["case"], f"{w.get('rate_hz', 0):.1f}", str(w.get("jitter_ms", {}).get("p99")),
                      str(w.get("lateness_ms", {}).get("p99")), str(w.get("deadline_misses")),
                      str(c["watchdog_trips"]), f"{low['rate_hz']} ({low['gap_p99_ms']})",
                      str(ref.get("jitter_ms", {}).get("p99")),
                      f"{c['load_average_before']} -> {c['load_average_after']}")
    stdout.print(table)
    return 0

