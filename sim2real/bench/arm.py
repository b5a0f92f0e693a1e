"""The arm's command stream under load: its ros2_control emulator in a process of its own
(the robot's controller manager), the backend in this one (the bridge's process), and N
CPU-bound competitors at normal priority, without and with real-time scheduling
(``sim2real bench arm --load N``).

This process plays the hardware bridge as ``sim2real bench go2`` describes (an executor
stand-in handing the backend a zero Cartesian velocity every 50 ms, at the executors'
real-time priority when it is on). Per case, over the window: the 200 Hz command stream's
ticks (rate, interval jitter, lateness, misses), ``joint_states`` as this process receives
it (rate, gaps: the pre-flight check's stream), the watchdog trips (holds: no command for
0.125 s, stale joint states; the executor enables it again) and the emulator's ticks.
"""

from __future__ import annotations

import argparse
from typing import Any

from sim2real.bench import load as L
from sim2real.commands.output import emit_json, status_line, stdout

HELP = "arm (ros2_control) 200 Hz command stream and joint_states beside N CPU-bound competitors, real-time off and on"


def measure(load: int, seconds: float, progress: Any) -> dict[str, Any]:
    import numpy as np

    from sim2real.hardware.ros2_control.backend import Ros2ControlArm
    from sim2real.ros_nodes.emulation import EmulatorProcess

    progress("starting the emulator")
    emulator = EmulatorProcess("arm", L.domain_id(), mission=False).start()
    backend = Ros2ControlArm("ee_delta", emulator.connect_options)
    arrivals: list[float] = []
    backend.on_state(lambda m: arrivals.append(m.stamps["joint_states"]))
    driven = L.DrivenBackend(backend, np.r_[np.zeros(6), 0.04], every=10)
    try:
        before, after, t0, t1, (stream, detail) = driven.loaded_window(
            load, seconds, progress, 30.0, lambda t0: (backend.stream_timing.summary(since=t0), backend.detail()))
    finally:
        driven.stop()
        backend.close()
        emu = emulator.stop()
    return {"command_stream": stream, "stream_realtime": detail["realtime"].get("policy", "?"),
            "watchdog_trips": after.get("holds", 0) - before.get("holds", 0),
            "last_hold": detail.get("last_hold", {}), "counters": L.increase(after, before),
            "joint_states_at_host": L.arrivals_summary(arrivals, t0, t1),
            "emulator": {"tick_timing": emu.get("tick_timing"), "realtime": (emu.get("realtime") or {}).get("policy")},
            **driven.counts}


def add_arguments(p: argparse.ArgumentParser) -> None:
    L.add_arguments(p)


def run(args: argparse.Namespace) -> int:
    from rich.table import Table

    with status_line("benchmarking") as show:
        report = L.run_cases(measure, args.load, args.seconds, idle=not args.no_idle,
                             progress=show, realtime=args.realtime)
    report["robot"] = "arm (ros2_control emulator, forward position controller)"
    if args.json:
        emit_json(report)
        return 0
    table = Table(title=f"Arm command stream (200 Hz), {report['seconds']:.0f} s per case "
                        f"({report['cpu_count']} cores)")
    for col in ("case", "stream Hz", "p99 |dt-5ms| ms", "misses", "watchdog trips (holds)",
                "joint_states Hz (gap p99 / max ms)", "load avg"):
        table.add_column(col)
    for c in report["cases"]:
        s, js = c["command_stream"], c["joint_states_at_host"]
        table.add_row(c["case"], f"{s.get('rate_hz', 0):.1f}", str(s.get("jitter_ms", {}).get("p99")),
                      str(s.get("deadline_misses")), str(c["watchdog_trips"]),
                      f"{js['rate_hz']} ({js['gap_p99_ms']} / {js['gap_max_ms']})",
                      f"{c['load_average_before']} -> {c['load_average_after']}")
    stdout.print(table)
    return 0
