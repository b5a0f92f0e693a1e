"""Where the real-time demand sampler runs: how long a real-time loop waits for the GIL
when a normal-priority thread of its own process reads every thread's ``/proc`` entry
once a second (as ``RealtimeDemand`` once did), against the sampler in a process of its
own (``RealtimeDemand`` today), and no sampler at all.

    python benchmarks/gil_sampler.py --seconds 30 --load 4 --repeats 3 [--json]

The loop runs SCHED_FIFO 30 (the executors' priority) with a 2 ms period and a little
Python per tick; ``--load`` CPU-bound competitors at normal priority run throughout; the
cases alternate. Reports each run's lateness percentiles, its maximum and the ticks later
than 15 ms. Needs the privilege to run SCHED_FIFO (root, or an rtprio limit).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import threading
import time
from collections.abc import Iterator

import numpy as np

from sim2real.bench.load import competitors
from sim2real.hardware.realtime import EXECUTOR_PRIORITY, realtime_thread
from sim2real.hardware.realtime_demand import RealtimeDemand, thread_times

PERIOD = 0.002
CASES = ("in this process", "own process", "none")


@contextlib.contextmanager
def sampler(case: str) -> Iterator[None]:
    if case == "own process":
        demand = RealtimeDemand().start()
        try:
            yield
        finally:
            demand.stop()
        return
    stop = threading.Event()

    def sample() -> None:
        while not stop.wait(1.0):
            thread_times()

    worker = threading.Thread(target=sample, daemon=True)
    if case == "in this process":
        worker.start()
    try:
        yield
    finally:
        stop.set()


def measure(case: str, seconds: float) -> dict[str, object]:
    lateness: list[float] = []
    with sampler(case), realtime_thread("benchmark loop", EXECUTOR_PRIORITY, cpu=None) as status:
        if not status.realtime:
            raise SystemExit(f"gil_sampler: needs SCHED_FIFO: {status.reason}")
        due = time.monotonic()
        end = due + seconds
        while due < end:
            due += PERIOD
            time.sleep(max(0.0, due - time.monotonic()))
            lateness.append(time.monotonic() - due)
            sum(range(200))  # a little Python per tick, as an executor runs
    late = np.asarray(lateness) * 1e3
    return {"sampler": case, "p50_ms": round(float(np.percentile(late, 50)), 2),
            "p99_ms": round(float(np.percentile(late, 99)), 2), "max_ms": round(float(late.max()), 1),
            "over_15_ms": int((late > 15).sum()), "ticks": int(late.size)}


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=30.0, help="seconds per run")
    parser.add_argument("--load", type=int, default=4, help="CPU-bound competitors at normal priority")
    parser.add_argument("--repeats", type=int, default=3, help="runs per case (alternating)")
    parser.add_argument("--json", action="store_true", help="one JSON object on stdout")
    args = parser.parse_args()
    runs = []
    with competitors(args.load):
        for _ in range(args.repeats):
            for case in CASES:
                runs.append(measure(case, args.seconds))
                if not args.json:
                    print(json.dumps(runs[-1]), flush=True)
    if args.json:
        print(json.dumps({"load": args.load, "seconds": args.seconds, "runs": runs}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
