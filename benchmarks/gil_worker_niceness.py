"""A real-time loop and a reniced worker in one Python process: how long the loop waits
for the GIL beside CPU-bound competitors (ros_nodes/newest_only.py's choice of nice value).

    python benchmarks/gil_worker_niceness.py --seconds 30 --load 4 --repeats 2 [--json]

The loop runs SCHED_FIFO 30 (the control path's executors' priority) with a 2 ms period
and runs a little Python at each tick, as an executor does; the worker builds 230 kB
frames (a 320x240 RGB image's bytes) and a list, every 2 ms, as the live views build
image messages between their C calls. Each case (worker at nice 10, then at nice 0) is
measured ``--repeats`` times, alternating, with ``--load`` CPU-bound competitors at normal
priority running throughout. Reports each run's lateness percentiles, its maximum and the
ticks later than 15 ms. Needs the privilege to run SCHED_FIFO (root, or an rtprio limit).
"""

from __future__ import annotations

import argparse
import json
import os
import threading
import time

import numpy as np

from sim2real.bench.load import competitors
from sim2real.hardware.realtime import EXECUTOR_PRIORITY, realtime_thread

PERIOD = 0.002


def measure(niceness: int, seconds: float) -> dict[str, float]:
    stop = threading.Event()

    def worker() -> None:
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), niceness)
        frame = np.zeros((240, 320, 3), np.uint8)
        while not stop.is_set():
            sum(list(bytes(frame)[:2000]))  # Python between C calls, holding the GIL
            time.sleep(PERIOD)

    lateness: list[float] = []

    def loop() -> None:
        with realtime_thread("benchmark loop", EXECUTOR_PRIORITY, cpu=None) as status:
            if not status.realtime:
                raise SystemExit(f"gil_worker_niceness: needs SCHED_FIFO: {status.reason}")
            due = time.monotonic()
            end = due + seconds
            while due < end:
                due += PERIOD
                time.sleep(max(0.0, due - time.monotonic()))
                lateness.append(time.monotonic() - due)

    busy = threading.Thread(target=worker, daemon=True)
    busy.start()
    timed = threading.Thread(target=loop)
    timed.start()
    timed.join()
    stop.set()
    late = np.asarray(lateness) * 1e3
    return {"nice": niceness, "p50_ms": round(float(np.percentile(late, 50)), 2),
            "p99_ms": round(float(np.percentile(late, 99)), 2), "p999_ms": round(float(np.percentile(late, 99.9)), 2),
            "max_ms": round(float(late.max()), 1), "over_15_ms": int((late > 15).sum()), "ticks": int(late.size)}


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=30.0, help="seconds per run")
    parser.add_argument("--load", type=int, default=4, help="CPU-bound competitors at normal priority")
    parser.add_argument("--repeats", type=int, default=2, help="runs per nice value (alternating)")
    parser.add_argument("--json", action="store_true", help="one JSON object on stdout")
    args = parser.parse_args()
    runs = []
    with competitors(args.load):
        for _ in range(args.repeats):
            for niceness in (10, 0):
                runs.append(measure(niceness, args.seconds))
                if not args.json:
                    print(json.dumps(runs[-1]), flush=True)
    if args.json:
        print(json.dumps({"load": args.load, "seconds": args.seconds, "runs": runs}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
