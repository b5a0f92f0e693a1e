"""The one place a loop is made real-time: scheduling, CPU, memory, garbage collector, deadlines.

A robot's computer is never idle, and Linux's normal scheduler shares a core fairly: a
2 ms loop beside two CPU-bound processes per core waits its turn for several
milliseconds. :func:`realtime_thread` gives the calling thread what a real-time control
loop needs, where the system permits it, and says what it got (:class:`RealtimeStatus`):

* ``SCHED_FIFO`` at a documented priority (:data:`WRITER_PRIORITY` ...): the thread runs
  as soon as it wakes, before every normal process. All priorities here are below 50,
  the priority of interrupt threads on a PREEMPT_RT kernel, so the network interrupt
  that carries the robot's state is never starved by the loop waiting for it;
* one CPU of its own where the machine has more than one (the host's writers the last,
  emulated robots the first: :data:`LAST_CPU`, :data:`FIRST_CPU`);
* ``mlockall(MCL_CURRENT | MCL_FUTURE | MCL_ONFAULT)``: no page of the process is ever
  swapped out (``MCL_ONFAULT``: pages are locked as they are touched, so a large process
  does not commit its whole address space);
* ``RLIMIT_RTTIME`` (:data:`RT_CPU_LIMIT`): a real-time thread that runs without
  blocking for that long (a loop that no longer sleeps) ends its process instead of
  freezing a core; the kernel's own throttling (``sched_rt_runtime_us``, 95 %) is the
  second net;
* ``gc.freeze()``: everything allocated before the loop starts leaves the collector's
  generations, so a collection inside the loop scans only what the loop allocated
  (:class:`QuietCollector` goes further in a process that runs nothing but the loop);
* the GIL's switch interval shortened to :data:`GIL_SWITCH_INTERVAL`, so the loop waits
  at most that long for a thread that is running Python.

Without the privilege (``CAP_SYS_NICE``, or an ``rtprio`` limit: docs/deployment.md,
"Real-time priority on a robot computer") the loop runs at normal priority, one warning
is logged per process, and the status says why (``sim2real deploy check`` shows it).
``SIM2REAL_REALTIME=off`` turns all of it off (the benchmarks' comparison runs).

Python's GIL limits what a real-time *thread* can do: it still needs the GIL, and a
normal-priority thread holding it is preempted by the competing processes while the
real-time thread waits (measured: p99 lateness 0.1 ms alone, 61 ms beside one busy
thread, with 4 CPU-bound competitors on 2 cores). A loop that must hold its period
beside GIL-heavy work runs in a process of its own (the Go2's writer:
:mod:`sim2real.hardware.go2.link`).

:class:`~sim2real.hardware.timing.PeriodicSchedule` sleeps to absolute deadlines (``clock_nanosleep`` with
``TIMER_ABSTIME``) and records each tick's lateness and interval in preallocated arrays
(:class:`~sim2real.hardware.timing.TimingRecord`), from which the rate, jitter and deadline misses are reported.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import gc
import logging
import os
import resource
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from typing import Any

WRITER_PRIORITY = 45
"""SCHED_FIFO priority of the loops that write to a robot at its own rate (the Go2's
``rt/lowcmd``, the Crazyflie's setpoint stream, the arm's command stream)."""
EMULATOR_PRIORITY = 40
"""An emulated robot's loop (a real robot runs it on a computer of its own): below the writers."""
EXECUTOR_PRIORITY = 30
"""Suggested for the ROS 2 executors of the policy -> filter -> bridge path: below the
loops that talk to the robot, above every normal process."""
OPERATOR_PRIORITY = 28
"""The correction console's web server thread, which receives a person's commands (a
starved receiver reads a held key as released: the dead man holds the robot while the
person still commands it), and its node's executor in a process of its own (the dead
man's tick; a normal-priority thread of the same process stalls the receiver through the
GIL). Below the control path: the filter judges what it sends."""
DDS_THREADS = ("recv", "recvUC", "recvMC", "tev", "dq.user", "dq.builtins")
"""Cyclone DDS's threads on the data path (receiving, timed events, delivery): a loop that
reads or writes DDS waits on locks they hold."""
FAST_DDS_RECEIVE_THREADS = ("dds.udp.", "dds.shm.")
"""Fast DDS's listeners (rclpy's middleware: one thread per UDP or shared-memory port, named
after the port) that hand each arriving message to the executor: at normal priority they
are what a loaded machine delays (an executor at real-time priority then waits for them:
measured p99 60 ms state -> command with 4 competitors on 2 cores; raised, 3.6 ms)."""
NEVER_RAISED = ("dds.shm.wdog",)
"""Threads a helpers' prefix must not catch: Fast DDS's shared-memory watchdog, periodic
housekeeping with no deadline. (Its event threads, ``dds.ev.*``, stay normal too: with every
Fast DDS thread raised, a graph of three processes lost its discovery in 2 of 5 runs.)"""
LAST_CPU, FIRST_CPU = -1, 0
"""CPU choices for :func:`realtime_thread` (an index into the CPUs the process may use)."""
GIL_SWITCH_INTERVAL = 0.0005
"""s: the GIL switch interval in a process that runs a real-time loop (Python's default is
5 ms): a loop that wakes while another thread runs Python gets the GIL within this long."""
RT_CPU_LIMIT = (0.5, 1.0)
"""RLIMIT_RTTIME (soft, hard) in s: CPU time a real-time thread may use without blocking
(the soft limit sends SIGXCPU, which ends a Python process; the hard one SIGKILL)."""
ENV = "SIM2REAL_REALTIME"
"""``off``: never ask for real-time scheduling (everything else: ask)."""

