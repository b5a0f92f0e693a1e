"""How much of the machine its real-time threads use, measured while a graph runs.

Real-time scheduling protects a loop from normal processes, not from other real-time
loops. When the ``SCHED_FIFO``/``SCHED_RR`` threads of the machine together keep its CPUs
busy, the kernel stops all of them for a while to run the starved normal threads: the
classic throttle (``sched_rt_runtime_us`` of every ``sched_rt_period_us``, 95 %) and, on
kernels from 6.12, the fair server, which gives normal threads up to 50 ms of every
second. Every real-time loop then stalls at once, once a second, for tens of
milliseconds: longer than a 60 ms command watchdog allows. Measured on a 2-core machine
running the Go2's emulated stock pairing: real-time threads at 1.86 cores, and
``rt/lowstate`` gaps of 30-83 ms at the same phase of nearly every second
(docs/BENCHMARKS.md). :class:`RealtimeDemand` samples every thread's CPU time from
``/proc`` and reports the real-time threads' share, so a run says when its loops ask for
more than the machine has instead of failing on a watchdog with no cause in sight.
"""

from __future__ import annotations

import glob
import json
import os
import select
import subprocess
import sys
import time
from dataclasses import dataclass

REALTIME_POLICIES = (os.SCHED_FIFO, os.SCHED_RR)
SAFE_SHARE = 0.75
"""Share of the machine's cores that real-time threads may use before a run warns: above
it, one CPU is saturated by them often enough for the kernel to stall them."""


@dataclass(frozen=True)
class ThreadUse:
    pid: int
    tid: int
    process: str
    thread: str
    cores: float
    """CPU seconds per wall second over the measured window."""


@dataclass(frozen=True)
class KernelLimits:
    """What the kernel lets real-time threads have before it stops them for normal ones."""

    rt_runtime_us: int | None
    """``sched_rt_runtime_us`` (-1: no throttling; None: unreadable)."""
    rt_period_us: int | None
    fair_server_ms: tuple[float, ...] | None
    """Each CPU's fair-server runtime in ms of every :attr:`fair_server_period_ms` (0:
    off; None: unreadable, or a kernel before 6.12 that has none)."""
    fair_server_period_ms: float | None
    fair_server_why: str = ""
    """Why the fair server's settings are unknown (empty when read)."""
    release: str = ""
    """The kernel's release (``uname -r``)."""

    def has_fair_server(self) -> bool:
        """Read, or a kernel from 6.12, where it came."""
        return self.fair_server_ms is not None or _kernel_version(self.release) >= (6, 12)

    def stall_ms(self) -> float:
        """The longest the kernel may hold every real-time loop to run normal threads
        (0 when it never does). An unreadable fair server on a kernel that has one
        counts at its default, 50 ms."""
        fair = max(self.fair_server_ms or (FAIR_SERVER_DEFAULT_MS if self.has_fair_server() else 0.0,))
        throttle = 0.0
        if self.rt_runtime_us is not None and self.rt_period_us and self.rt_runtime_us >= 0:
            throttle = (self.rt_period_us - self.rt_runtime_us) / 1e3
        return max(fair, throttle)


FAIR_SERVER_DEFAULT_MS = 50.0
"""The fair server's runtime in every 1000 ms per CPU unless an administrator changed it."""


def _kernel_version(release: str) -> tuple[int, int]:
    parts = [*release.split("-", 1)[0].split("."), "0", "0"][:2]
    return (int(parts[0]), int(parts[1])) if all(p.isdigit() for p in parts) else (0, 0)


