"""The Crazyflie's setpoint stream under load: its emulator in a process of its own (the
drone), the backend in this one (the bridge's process), and N CPU-bound competitors at
normal priority, without and with real-time scheduling (``sim2real bench crazyflie --load N``).

This process plays the hardware bridge as ``sim2real bench go2`` describes (an executor
stand-in handing the backend the filtered command every 20 ms, at the executors'
real-time priority when it is on). The drone idles on its pad at 80 % of hover thrust,
so the window measures the link, not a flight. Per case, over the window: the setpoint
stream's ticks (its 4 ms watchdog schedule: rate, interval jitter, lateness, misses),
the log stream as this process receives it (rate, gaps: the state the policy sees), the
watchdog trips (the firmware's landing handed over: stale command, stale state, lost
link; the executor enables it again once it has landed) and the emulator's tick timing.
"""

from __future__ import annotations

import argparse
from typing import Any

from sim2real.bench import load as L
from sim2real.commands.output import emit_json, status_line, stdout

HELP = "Crazyflie setpoint stream and log stream beside N CPU-bound competitors, real-time off and on"


def measure(load: int, seconds: float, progress: Any) -> dict[str, Any]:
    import numpy as np

    from sim2real.hardware.backend import Phase
    from sim2real.hardware.crazyflie.backend import CrazyflieBackend
    from sim2real.ros_nodes.emulation import EmulatorProcess
    from sim2real.sim.drone import constants as C

    progress("starting the emulator")
    emulator = EmulatorProcess("drone", L.domain_id(), mission=False).start()
    backend = CrazyflieBackend("ctbr", emulator.connect_options)
    arrivals: list[float] = []
    backend.on_state(lambda m: arrivals.append(max(m.stamps.values())))
    idle = np.array([0.8 * C.HOVER_THRUST, 0.0, 0.0, 0.0])
    # Enabled again after a trip unless the firmware is landing it.
    driven = L.DrivenBackend(backend, idle, every=4, may_enable=lambda: backend.health().detail["landing"] is None)
    try:
        before, after, t0, t1, (stream, detail) = driven.loaded_window(
            load, seconds, progress, 30.0,
            lambda t0: (backend.stream_timing.summary(since=t0), backend.health().detail))
    finally:
        driven.stop()
        if backend.phase is not Phase.ESTOPPED:
            backend.estop("benchmark over")  # the drone sits on its pad: stop the motors at once
        backend.close()
        emu = emulator.stop()
    return {"setpoint_stream": stream, "stream_realtime": detail["realtime"].get("policy", "?"),
            "watchdog_trips": after.get("landings", 0) - before.get("landings", 0),
            "counters": L.increase(after, before), "log_stream_at_host": L.arrivals_summary(arrivals, t0, t1),
            "emulator": {"tick_timing": emu.get("tick_timing"), "realtime": (emu.get("realtime") or {}).get("policy")},
            **driven.counts}


def add_arguments(p: argparse.ArgumentParser) -> None:
    L.add_arguments(p)


def run(args: argparse.Namespace) -> int:
    from rich.table import Table

    with status_line("benchmarking") as show:
        report = L.run_cases(measure, args.load, args.seconds, idle=not args.no_idle,
                             progress=show, realtime=args.realtime)
    report["robot"] = "drone (Crazyflie emulator, CRTP over UDP through cflib)"
    if args.json:
        emit_json(report)
        return 0
    table = Table(title=f"Crazyflie setpoint stream (250 Hz watchdog schedule), {report['seconds']:.0f} s per case "
                        f"({report['cpu_count']} cores)")
    for col in ("case", "stream Hz", "p99 |dt-4ms| ms", "misses", "watchdog trips", "log Hz (gap p99 / max ms)",
                "load avg"):
        table.add_column(col)
    for c in report["cases"]:
        s, log = c["setpoint_stream"], c["log_stream_at_host"]
        table.add_row(c["case"], f"{s.get('rate_hz', 0):.1f}", str(s.get("jitter_ms", {}).get("p99")),
                      str(s.get("deadline_misses")), str(c["watchdog_trips"]),
                      f"{log['rate_hz']} ({log['gap_p99_ms']} / {log['gap_max_ms']})",
                      f"{c['load_average_before']} -> {c['load_average_after']}")
    stdout.print(table)
    return 0
