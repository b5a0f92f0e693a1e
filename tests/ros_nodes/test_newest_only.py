"""The worker a real-time loop hands frames to (ros_nodes/newest_only.py): the newest item
is done, older ones waiting are dropped and counted, a failing item does not end the
worker, and the worker never runs at its creator's real-time priority."""

from __future__ import annotations

import os
import threading

import pytest

from sim2real.hardware import realtime
from sim2real.ros_nodes.newest_only import NICENESS, NewestOnly, worker_niceness


def test_an_item_still_waiting_is_replaced_by_the_newer_one_and_counted() -> None:
    taken, gate, finished = threading.Event(), threading.Event(), threading.Event()
    done: list[int] = []
    merged: list[tuple[int, int]] = []

    def handle(item: int) -> None:
        taken.set()
        gate.wait(5)  # the first item holds the worker while three more arrive
        done.append(item)
        if len(done) == 2:
            finished.set()

    worker = NewestOnly("test-newest", handle, lambda exc: None,
                        merge=lambda old, new: (merged.append((old, new)), new)[1])
    try:
        worker.offer(1)
        assert taken.wait(5)
        for item in (2, 3, 4):
            worker.offer(item)
        gate.set()
        assert finished.wait(5)
    finally:
        worker.close()
    assert done == [1, 4] and worker.dropped == 2 and merged == [(2, 3), (3, 4)]


def test_a_failing_item_is_reported_and_the_worker_goes_on() -> None:
    errors: list[str] = []
    failed, done = threading.Event(), threading.Event()

    def handle(item: int) -> None:
        if item == 1:
            raise ValueError("broken frame")
        done.set()

    worker = NewestOnly("test-newest", handle, lambda exc: (errors.append(str(exc)), failed.set()))
    try:
        worker.offer(1)
        assert failed.wait(5)
        worker.offer(2)
        assert done.wait(5)
    finally:
        worker.close()
    assert errors == ["broken frame"]


@pytest.mark.skipif(not realtime.probe(realtime.EXECUTOR_PRIORITY).realtime,
                    reason="this machine does not permit SCHED_FIFO")
def test_made_by_a_real_time_thread_the_worker_still_runs_at_normal_priority() -> None:
    """A node configured again through its lifecycle service makes its live views on the
    real-time executor's thread: drawing must not inherit that priority."""
    seen: list[tuple[int, int]] = []
    done = threading.Event()

    def handle(item: int) -> None:
        seen.append((os.sched_getscheduler(0), os.getpriority(os.PRIO_PROCESS, threading.get_native_id())))
        done.set()

    out: list[NewestOnly[int]] = []

    def executor() -> None:
        with realtime.realtime_thread("test executor", realtime.EXECUTOR_PRIORITY, cpu=None):
            out.append(NewestOnly("test-newest", handle, lambda exc: None))
            out[0].offer(1)
            assert done.wait(5)

    thread = threading.Thread(target=executor)
    thread.start()
    thread.join()
    out[0].close()
    assert seen == [(os.SCHED_OTHER, 0)]  # the loop is real-time: no renice (see the module)


def test_the_worker_is_reniced_only_where_the_loop_cannot_be_real_time(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(realtime.ENV, "off")
    assert worker_niceness() == NICENESS
    monkeypatch.delenv(realtime.ENV)
    assert worker_niceness() == (0 if realtime.probe(realtime.EXECUTOR_PRIORITY).realtime else NICENESS)
