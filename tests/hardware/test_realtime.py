"""The real-time helper (hardware/realtime.py) and the deadline schedule (hardware/timing.py):
scheduling applied where permitted and reported where not, restored after the loop,
deadlines absolute, lateness and misses recorded. Timing is asserted through injected
clocks only; what is measured on the real clock is behaviour (which policy a thread runs
under), never how fast."""

from __future__ import annotations

import gc
import json
import os
import resource
import subprocess
import sys
import threading

import pytest

from sim2real.hardware import realtime
from sim2real.hardware.realtime import RealtimeStatus, probe, realtime_thread
from sim2real.hardware.timing import PeriodicSchedule, TimingRecord

PERMITTED = probe(realtime.WRITER_PRIORITY).realtime
needs_privilege = pytest.mark.skipif(not PERMITTED, reason="this machine does not permit SCHED_FIFO")


def in_thread(fn):
    """Run ``fn`` on a fresh thread (the scheduling it changes is that thread's) and return its result."""
    out: list = []
    thread = threading.Thread(target=lambda: out.append(fn()))
    thread.start()
    thread.join(10)
    return out[0]


@needs_privilege
def test_a_loop_thread_runs_sched_fifo_on_one_cpu_with_memory_locked_and_back_after() -> None:
    allowed = os.sched_getaffinity(0)

    def loop() -> tuple[RealtimeStatus, int, int, set[int], int, set[int], tuple[int, int]]:
        with realtime_thread("test loop", realtime.WRITER_PRIORITY) as status:
            inside = os.sched_getscheduler(0), os.sched_getparam(0).sched_priority, os.sched_getaffinity(0)
        return status, *inside, os.sched_getscheduler(0), os.sched_getaffinity(0), \
            resource.getrlimit(resource.RLIMIT_RTTIME)

    status, policy, priority, cpus, after, cpus_after, rttime = in_thread(loop)
    assert status.realtime and status.reason == "" and status.memory_locked
    assert policy == os.SCHED_FIFO and priority == realtime.WRITER_PRIORITY
    if len(allowed) > 1:
        assert cpus == {max(allowed)} and status.cpus == (max(allowed),)  # the last CPU: the writers'
    assert after == os.SCHED_OTHER and cpus_after == allowed  # the thread is itself again after the loop
    # a real-time thread that stops sleeping ends its process instead of freezing a core
    assert 0 < rttime[0] <= realtime.RT_CPU_LIMIT[0] * 1e6 and rttime[1] <= realtime.RT_CPU_LIMIT[1] * 1e6
    assert status in realtime.statuses()
    assert "SCHED_FIFO 45" in status.line() and "memory locked" in status.line()


@needs_privilege
def test_helper_threads_the_loop_waits_on_are_raised_below_it_and_lowered_after() -> None:
    parked = threading.Event()

    def helper() -> None:
        parked.wait(10)

    t = threading.Thread(target=helper, name="helper")
    t.start()
    try:
        assert t.native_id is not None
        with open(f"/proc/self/task/{t.native_id}/comm", "w") as f:  # the name the kernel knows it by
            f.write("rt-test-helper")

        def loop() -> tuple[RealtimeStatus, int, int]:
            assert t.native_id is not None
            with realtime_thread("test loop", realtime.WRITER_PRIORITY, helpers=("rt-test-helper",)) as status:
                raised = os.sched_getparam(t.native_id).sched_priority
            return status, raised, os.sched_getscheduler(t.native_id)

        status, raised, after = in_thread(loop)
        assert status.helpers == ("rt-test-helper",) and raised == realtime.WRITER_PRIORITY - 1
        assert after == os.SCHED_OTHER
    finally:
        parked.set()
        t.join()


@needs_privilege
def test_a_packages_python_threads_are_raised_as_helpers() -> None:
    """cflib's threads (its receiver, its packet dispatcher) have no OS name of their own:
    ``py:PACKAGE`` finds a package's threads by their code (here the stdlib's ``queue``)."""
    import queue

    inbox: queue.Queue[int] = queue.Queue()
    t = threading.Thread(target=inbox.get, name="dispatcher")  # runs queue's code, as cflib's threads run cflib's
    t.start()
    try:
        def loop() -> tuple[RealtimeStatus, int]:
            assert t.native_id is not None
            with realtime_thread("test loop", realtime.WRITER_PRIORITY, helpers=("py:queue",)) as status:
                return status, os.sched_getparam(t.native_id).sched_priority

        status, raised = in_thread(loop)
        assert status.helpers == ("py:queue.get",) and raised == realtime.WRITER_PRIORITY - 1
        assert t.native_id is not None and os.sched_getscheduler(t.native_id) == os.SCHED_OTHER
    finally:
        inbox.put(0)
        t.join()


