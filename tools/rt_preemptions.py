"""Why a real-time thread stalled: its preemptions in a ``perf sched`` recording, and what
ran on each CPU meanwhile.

A SCHED_FIFO loop that is runnable but off its CPU was preempted by something: a
higher-priority real-time thread, or normal threads that the kernel runs ahead of it
(the fair server of kernels from 6.12, the classic RT throttle). This reads the
``sched:sched_switch`` events, finds every off-CPU interval of the given threads that
began with a preemption (``prev_state`` R) while they ran at real-time priority and
lasted longer than ``--min-ms``, and splits each CPU's time in that interval into
normal, higher real-time and same-or-lower real-time.

    perf sched record -o sched.data -- sleep 60          # while the graph runs
    perf script -i sched.data -F tid,cpu,time,event,trace | python tools/rt_preemptions.py TID[,TID...]

Kernel priorities as perf prints them: 0-99 real-time (99 - the SCHED_FIFO priority),
100-139 normal (120 is nice 0).
"""

from __future__ import annotations

import argparse
import re
import sys
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

SWITCH = re.compile(r"^\s*(\d+)\s+\[(\d+)\]\s+([\d.]+):\s+sched:sched_switch:\s+prev_comm=(.*?) prev_pid=(\d+) "
                    r"prev_prio=(\d+) prev_state=(\S+) ==> next_comm=(.*?) next_pid=(\d+) next_prio=(\d+)")
NORMAL_PRIO = 100


@dataclass(frozen=True)
class Run:
    start: float
    end: float
    tid: int
    prio: int
    name: str


@dataclass(frozen=True)
class Preemption:
    tid: int
    prio: int
    start: float
    end: float
    cpu: int


def read(lines: Iterable[str], tids: set[int], min_s: float) -> tuple[list[Preemption], dict[int, list[Run]]]:
    """The preemptions of ``tids`` longer than ``min_s``, and every CPU's runs."""
    runs: dict[int, list[Run]] = defaultdict(list)
    current: dict[int, tuple[float, int, int, str]] = {}
    left: dict[int, tuple[float, str, int, int]] = {}
    found: list[Preemption] = []
    for line in lines:
        m = SWITCH.match(line)
        if not m:
            continue
        _, cpu_s, t_s, _, prev_s, prev_prio_s, state, next_name, next_s, next_prio_s = m.groups()
        cpu, t, prev, next_tid = int(cpu_s), float(t_s), int(prev_s), int(next_s)
        if cpu in current:
            start, tid, prio, name = current[cpu]
            runs[cpu].append(Run(start, t, tid, prio, name))
        current[cpu] = (t, next_tid, int(next_prio_s), next_name)
        if prev in tids:
            left[prev] = (t, state, cpu, int(prev_prio_s))
        if next_tid in tids and next_tid in left:
            t0, state0, cpu0, prio0 = left.pop(next_tid)
            if t - t0 > min_s and state0.startswith("R") and prio0 < NORMAL_PRIO:
                found.append(Preemption(next_tid, prio0, t0, t, cpu0))
    return found, runs


def describe(p: Preemption, runs: dict[int, list[Run]]) -> str:
    """One line: the interval, and per CPU the ms of normal / higher / other real-time work."""
    parts = []
    for cpu in sorted(runs):
        normal = higher = other = 0.0
        names: defaultdict[str, float] = defaultdict(float)
        for r in runs[cpu]:
            if r.end <= p.start or r.start >= p.end or r.tid == 0:
                continue
            d = min(r.end, p.end) - max(r.start, p.start)
            if r.prio >= NORMAL_PRIO:
                normal += d
            elif r.prio < p.prio:
                higher += d
            else:
                other += d
            names[f"{r.name}/{r.prio}"] += d
        top = ", ".join(f"{n} {d * 1e3:.0f}" for n, d in sorted(names.items(), key=lambda kv: -kv[1])[:3])
        parts.append(f"cpu{cpu}: normal {normal * 1e3:.0f}, higher RT {higher * 1e3:.0f}, "
                     f"other RT {other * 1e3:.0f} ms [{top}]")
    return (f"tid {p.tid} (prio {p.prio}) off CPU {(p.end - p.start) * 1e3:.1f} ms from {p.start:.3f} "
            f"(cpu{p.cpu}) | " + " | ".join(parts))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("tids", help="thread ids, comma-separated (ps -eLo pid,tid,cls,rtprio,comm)")
    parser.add_argument("--min-ms", type=float, default=15.0, help="shortest preemption reported")
    args = parser.parse_args(argv)
    tids = {int(t) for t in args.tids.split(",") if t.strip()}
    found, runs = read(sys.stdin, tids, args.min_ms / 1e3)
    print(f"{len(found)} preemptions over {args.min_ms:g} ms of real-time threads {sorted(tids)}")
    for p in found:
        print(describe(p, runs))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