def kernel_limits(proc: str = "/proc", debugfs: str = "/sys/kernel/debug") -> KernelLimits:
    """The classic throttle from ``/proc/sys/kernel`` and the fair server (kernel 6.12+)
    from debugfs, where this process may read them."""
    runtime, period = (_read(f"{proc}/sys/kernel/sched_rt_{k}_us") for k in ("runtime", "period"))
    cpus = sorted(glob.glob(f"{debugfs}/sched/fair_server/cpu*"), key=lambda d: int(d.rsplit("cpu", 1)[1]))
    fair: tuple[float, ...] | None = None
    fair_period: float | None = None
    why = ""
    if not cpus:
        why = f"no {debugfs}/sched/fair_server (debugfs not mounted, or a kernel without the fair server)"
    else:
        runtimes = [_read(f"{d}/runtime") for d in cpus]
        periods = [_read(f"{d}/period") for d in cpus]
        if None in runtimes or None in periods:
            why = f"{cpus[0]}/runtime is not readable here (debugfs access refused)"
        else:
            fair = tuple(int(r or 0) / 1e6 for r in runtimes)
            fair_period = max(int(p or 0) for p in periods) / 1e6
    return KernelLimits(int(runtime) if runtime else None, int(period) if period else None, fair, fair_period, why,
                        os.uname().release)


def _read(path: str) -> str | None:
    try:
        with open(path) as f:
            return f.read()
    except OSError:  # the thread ended between the listing and the read
        return None


def thread_times(proc: str = "/proc") -> dict[tuple[int, int], tuple[str, str, float, int]]:
    """(pid, tid) -> (process name, thread name, CPU seconds, scheduling policy) of every
    thread of the machine."""
    tick = os.sysconf("SC_CLK_TCK")
    out: dict[tuple[int, int], tuple[str, str, float, int]] = {}
    for pid in filter(str.isdigit, os.listdir(proc)):
        cmdline = _read(f"{proc}/{pid}/cmdline")
        if cmdline is None:
            continue
        process = _process_name(cmdline)
        try:
            tids = os.listdir(f"{proc}/{pid}/task")
        except OSError:
            continue
        for tid in tids:
            stat = _read(f"{proc}/{pid}/task/{tid}/stat")
            if stat is None:
                continue
            name, fields = stat[stat.index("(") + 1:stat.rindex(")")], stat[stat.rindex(")") + 2:].split()
            # fields from the state (3rd of stat): utime 14th, stime 15th, policy 41st
            out[(int(pid), int(tid))] = (process, name, (int(fields[11]) + int(fields[12])) / tick, int(fields[38]))
    return out


def _process_name(cmdline: str) -> str:
    """``python -m sim2real.ros_nodes.policy ...`` -> ``sim2real.ros_nodes.policy``."""
    args = [a for a in cmdline.split("\0") if a]
    if "-m" in args[:-1]:
        return args[args.index("-m") + 1]
    return os.path.basename(args[0]) if args else "?"


