"""The real-time demand a run reports: real-time threads' CPU from /proc, normal threads
left out, and the warning when they use most of the machine."""

from __future__ import annotations

import os
import subprocess
import sys
import threading

import pytest

from sim2real.hardware.realtime_demand import SAFE_SHARE, RealtimeDemand, thread_times

SPIN = """
import os, sys, time
if sys.argv[1] == "rr":
    os.sched_setscheduler(0, os.SCHED_RR, os.sched_param(1))
end = time.process_time() + 0.4  # after the start-up
while time.process_time() < end:
    pass
time.sleep(0.3)  # sampled once more before it ends
"""


def test_every_thread_of_this_process_is_listed_with_its_policy() -> None:
    mine = {tid: entry for (pid, tid), entry in thread_times().items() if pid == os.getpid()}
    assert threading.get_native_id() in mine
    assert mine[threading.get_native_id()][3] == os.SCHED_OTHER


def test_only_real_time_threads_count() -> None:
    try:
        os.sched_setscheduler(0, os.SCHED_RR, os.sched_param(1))
        os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))
    except PermissionError:
        pytest.skip("real-time scheduling is not permitted here")
    demand = RealtimeDemand(period=0.1).start()
    spinners = {policy: subprocess.Popen([sys.executable, "-c", SPIN, policy]) for policy in ("rr", "normal")}
    for spinner in spinners.values():
        spinner.wait(30)
    demand.stop()
    counted = {u.pid: u.cores for u in demand.threads()}
    # 0.4 s of CPU after it turned real-time, less up to one 0.1 s period before it was first
    # sampled; judged in CPU seconds, however long a loaded machine took to give them
    assert spinners["rr"].pid in counted and counted[spinners["rr"].pid] * demand.seconds >= 0.25
    assert spinners["normal"].pid not in counted
    summary = demand.summary()
    assert summary["cores"] >= round(counted[spinners["rr"].pid], 2)  # reported to 0.01 core
    assert (summary["cores"] > SAFE_SHARE * summary["machine_cores"]) == bool(summary["warning"])