_MCL_CURRENT, _MCL_FUTURE, _MCL_ONFAULT = 1, 2, 4
_log = logging.getLogger("sim2real.realtime")
_lock = threading.Lock()
_statuses: list[RealtimeStatus] = []
_warned = False
_memory: str | None = None
"""'' once memory is locked in this process, else why not (None: not tried yet)."""


@dataclass
class RealtimeStatus:
    """What one loop got. ``realtime`` is true when its thread runs SCHED_FIFO."""

    name: str
    policy: str = "SCHED_OTHER"
    priority: int = 0
    cpus: tuple[int, ...] = ()
    memory_locked: bool = False
    rt_cpu_limit_s: float | None = None
    helpers: tuple[str, ...] = ()
    """Threads of the process raised with it (one priority below): see :func:`realtime_thread`."""
    reason: str = ""
    """Why the loop is not real-time (or what it lacks); empty when it has everything."""
    pid: int = field(default_factory=os.getpid)

    @property
    def realtime(self) -> bool:
        return self.policy == "SCHED_FIFO"

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "cpus": list(self.cpus), "realtime": self.realtime}

    def line(self) -> str:
        """One line for logs and the pre-flight table."""
        if not self.realtime:
            return f"{self.name}: {self.policy} ({self.reason})"
        memory = "memory locked" if self.memory_locked else "memory not locked"
        cpus = f" on CPU {','.join(map(str, self.cpus))}" if self.cpus else ""
        why = f" ({self.reason})" if self.reason else ""
        helpers = f", {', '.join(self.helpers)} at {self.priority - 1}" if self.helpers else ""
        return f"{self.name}: {self.policy} {self.priority}{cpus}, {memory}{helpers}{why}"


def enabled() -> bool:
    """Whether loops ask for real-time scheduling (``SIM2REAL_REALTIME`` is not ``off``)."""
    return os.environ.get(ENV, "on").strip().lower() not in ("off", "0", "false", "no")


def statuses() -> list[RealtimeStatus]:
    """Every status :func:`realtime_thread` returned in this process, oldest first."""
    with _lock:
        return list(_statuses)


