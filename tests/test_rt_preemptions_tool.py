"""tools/rt_preemptions.py: a real-time thread's preemption found in `perf script` lines,
with what ran on each CPU meanwhile."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

TOOL = Path(__file__).resolve().parents[1] / "tools" / "rt_preemptions.py"


def _tool() -> Any:
    spec = importlib.util.spec_from_file_location("rt_preemptions", TOOL)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def _switch(cpu: int, t: float, prev: tuple[str, int, int, str], nxt: tuple[str, int, int]) -> str:
    return (f"  {prev[1]}  [{cpu:03d}] {t:.6f}: sched:sched_switch: prev_comm={prev[0]} prev_pid={prev[1]} "
            f"prev_prio={prev[2]} prev_state={prev[3]} ==> next_comm={nxt[0]} next_pid={nxt[1]} next_prio={nxt[2]}")


def test_a_real_time_loop_preempted_by_normal_threads_is_found_and_explained() -> None:
    tool = _tool()
    lines = [
        _switch(0, 10.000, ("swapper/0", 0, 120, "R"), ("filter", 42, 69)),
        # Preempted while runnable; a nice-0 competitor runs 50 ms on its CPU (the fair server).
        _switch(0, 10.001, ("filter", 42, 69, "R"), ("python3", 7, 120)),
        _switch(0, 10.051, ("python3", 7, 120, "R"), ("filter", 42, 69)),
        # A sleep of its own (state S) is no preemption, however long.
        _switch(0, 10.052, ("filter", 42, 69, "S"), ("python3", 7, 120)),
        _switch(0, 10.200, ("python3", 7, 120, "R"), ("filter", 42, 69)),
        # A normal-priority thread's preemption is not a real-time stall either.
        _switch(0, 10.201, ("filter", 42, 120, "R"), ("python3", 7, 120)),
        _switch(0, 10.300, ("python3", 7, 120, "R"), ("filter", 42, 120)),
    ]
    found, runs = tool.read(lines, {42}, 0.015)
    assert [(p.tid, p.prio, round(p.end - p.start, 3)) for p in found] == [(42, 69, 0.05)]
    line = tool.describe(found[0], runs)
    assert "off CPU 50.0 ms" in line and "normal 50, higher RT 0" in line
