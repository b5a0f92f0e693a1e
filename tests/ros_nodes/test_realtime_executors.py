"""Issue 43, item 2: the policy -> filter -> bridge executors run at real-time priority
where the system permits it, and say how they are scheduled (the node's report)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from ros_harness import unique_domain_id, wait_for

from sim2real.hardware.realtime import EXECUTOR_PRIORITY
from sim2real.ros_nodes.graph import InProcessGraph, config_dir, load_config, merge


def _graph(tmp_path) -> InProcessGraph:
    params = merge(load_config(config_dir() / "arm.yaml"), {"safety_filter": {"latch_file": str(tmp_path / "l.json")},
                                                           "recorder": {"output": str(tmp_path / "bag")}})
    graph = InProcessGraph(params, ["safety_filter", "recorder"], unique_domain_id())
    return graph


def _permitted() -> bool:
    try:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(1))
    except OSError:
        return False
    os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))
    return True


def test_the_control_path_executor_runs_sched_fifo_and_says_so(tmp_path, monkeypatch) -> None:
    monkeypatch.delenv("SIM2REAL_REALTIME", raising=False)
    graph = _graph(tmp_path)
    try:
        graph.start()
        node = graph.nodes["safety_filter"]
        assert wait_for(lambda: getattr(node, "realtime_status", None) is not None, 5.0)
        thread = graph.spinners["control"]
        assert thread is not None and thread.native_id is not None
        line = node.summary()["scheduling"]
        if _permitted():
            assert os.sched_getscheduler(thread.native_id) == os.SCHED_FIFO
            assert os.sched_getparam(thread.native_id).sched_priority == EXECUTOR_PRIORITY
            assert f"SCHED_FIFO {EXECUTOR_PRIORITY}" in line
            # Fast DDS's listeners deliver what the executor waits for: one below it; its
            # shared-memory watchdog stays normal.
            tasks = Path("/proc/self/task")
            threads = {int(t.name): (t / "comm").read_text().strip() for t in tasks.iterdir()}
            listeners = [t for t, comm in threads.items() if comm.startswith(("dds.udp.", "dds.shm.")) and
                         comm != "dds.shm.wdog"]
            assert listeners and all(os.sched_getparam(t).sched_priority == EXECUTOR_PRIORITY - 1 for t in listeners)
            assert all(os.sched_getscheduler(t) == os.SCHED_OTHER for t, comm in threads.items()
                       if comm in ("dds.shm.wdog", "dds.ev.0"))
            assert "dds.udp." in line
            # The recorder (like the cameras, the console) is not on the control path: its
            # executor stays at normal priority, so its work never takes a core from others.
            other = graph.spinners["other"]
            assert other.native_id is not None and os.sched_getscheduler(other.native_id) == os.SCHED_OTHER
        else:
            assert "SCHED_OTHER" in line and node.realtime_status.reason
    finally:
        graph.shutdown()


def test_off_keeps_normal_scheduling_and_says_why(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("SIM2REAL_REALTIME", "off")
    graph = _graph(tmp_path)
    try:
        graph.start()
        node = graph.nodes["safety_filter"]
        assert wait_for(lambda: getattr(node, "realtime_status", None) is not None, 5.0)
        thread = graph.spinners["control"]
        assert thread.native_id is not None and os.sched_getscheduler(thread.native_id) == os.SCHED_OTHER
        assert "SIM2REAL_REALTIME=off" in node.summary()["scheduling"]
    finally:
        graph.shutdown()


def test_only_the_control_path_and_the_operators_console_are_raised() -> None:
    from sim2real.hardware.realtime import EXECUTOR_PRIORITY, OPERATOR_PRIORITY
    from sim2real.ros_nodes.console import ConsoleNode
    from sim2real.ros_nodes.recorder import Recorder
    from sim2real.ros_nodes.safety_filter import SafetyFilterNode

    assert SafetyFilterNode.executor_priority == EXECUTOR_PRIORITY and Recorder.executor_priority is None
    assert ConsoleNode.executor_priority == OPERATOR_PRIORITY  # in a process of its own (below the control path)


pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")