@contextlib.contextmanager
def realtime_thread(name: str, priority: int, cpu: int | None = LAST_CPU,
                    helpers: tuple[str, ...] = ()) -> Iterator[RealtimeStatus]:
    """Run the calling thread's block as a real-time loop (see the module); back to normal
    scheduling and its former CPUs after it.

    ``cpu``: an index into the CPUs this process may use (:data:`LAST_CPU`,
    :data:`FIRST_CPU`), or None to leave the affinity alone; ignored on one CPU.
    ``helpers``: names of threads of this process the loop waits on (e.g.
    :data:`DDS_THREADS`, whose locks a DDS read or write takes; a name ending in ``.`` is a
    prefix; ``py:PACKAGE`` names the Python threads running a package's code, e.g.
    ``py:cflib``, which the OS knows by no name of their own), raised to one priority
    below the loop: a normal-priority thread holding such a lock would otherwise be
    preempted by the competing processes while the loop waits for it (priority
    inversion; Cyclone DDS's locks do not inherit priority). Only for a process that runs
    little besides the loop.
    """
    allowed = tuple(sorted(os.sched_getaffinity(0)))
    status = _apply(name, priority, cpu, allowed)
    raised = _raise_threads(helpers, priority - 1) if status.realtime and helpers else []
    status.helpers = tuple(sorted({comm for _, comm in raised}))
    with _lock:
        _statuses.append(status)
    try:
        yield status
    finally:
        with contextlib.suppress(OSError):
            if status.realtime:
                os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))
            if status.cpus != allowed:
                os.sched_setaffinity(0, allowed)
        for tid, _ in raised:
            with contextlib.suppress(OSError):
                os.sched_setscheduler(tid, os.SCHED_OTHER, os.sched_param(0))


def normal_scheduling() -> None:
    """The calling thread back to normal scheduling: for a worker that a real-time thread
    starts (threads inherit their creator's policy) to do bulk work, such as encoding
    images, that must never delay the machine's real-time loops."""
    with contextlib.suppress(OSError):
        os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))


def _python_threads(names: tuple[str, ...]) -> dict[int, str]:
    """Native thread id -> ``py:PACKAGE.Class`` of the Python threads whose code (their
    class, or the function they run) is in one of the ``py:PACKAGE`` names."""
    packages = {n.removeprefix("py:") for n in names if n.startswith("py:")}
    found: dict[int, str] = {}
    for thread in threading.enumerate():
        code = type(thread) if type(thread) is not threading.Thread else getattr(thread, "_target", None)
        module = getattr(code, "__module__", "") or ""
        if module.split(".")[0] in packages and thread.native_id is not None:
            found[thread.native_id] = f"py:{module.split('.')[0]}.{getattr(code, '__name__', '?')}"
    return found


def _raise_threads(names: tuple[str, ...], priority: int) -> list[tuple[int, str]]:
    """SCHED_FIFO ``priority`` for this process's threads called one of ``names``."""
    raised = []
    for tid, label in _python_threads(names).items():
        with contextlib.suppress(OSError):
            os.sched_setscheduler(tid, os.SCHED_FIFO, os.sched_param(priority))
            raised.append((tid, label))
    for entry in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{entry}/comm") as f:
                comm = f.read().strip()
            if comm in NEVER_RAISED:
                continue
            if any(comm == n or (n.endswith(".") and comm.startswith(n)) for n in names):
                os.sched_setscheduler(int(entry), os.SCHED_FIFO, os.sched_param(priority))
                raised.append((int(entry), comm))
        except (OSError, ValueError):
            continue  # ended meanwhile, or not permitted: the loop runs without it
    return raised


def _apply(name: str, priority: int, cpu: int | None, allowed: tuple[int, ...]) -> RealtimeStatus:
    global _warned
    status = RealtimeStatus(name, cpus=allowed)
    if not enabled():
        status.reason = f"{ENV}=off"
        return status
    if not 1 <= priority <= os.sched_get_priority_max(os.SCHED_FIFO):
        raise ValueError(f"SCHED_FIFO priority {priority} out of range")
    # Still at normal priority: the young garbage goes first (a frozen cycle is never freed),
    # then everything alive leaves the collector's generations.
    gc.collect(1)
    gc.freeze()
    try:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(priority))
    except OSError as exc:
        status.reason = _refused(priority, exc)
        with _lock:
            first, _warned = not _warned, True
        if first:
            _log.warning("real-time scheduling unavailable, %s runs at normal priority: %s", name, status.reason)
        return status
    status.policy, status.priority = "SCHED_FIFO", priority
    status.rt_cpu_limit_s = _cap_rt_cpu()
    if cpu is not None and len(allowed) > 1:
        with contextlib.suppress(OSError, IndexError):
            os.sched_setaffinity(0, {allowed[cpu]})
            status.cpus = (allowed[cpu],)
    status.memory_locked = not _lock_memory()
    if not status.memory_locked:
        status.reason = f"memory not locked: {_memory}"
    if sys.getswitchinterval() > GIL_SWITCH_INTERVAL:
        sys.setswitchinterval(GIL_SWITCH_INTERVAL)
    return status