class RealtimeDemand:
    """Samples the machine's threads once a second from :meth:`start` to :meth:`stop`
    (a thread that ends keeps the CPU time of its last sample; one born in the window
    counts from its birth).

    The sampling runs in a process of its own (``python -m`` this module), never in the
    measured one: reading every thread's ``/proc`` entry is Python work under the
    interpreter lock, and a normal-priority thread preempted while holding it delays the
    process's real-time loops (``benchmarks/gil_neighbours.py``: a 2 ms SCHED_FIFO loop beside
    4 CPU-bound competitors was up to 4.7-7.2 ms late with the sampler in its process,
    0.8-1.0 ms with it in its own; docs/BENCHMARKS.md)."""

    def __init__(self, period: float = 1.0) -> None:
        self.period = period
        self._first: dict[tuple[int, int], float] = {}
        self._last: dict[tuple[int, int], tuple[str, str, float, int]] = {}
        self._realtime: set[tuple[int, int]] = set()
        self._sampler: subprocess.Popen[str] | None = None
        self._window = (0.0, 0.0)
        self._stopped = False
        self.error = ""
        """Why there are no figures (the sampler failed), else empty."""

    def start(self) -> RealtimeDemand:
        """Starts the sampler; returns once it has taken its first sample (the window's start)."""
        self._sampler = subprocess.Popen([sys.executable, "-m", __name__, str(self.period)], text=True,
                                         stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        assert self._sampler.stdout is not None
        if self._sampler.stdout.readline().strip() != "sampled":
            raise RuntimeError("the real-time demand sampler did not start")
        self._window = (time.monotonic(), 0.0)
        return self

    def stop(self) -> None:
        """End the window (again: nothing)."""
        if self._stopped or self._sampler is None:
            return
        self._stopped = True
        sampler, self._window = self._sampler, (self._window[0], time.monotonic())
        try:
            out, _ = sampler.communicate("stop\n", timeout=30)  # its last sample, then everything it saw
            data = json.loads(out)
        except (subprocess.TimeoutExpired, ValueError) as exc:  # a measurement lost, never the run
            sampler.kill()
            sampler.wait()
            self.error = f"the sampler gave no figures: {exc!r}"
            return
        self._first = {_key(k): v for k, v in data["first"].items()}
        self._last = {_key(k): tuple(v) for k, v in data["last"].items()}
        self._realtime = {_key(k) for k in data["realtime"]}

    @property
    def seconds(self) -> float:
        """Wall seconds of the measured window (so far, before :meth:`stop`)."""
        end = self._window[1] or time.monotonic()
        return max(end - self._window[0], 1e-9)

    def threads(self) -> list[ThreadUse]:
        """The real-time threads, busiest first."""
        seconds = self.seconds
        uses = [ThreadUse(*k, self._last[k][0], self._last[k][1], (self._last[k][2] - self._first[k]) / seconds)
                for k in self._realtime]
        return sorted(uses, key=lambda u: -u.cores)

    def summary(self, busiest: int = 8) -> dict[str, object]:
        """``cores`` the real-time threads used, the machine's ``cores``, ``warning`` when
        they used more than :data:`SAFE_SHARE` of them, the longest the kernel may stop
        them all (:meth:`KernelLimits.stall_ms`), and the busiest threads."""
        threads, machine = self.threads(), os.cpu_count() or 1
        used = round(sum(u.cores for u in threads), 2)  # the figure reported is the one judged
        warning = ""
        if used > SAFE_SHARE * machine:
            warning = (f"real-time threads used {used:.2f} of {machine} cores: the kernel stalls all of them "
                       "for tens of ms about once a second to run normal threads (watchdogs will trip); "
                       "run on more cores or fewer real-time loops")
        if self.error:
            warning = f"real-time demand not measured: {self.error}"
        return {"cores": used, "machine_cores": machine, "warning": warning,
                "kernel_stall_ms": kernel_limits().stall_ms(),
                "busiest": [{"process": u.process, "thread": u.thread, "cores": round(u.cores, 3)}
                            for u in threads[:busiest] if u.cores >= 0.005]}


def _key(text: str) -> tuple[int, int]:
    pid, tid = text.split(":")
    return int(pid), int(tid)


def _sample_until_stopped(period: float) -> None:
    """The sampler process: a sample now (then ``sampled`` on stdout), one every ``period``
    s until a line (or the end) on stdin, one last, then what it saw as one JSON object."""
    first: dict[tuple[int, int], float] = {}
    last: dict[tuple[int, int], tuple[str, str, float, int]] = {}
    realtime: set[tuple[int, int]] = set()

    def sample(started: bool) -> None:
        for key, entry in thread_times().items():
            # A thread first seen after the window began was born in it: all its CPU counts
            # (from its first sample on, a thread's first moments would be lost, however
            # long the sampler itself waited for a CPU).
            first.setdefault(key, 0.0 if started else entry[2])
            last[key] = entry
            if entry[3] in REALTIME_POLICIES:  # real-time at any sample: it counts as real-time
                realtime.add(key)

    # Started from a real-time thread it would have inherited the policy: it stays normal.
    os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))
    sample(started=False)
    print("sampled", flush=True)
    while not select.select([sys.stdin], [], [], period)[0]:
        sample(started=True)
    sample(started=True)
    print(json.dumps({"first": {f"{p}:{t}": v for (p, t), v in first.items()},
                      "last": {f"{p}:{t}": v for (p, t), v in last.items()},
                      "realtime": [f"{p}:{t}" for p, t in realtime]}))


if __name__ == "__main__":
    _sample_until_stopped(float(sys.argv[1]))
