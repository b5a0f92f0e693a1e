"""Run a :class:`~sim2real.hardware.emulator.go2.Go2Emulator` in a process of its own
(``python -m sim2real.hardware.emulator.go2_serve --domain-id 42``), as a real robot is
another machine: the tests kill and restart it, and its 500 Hz loop does not share a
GIL with the backend's. Prints ``ready`` on stderr once its DDS entities exist, runs
until ``--duration`` or SIGTERM, then prints its summary as one JSON line on stdout.
"""

from __future__ import annotations

import argparse
import json
import sys

from sim2real.hardware.emulator.faults import StreamFaults
from sim2real.hardware.emulator.go2 import Go2Emulator, Go2EmulatorConfig
from sim2real.hardware.go2.dds import DdsConfig
from sim2real.stopping import StopRequest, stop_on_signals


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--domain-id", type=int, required=True)
    parser.add_argument("--interface", default="lo", help="lo (this machine), auto (the robot's network), a NIC")
    parser.add_argument("--duration", type=float, default=0.0, help="seconds (0: until SIGTERM)")
    parser.add_argument("--cmd-vel", type=float, nargs=3, default=(0.5, 0.0, 0.0))
    parser.add_argument("--no-sport-mode", action="store_true", help="boot already in low-level mode")
    parser.add_argument("--corrupt-state-after", type=float, default=float("inf"),
                        help="simulated seconds after which every lowstate frame has a wrong CRC")
    parser.add_argument("--rate-hz", type=float, default=0.0, help="a slow state stream (StreamFaults.rate_hz)")
    args = parser.parse_args(argv)
    config = Go2EmulatorConfig(cmd_vel=tuple(args.cmd_vel), sport_mode=not args.no_sport_mode,
                               corrupt_state_after=args.corrupt_state_after,
                               dds=DdsConfig(domain_id=args.domain_id, interface=args.interface))
    emulator = Go2Emulator(config, StreamFaults(rate_hz=args.rate_hz))
    stop = StopRequest()
    sys.stderr.write("ready\n")
    sys.stderr.flush()
    with stop_on_signals(stop.set):
        emulator.serve(duration=args.duration, should_stop=stop.is_set)
    summary = emulator.summary()
    emulator.close()
    print(json.dumps(summary, default=str), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