def _refused(priority: int, exc: OSError) -> str:
    return (f"SCHED_FIFO {priority} not permitted ({exc.strerror}; RLIMIT_RTPRIO "
            f"{resource.getrlimit(resource.RLIMIT_RTPRIO)[0]}): needs CAP_SYS_NICE or an rtprio limit")


def _libc() -> ctypes.CDLL | None:
    path = ctypes.util.find_library("c")
    try:
        return ctypes.CDLL(path or "libc.so.6", use_errno=True)
    except OSError:
        return None


def _lock_memory() -> str:
    """mlockall once per process; '' when locked, else why not."""
    global _memory
    with _lock:
        if _memory is None:
            libc = _libc()
            if libc is None:
                _memory = "no C library"
            elif libc.mlockall(_MCL_CURRENT | _MCL_FUTURE | _MCL_ONFAULT) != 0:
                err = ctypes.get_errno()
                limit = resource.getrlimit(resource.RLIMIT_MEMLOCK)[0]
                _memory = (f"mlockall: {os.strerror(err)} (RLIMIT_MEMLOCK "
                           f"{'unlimited' if limit < 0 else f'{limit >> 10} KiB'}; needs CAP_IPC_LOCK or memlock)")
            else:
                _memory = ""
        return _memory


def _cap_rt_cpu() -> float | None:
    """RLIMIT_RTTIME at most :data:`RT_CPU_LIMIT` (a lower one already set stays); the soft limit in s."""
    soft, hard = resource.getrlimit(resource.RLIMIT_RTTIME)
    want_soft, want_hard = (int(s * 1e6) for s in RT_CPU_LIMIT)
    new_hard = want_hard if hard == resource.RLIM_INFINITY else min(hard, want_hard)
    new_soft = min(want_soft if soft == resource.RLIM_INFINITY else soft, new_hard)
    try:
        resource.setrlimit(resource.RLIMIT_RTTIME, (new_soft, new_hard))
    except (OSError, ValueError):
        return None if soft == resource.RLIM_INFINITY else soft / 1e6
    return new_soft / 1e6


def probe(priority: int = WRITER_PRIORITY) -> RealtimeStatus:
    """Whether a loop of this process would get SCHED_FIFO ``priority``, tried on a
    short-lived thread (nothing of this process changes)."""
    status = RealtimeStatus("probe", cpus=tuple(sorted(os.sched_getaffinity(0))))

    def attempt() -> None:
        if not enabled():
            status.reason = f"{ENV}=off"
            return
        try:
            os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(priority))
        except OSError as exc:
            status.reason = _refused(priority, exc)
            return
        os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))
        status.policy, status.priority = "SCHED_FIFO", priority

    thread = threading.Thread(target=attempt, name="realtime-probe", daemon=True)
    thread.start()
    thread.join()
    return status


class QuietCollector:
    """Garbage collection only where the loop has time: for a process that runs nothing
    but its loop. Automatic collection is off (``gc.freeze()`` first); :meth:`collect`
    runs the youngest generation every ``young_every`` calls and a full collection every
    ``full_every`` s, each only when at least ``min_slack`` s remain before the deadline."""

    def __init__(self, young_every: int = 250, full_every: float = 10.0, min_slack: float = 0.001,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.young_every, self.full_every, self.min_slack, self.clock = young_every, full_every, min_slack, clock
        self._calls = 0
        self._last_full = clock()
        self.longest = 0.0
        """s, the longest collection run so far."""
        gc.collect()
        gc.freeze()
        gc.disable()

    def collect(self, slack: float) -> None:
        self._calls += 1
        if slack < self.min_slack:
            return
        start = self.clock()
        if start - self._last_full >= self.full_every:
            gc.collect()
            self._last_full = start
        elif self._calls >= self.young_every:
            gc.collect(0)
        else:
            return
        self._calls = 0
        self.longest = max(self.longest, self.clock() - start)

    def close(self) -> None:
        gc.enable()
