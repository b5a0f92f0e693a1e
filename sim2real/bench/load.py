"""What every load benchmark shares: CPU-bound competitors at normal priority, and the
four cases (idle and loaded, each without and with real-time scheduling) run in one go.

A robot's onboard computer is never idle. The competitors stand in for perception,
logging and a browser: ``--load N`` processes of ``while True: pass`` at normal priority
(nice 0), started once the robot's loops run (:data:`SETTLE` s before the window) and
stopped after it, so the start-up is not what is measured. Real-time scheduling is switched per case through
``SIM2REAL_REALTIME`` (:mod:`sim2real.hardware.realtime`), which every process started
for the case inherits.
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
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from sim2real.commands.output import add_json_flag
from sim2real.ros_nodes.process_life import end_with_parent

COMPETITOR = "while True: pass"
SETTLE = 1.0
"""s between starting the competitors and the window: this process starts them, and a
normal-priority thread starting processes holds the GIL while it is preempted, which
every real-time thread of this process then waits for (the bridge's process starts none)."""


def _die_with_parent() -> None:
    """In a competitor: SIGKILL when the benchmark dies, however it dies (Linux)."""
    end_with_parent(signal.SIGKILL)


@contextlib.contextmanager
def competitors(n: int) -> Iterator[list[subprocess.Popen[bytes]]]:
    """``n`` CPU-bound processes at normal priority while the block runs."""
    procs = [subprocess.Popen([sys.executable, "-c", COMPETITOR], stdin=subprocess.DEVNULL,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, preexec_fn=_die_with_parent)
             for _ in range(n)]
    try:
        yield procs
    finally:
        for p in procs:
            p.kill()
        for p in procs:
            p.wait(5)


@contextlib.contextmanager
def realtime_setting(on: bool) -> Iterator[None]:
    """``SIM2REAL_REALTIME`` for this process and every process started in the block."""
    from sim2real.hardware.realtime import ENV

    before = os.environ.get(ENV)
    os.environ[ENV] = "on" if on else "off"
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(ENV, None)
        else:
            os.environ[ENV] = before


def default_load() -> int:
    """Twice as many CPU-bound competitors as cores (the issue's loaded machine)."""
    return 2 * (os.cpu_count() or 1)


Measure = Callable[[int, float, Callable[[str], None]], dict[str, Any]]
"""``measure(load, seconds, progress)``: set the robot's loops up, run ``load``
competitors for a ``seconds`` window (``with competitors(load)``), return the figures."""


def run_cases(measure: Measure, load: int, seconds: float, idle: bool = True,
              progress: Callable[[str], None] = lambda s: None, realtime: str = "both") -> dict[str, Any]:
    """Each case ``measure``d in turn: (idle, loaded) x (without, with real-time scheduling;
    ``realtime`` ``on`` or ``off``: only that)."""
    loads = ([0] if idle and load else []) + [load]
    schedules = {"both": (False, True), "on": (True,), "off": (False,)}[realtime]
    out: dict[str, Any] = {"cpu_count": os.cpu_count(), "load": load, "seconds": seconds, "cases": []}
    for n in loads:
        for rt in schedules:
            label = f"{'idle' if n == 0 else f'{n} competitors'}, real-time {'on' if rt else 'off'}"
            progress(label)
            before = os.getloadavg()[0]
            with realtime_setting(rt):
                row = measure(n, seconds, lambda s, label=label: progress(f"{label}: {s}"))
            out["cases"].append({"case": label, "competitors": n, "realtime": rt,
                                 "load_average_before": round(before, 2),
                                 "load_average_after": round(os.getloadavg()[0], 2), **row})
    return out


def add_arguments(p: argparse.ArgumentParser, seconds: float = 30.0) -> None:
    p.add_argument("--load", type=int, default=default_load(),
                   help="CPU-bound competitors at normal priority (default: 2 per core)")
    p.add_argument("--seconds", type=float, default=seconds, help="measurement window per case")
    p.add_argument("--no-idle", action="store_true", help="skip the idle cases")
    p.add_argument("--realtime", choices=("both", "on", "off"), default="both",
                   help="the cases without and with real-time scheduling (default both)")
    add_json_flag(p)


def domain_id() -> int:
    """The ROS/DDS domain for a benchmark: ``ROS_DOMAIN_ID`` if set, else one from the pid."""
    os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")  # DDS on loopback
    return int(os.environ.get("ROS_DOMAIN_ID") or 1 + os.getpid() % 230)


def executor_stand_in(stop: threading.Event, command: Callable[[], None] | None, every: int,
                      realtime: bool) -> None:
    """The bridge's executor: holds the GIL 1 ms in every 5 ms (publishing state, serving
    callbacks) and calls ``command`` every ``every``-th turn (the filter's commands). With
    ``realtime``, at :data:`~sim2real.hardware.realtime.EXECUTOR_PRIORITY`, as the graph's
    executors run."""
    from sim2real.hardware.realtime import EXECUTOR_PRIORITY, realtime_thread

    with realtime_thread("executor stand-in", EXECUTOR_PRIORITY, cpu=None) if realtime else contextlib.nullcontext():
        turn, next_t = 0, time.monotonic()
        while not stop.is_set():
            end = time.monotonic() + 0.001
            x = 0
            while time.monotonic() < end:
                x += sum(range(20))
            if command is not None and turn % every == 0:
                command()
            turn += 1
            next_t += 0.005
            time.sleep(max(next_t - time.monotonic(), 0.0))


def arrivals_summary(stamps: list[float], start: float, end: float) -> dict[str, Any]:
    """Rate and gaps (ms) of a state stream as this process received it within [start, end]."""
    kept = [t for t in stamps if start <= t <= end]
    gaps = np.diff(kept)
    if len(gaps) == 0:
        return {"rate_hz": 0.0, "gap_p99_ms": None, "gap_max_ms": None}
    return {"rate_hz": round(len(gaps) / max(end - start, 1e-9), 1),
            "gap_p99_ms": round(float(np.percentile(gaps, 99)) * 1e3, 2),
            "gap_max_ms": round(float(gaps.max()) * 1e3, 2)}


def increase(after: dict[str, int], before: dict[str, int], prefix: str = "") -> dict[str, int]:
    """The counters (starting with ``prefix``) that grew between two readings, by how much."""
    return {k.removeprefix(prefix): v - before.get(k, 0) for k, v in after.items()
            if k.startswith(prefix) and isinstance(v, int) and v > before.get(k, 0)}


class DrivenBackend:
    """A vendor backend driven as the hardware bridge drives it: the executor stand-in
    sends ``values`` every ``every``-th turn and enables the robot again after a trip
    (when ``may_enable`` says so), counting ``enables`` and ``enable_refused``.

    :meth:`loaded_window` connects, waits for the robot to be enabled, then measures
    ``seconds`` beside ``load`` competitors; :meth:`stop` ends the stand-in."""

    def __init__(self, backend: Any, values: np.ndarray, every: int,
                 may_enable: Callable[[], bool] = lambda: True) -> None:
        self.backend, self.values, self.may_enable = backend, values, may_enable
        self.counts = {"enables": 0, "enable_refused": 0}
        self._stop = threading.Event()
        from sim2real.hardware.realtime import enabled

        self._executor = threading.Thread(target=executor_stand_in, args=(self._stop, self._command, every, enabled()),
                                          daemon=True)

    def _command(self) -> None:
        from sim2real.hardware.backend import HardwareError, Phase

        if self.backend.phase is Phase.CONNECTED and self.may_enable():
            try:
                self.backend.enable()
                self.counts["enables"] += 1
            except HardwareError:
                self.counts["enable_refused"] += 1
        self.backend.command(self.values)

    def loaded_window(self, load: int, seconds: float, progress: Callable[[str], None], connect_timeout: float,
                      snapshot: Callable[[float], Any]) -> tuple[dict[str, int], dict[str, int], float, float, Any]:
        """``(counters before, counters after, start, end, snapshot(start))``; the snapshot
        is taken while the competitors still run."""
        from sim2real.hardware.backend import Phase

        progress("connecting")
        self.backend.connect(connect_timeout)
        self._executor.start()
        end = time.monotonic() + 20.0
        while self.backend.phase is not Phase.ENABLED and time.monotonic() < end:
            time.sleep(0.05)
        time.sleep(1.0)
        progress(f"{seconds:.0f} s with {load} competitors")
        with competitors(load):
            time.sleep(SETTLE)
            before, t0 = self.backend.counters(), time.monotonic()
            time.sleep(seconds)
            t1 = time.monotonic()
            return before, self.backend.counters(), t0, t1, snapshot(t0)

    def stop(self) -> None:
        self._stop.set()
        if self._executor.is_alive():
            self._executor.join(2.0)
