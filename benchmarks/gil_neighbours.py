"""A real-time loop and a normal-priority neighbour in one Python process: how long the
loop waits for the GIL beside CPU-bound competitors.

    python benchmarks/gil_neighbours.py --cases worker:10,worker:0 --seconds 30 --load 4 --repeats 3
    python benchmarks/gil_neighbours.py --cases sampler:thread,sampler:process,none --seconds 30 --load 4 --repeats 3

The loop runs SCHED_FIFO 30 (the control path's executors' priority) with a 2 ms period
and a little Python per tick, as an executor does. Its neighbour, per case:

* ``worker:N``: a thread at nice N building 230 kB frames (a 320x240 RGB image's bytes)
  and a list every 2 ms, as the live views build image messages between their C calls
  (ros_nodes/newest_only.py's choice of nice value);
* ``sampler:thread``: a thread reading every thread's ``/proc`` entry once a second, as
  the real-time demand sampler once did in the graph's process;
  ``sampler:process``: ``RealtimeDemand`` as it runs now, from a process of its own;
* ``none``.

Each case is measured ``--repeats`` times, alternating, with ``--load`` CPU-bound
competitors at normal priority running throughout. Reports each run's lateness
percentiles, its maximum and the ticks later than 15 ms. Needs the privilege to run
SCHED_FIFO (root, or an rtprio limit).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import threading
import time
from collections.abc import Callable, Iterator

import numpy as np

from sim2real.bench.load import competitors
from sim2real.hardware.realtime import EXECUTOR_PRIORITY, realtime_thread
from sim2real.hardware.realtime_demand import RealtimeDemand, thread_times

PERIOD = 0.002
CASES = ("worker:10", "worker:0", "sampler:thread", "sampler:process", "none")


def _thread(stop: threading.Event, work: Callable[[], None]) -> Iterator[None]:
    thread = threading.Thread(target=work, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


@contextlib.contextmanager
def neighbour(case: str) -> Iterator[None]:
    """The case's neighbour, running while the block runs."""
    kind, _, arg = case.partition(":")
    stop = threading.Event()
    if kind == "worker":
        def build_frames() -> None:
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), int(arg))
            frame = np.zeros((240, 320, 3), np.uint8)
            while not stop.is_set():
                sum(list(bytes(frame)[:2000]))  # Python between C calls, holding the GIL
                time.sleep(PERIOD)

        yield from _thread(stop, build_frames)
    elif case == "sampler:thread":
        def sample() -> None:
            while not stop.wait(1.0):
                thread_times()

        yield from _thread(stop, sample)
    elif case == "sampler:process":
        demand = RealtimeDemand().start()
        try:
            yield
        finally:
            demand.stop()
    elif case == "none":
        yield
    else:
        raise SystemExit(f"gil_neighbours: unknown case {case!r}; choose from {', '.join(CASES)}")


def measure(case: str, seconds: float) -> dict[str, object]:
    lateness: list[float] = []
    with neighbour(case), realtime_thread("benchmark loop", EXECUTOR_PRIORITY, cpu=None) as status:
        if not status.realtime:
            raise SystemExit(f"gil_neighbours: needs SCHED_FIFO: {status.reason}")
        due = time.monotonic()
        end = due + seconds
        while due < end:
            due += PERIOD
            time.sleep(max(0.0, due - time.monotonic()))
            lateness.append(time.monotonic() - due)
            sum(range(200))  # a little Python per tick, as an executor runs
    late = np.asarray(lateness) * 1e3
    return {"case": case, "p50_ms": round(float(np.percentile(late, 50)), 2),
            "p99_ms": round(float(np.percentile(late, 99)), 2), "p999_ms": round(float(np.percentile(late, 99.9)), 2),
            "max_ms": round(float(late.max()), 1), "over_15_ms": int((late > 15).sum()), "ticks": int(late.size)}


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--cases", default=",".join(CASES), help=f"comma-separated, of {', '.join(CASES)}")
    parser.add_argument("--seconds", type=float, default=30.0, help="seconds per run")
    parser.add_argument("--load", type=int, default=4, help="CPU-bound competitors at normal priority")
    parser.add_argument("--repeats", type=int, default=2, help="runs per case (alternating)")
    parser.add_argument("--json", action="store_true", help="one JSON object on stdout")
    args = parser.parse_args()
    cases = [c.strip() for c in args.cases.split(",") if c.strip()]
    runs = []
    with competitors(args.load):
        for _ in range(args.repeats):
            for case in cases:
                runs.append(measure(case, args.seconds))
                if not args.json:
                    print(json.dumps(runs[-1]), flush=True)
    if args.json:
        print(json.dumps({"load": args.load, "seconds": args.seconds, "runs": runs}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
