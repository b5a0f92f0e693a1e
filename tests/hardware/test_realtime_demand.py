"""The real-time demand a run reports: real-time threads' CPU from /proc, normal threads
left out, and the warning when they use most of the machine."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

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
    threads = threading.active_count()
    demand = RealtimeDemand(period=0.1).start()
    # It samples from a process of its own: /proc reading in a thread here would hold this
    # process's interpreter lock, which its real-time loops need.
    assert threading.active_count() == threads
    spinners = {policy: subprocess.Popen([sys.executable, "-c", SPIN, policy]) for policy in ("rr", "normal")}
    for spinner in spinners.values():
        spinner.wait(30)
    demand.stop()
    counted = {u.pid: u.cores for u in demand.threads()}
    # Born in the window, it counts whole: 0.4 s of CPU once real-time (and its start-up),
    # judged in CPU seconds, however long a loaded machine took to give them or to sample
    assert spinners["rr"].pid in counted and counted[spinners["rr"].pid] * demand.seconds >= 0.39
    assert spinners["normal"].pid not in counted
    summary = demand.summary()
    assert summary["cores"] >= round(counted[spinners["rr"].pid], 2)  # reported to 0.01 core
    assert (summary["cores"] > SAFE_SHARE * summary["machine_cores"]) == bool(summary["warning"])


def _kernel_tree(tmp_path: Path, runtime: str, fair: list[str] | None) -> tuple[str, str]:
    proc, debugfs = tmp_path / "proc", tmp_path / "debug"
    (proc / "sys" / "kernel").mkdir(parents=True)
    (proc / "sys" / "kernel" / "sched_rt_runtime_us").write_text(runtime + "\n")
    (proc / "sys" / "kernel" / "sched_rt_period_us").write_text("1000000\n")
    for cpu, value in enumerate(fair or []):
        d = debugfs / "sched" / "fair_server" / f"cpu{cpu}"
        d.mkdir(parents=True)
        (d / "runtime").write_text(value + "\n")
        (d / "period").write_text("1000000000\n")
    return str(proc), str(debugfs)


def test_the_kernels_stall_of_real_time_loops_is_read_and_judged(tmp_path: Path) -> None:
    from sim2real.commands.deploy_check import kernel_item
    from sim2real.hardware.realtime_demand import kernel_limits

    stock = kernel_limits(*_kernel_tree(tmp_path / "stock", "950000", ["50000000", "50000000"]))
    assert stock.fair_server_ms == (50.0, 50.0) and stock.fair_server_period_ms == 1000.0
    assert stock.stall_ms() == 50.0 and kernel_item(stock).status == "WARN"
    tuned = kernel_limits(*_kernel_tree(tmp_path / "tuned", "-1", ["0", "0"]))
    assert tuned.stall_ms() == 0.0 and kernel_item(tuned).status == "PASS"
    one_cpu_left = kernel_limits(*_kernel_tree(tmp_path / "half", "-1", ["0", "20000000"]))
    assert one_cpu_left.stall_ms() == 20.0 and kernel_item(one_cpu_left).status == "WARN"
    # No fair server to read: a 6.12+ kernel has one at its default; an older one has none.
    unread = kernel_limits(*_kernel_tree(tmp_path / "unread", "-1", None))
    assert unread.fair_server_ms is None and unread.fair_server_why
    assert unread.stall_ms() == (50.0 if unread.has_fair_server() else 0.0)


def test_a_sampler_that_dies_loses_its_figures_not_the_run() -> None:
    demand = RealtimeDemand(period=0.1).start()
    sampler = demand._sampler  # the child process, killed as a crash would
    assert sampler is not None
    sampler.kill()
    demand.stop()  # no exception: deploy calls it in a finally
    summary = demand.summary()
    assert summary["cores"] == 0 and str(summary["warning"]).startswith("real-time demand not measured")