def test_switched_off_the_loop_runs_at_normal_priority_and_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(realtime.ENV, "off")

    def loop() -> tuple[RealtimeStatus, int]:
        with realtime_thread("test loop", realtime.WRITER_PRIORITY) as status:
            return status, os.sched_getscheduler(0)

    status, policy = in_thread(loop)
    assert not status.realtime and policy == os.SCHED_OTHER and "SIM2REAL_REALTIME=off" in status.reason
    assert not probe().realtime


UNPRIVILEGED = """
import json, logging, sys
logging.basicConfig(stream=sys.stderr, format="WARNING %(message)s")
from sim2real.hardware.realtime import realtime_thread, probe
out = []
for name in ("first loop", "second loop"):
    with realtime_thread(name, 45) as status:
        out.append(status.as_dict())
print(json.dumps({"loops": out, "probe": probe().as_dict()}))
"""


def _without_sys_nice() -> None:
    """In the child, before exec: no CAP_SYS_NICE (dropped from the bounding set, so the
    program run keeps none) and an rtprio limit of 0: an unprivileged robot computer."""
    import ctypes

    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    if libc.prctl(24, 23, 0, 0, 0) != 0:  # PR_CAPBSET_DROP, CAP_SYS_NICE
        raise OSError(ctypes.get_errno(), "PR_CAPBSET_DROP")
    resource.setrlimit(resource.RLIMIT_RTPRIO, (0, 0))


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to drop a capability for the child")
def test_without_the_privilege_the_loop_runs_normal_with_one_warning_and_says_why() -> None:
    """A process without CAP_SYS_NICE and with RLIMIT_RTPRIO 0: the loops run, one warning
    is logged for the process, and each status says why it is not real-time."""
    env = dict(os.environ)
    env.pop(realtime.ENV, None)
    result = subprocess.run([sys.executable, "-c", UNPRIVILEGED], capture_output=True, text=True, timeout=120,
                            env=env, preexec_fn=_without_sys_nice)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    for loop in report["loops"]:
        assert loop["policy"] == "SCHED_OTHER" and not loop["realtime"]
        assert "not permitted" in loop["reason"] and "CAP_SYS_NICE" in loop["reason"]
    assert not report["probe"]["realtime"] and "not permitted" in report["probe"]["reason"]
    warnings = [line for line in result.stderr.splitlines() if "real-time scheduling unavailable" in line]
    assert len(warnings) == 1, result.stderr


class FakeClock:
    """Monotonic time that only the schedule's sleeps (and the test) advance."""

    def __init__(self) -> None:
        self.t = 100.0
        self.wake_delay = 0.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.t

    def sleep_until(self, deadline: float) -> None:
        self.slept.append(deadline)
        self.t = max(self.t, deadline) + self.wake_delay


def test_the_schedule_sleeps_to_absolute_deadlines_records_lateness_and_resynchronizes() -> None:
    clock = FakeClock()
    schedule = PeriodicSchedule(0.002, TimingRecord(0.002, capacity=64), clock, clock.sleep_until)
    schedule.start()
    for _ in range(3):
        schedule.tick(schedule.sleep())
    clock.wake_delay = 0.0003  # woken late, every time: the deadlines do not drift with it
    for _ in range(3):
        schedule.tick(schedule.sleep())
    assert clock.slept == pytest.approx([100.002, 100.004, 100.006, 100.008, 100.010])
    late, _ = schedule.record.window()
    assert late[:3] == pytest.approx([0.0, 0.0, 0.0]) and late[3:] == pytest.approx([0.0003] * 3)
    assert schedule.record.misses == 0  # 0.3 ms late is not half a period
    clock.t = schedule.next + 0.0012  # the last tick's work ran 1.2 ms past this deadline: a miss, not an overrun
    schedule.tick(schedule.sleep())
    assert schedule.record.misses == 1 and schedule.record.overruns == 0
    clock.t += 0.05  # a 50 ms stall: resynchronized from now, no burst of catch-up ticks
    now = schedule.sleep()
    schedule.tick(now)
    assert schedule.record.overruns == 1 and schedule.next == pytest.approx(clock.t)


def test_the_timing_summary_reports_rate_jitter_and_misses_over_a_window() -> None:
    record = TimingRecord(0.002, capacity=8)
    stamps = [0.000, 0.002, 0.004, 0.0065, 0.008, 0.010, 0.012, 0.014, 0.016, 0.018]  # one 0.5 ms late
    for i, t in enumerate(stamps):
        record.add(t, 0.0005 if i == 3 else 0.0)
    s = record.summary()
    assert s["ticks"] == 8  # the ring keeps the last 8
    assert s["rate_hz"] == pytest.approx(7 / 0.014)
    assert s["jitter_ms"]["max"] == pytest.approx(0.5) and s["lateness_ms"]["max"] == pytest.approx(0.5)
    assert s["deadline_misses"] == 0
    assert record.summary(since=0.0075)["ticks"] == 6


def test_the_quiet_collector_collects_only_with_slack_and_gives_the_collector_back() -> None:
    clock = FakeClock()
    collector = realtime.QuietCollector(young_every=3, full_every=10.0, min_slack=0.001, clock=clock)
    try:
        assert not gc.isenabled()
        before = gc.get_stats()[0]["collections"]
        for _ in range(5):
            collector.collect(slack=0.0002)  # no time left before the deadline: never
        assert gc.get_stats()[0]["collections"] == before
        collector.collect(slack=0.0015)
        assert gc.get_stats()[0]["collections"] == before + 1
    finally:
        collector.close()
        gc.unfreeze()
    assert gc.isenabled()


def test_the_preflight_item_passes_a_real_time_loop_and_warns_otherwise() -> None:
    from sim2real.commands.deploy_check import realtime_item

    fifo = RealtimeStatus("go2 rt/lowcmd writer", "SCHED_FIFO", 45, (1,), memory_locked=True).as_dict()
    assert realtime_item(fifo).status == "PASS" and "SCHED_FIFO 45 on CPU 1" in realtime_item(fifo).measured
    unlocked = {**fifo, "memory_locked": False, "reason": "memory not locked: mlockall: ENOMEM"}
    assert realtime_item(unlocked).status == "WARN" and "mlockall" in realtime_item(unlocked).measured
    refused = RealtimeStatus("crazyflie setpoint stream", reason="SCHED_FIFO 45 not permitted (EPERM)").as_dict()
    item = realtime_item(refused)
    assert item.status == "WARN" and "not permitted" in item.measured and "deployment.md" in item.hint
    assert realtime_item(None).status == "INFO"
    # A backend with several loops (PX4's stream and reader): each named, the worst counts.
    both = realtime_item({"stream": fifo, "reader": refused})
    assert both.status == "WARN" and "go2 rt/lowcmd writer: SCHED_FIFO 45" in both.measured
    assert "crazyflie setpoint stream" in both.measured and "deployment.md" in both.hint
    assert realtime_item({"stream": fifo, "reader": fifo}).status == "PASS"


def test_deploy_check_reports_a_loop_without_real_time_priority() -> None:
    """``sim2real deploy check`` reads the scheduling the backend's loop actually got."""
    env = {**os.environ, realtime.ENV: "off"}
    result = subprocess.run([sys.executable, "-m", "sim2real.cli", "deploy", "check", "--robot", "drone", "--emulate",
                             "--seconds", "1", "--policy", "none", "--json"], capture_output=True, text=True,
                            timeout=120, env=env)
    assert result.returncode == 0, result.stdout + result.stderr  # a warning: the robot may still run
    items = {i["name"]: i for i in json.loads(result.stdout)["items"]}
    item = items["real-time priority"]
    assert item["status"] == "WARN" and "crazyflie setpoint stream" in item["measured"], item
    assert "SIM2REAL_REALTIME=off" in item["measured"]


RUNAWAY = """
import threading, time
from sim2real.hardware.realtime import realtime_thread
def spin():
    with realtime_thread("runaway loop", 45):
        while True:  # a loop that no longer sleeps
            pass
threading.Thread(target=spin, daemon=True).start()
time.sleep(30)
print("survived")
"""


@needs_privilege
@pytest.mark.slow  # one core is taken by a real-time spin for up to 0.5 s
def test_a_real_time_loop_that_stops_sleeping_ends_its_process() -> None:
    """RLIMIT_RTTIME: the kernel sends SIGXCPU once a real-time thread has run 0.5 s
    without blocking, which ends a Python process, instead of the loop holding its core."""
    result = subprocess.run([sys.executable, "-c", RUNAWAY], capture_output=True, text=True, timeout=60)
    assert "survived" not in result.stdout
    assert result.returncode in (-24, -9), (result.returncode, result.stderr)  # SIGXCPU, or the hard limit's SIGKILL


@needs_privilege
def test_a_worker_started_by_a_real_time_thread_goes_back_to_normal_scheduling() -> None:
    """Threads inherit their creator's policy: a pool started inside a real-time loop runs
    its bulk work (the console's JPEG encoding) at real-time priority unless its workers
    call :func:`~sim2real.hardware.realtime.normal_scheduling`."""
    import concurrent.futures

    def loop() -> tuple[int, int]:
        with realtime_thread("test loop", realtime.OPERATOR_PRIORITY, cpu=None), \
                concurrent.futures.ThreadPoolExecutor(1) as inherited, \
                concurrent.futures.ThreadPoolExecutor(1, initializer=realtime.normal_scheduling) as normal:
            return (inherited.submit(os.sched_getscheduler, 0).result(),
                    normal.submit(os.sched_getscheduler, 0).result())

    assert in_thread(loop) == (os.SCHED_FIFO, os.SCHED_OTHER)
