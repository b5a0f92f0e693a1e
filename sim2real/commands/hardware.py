"""Real-robot tools: run the protocol-level emulator of a robot (the robot side of the wire).

`sim2real hardware emulate --robot arm --port 17001` runs a simulated arm behind the
sim2real arm protocol (UDP, docs/deployment.md "Real robots") in real time: it streams
state packets to the host in control (one at a time) and applies its command packets, holding the
arm when they stop. Point the hardware bridge at it with
`sim2real deploy --robot arm --backend real` (config/arm.yaml: hardware_bridge.robot_port).
Runs until --duration elapses or Ctrl-C / SIGTERM; --json then prints its counters
(ticks, holds, episodes, packets accepted and rejected per reason) as one JSON object.
"""

from __future__ import annotations

import argparse
import signal
import sys

from sim2real.commands.output import add_json_flag, console, emit_json


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    emulate = sub.add_parser("emulate", help="run a robot emulator behind its wire protocol")
    emulate.add_argument("--robot", choices=["arm"], default="arm", help="robot class (the arm protocol only, so far)")
    emulate.add_argument("--host", default="127.0.0.1", help="address to listen on (default: loopback)")
    emulate.add_argument("--port", type=int, default=17001, help="UDP port (0: any free port; printed on stderr)")
    emulate.add_argument("--task", default="ArmReach", help="simulated task (its targets are sent as the mission)")
    emulate.add_argument("--action-mode", default="ee_delta", choices=["ee_delta", "ee_impedance", "joint_torque"],
                         help="command space the emulated controller accepts")
    emulate.add_argument("--seed", type=int, default=0, help="seed of the simulated targets")
    emulate.add_argument("--command-timeout", type=float, default=0.15,
                         help="seconds without a valid command before the robot holds")
    emulate.add_argument("--duration", type=float, default=0.0, help="seconds to run (0: until interrupted)")
    add_json_flag(emulate)


def run(args: argparse.Namespace) -> int:
    from sim2real.hardware.emulator.arm import ArmEmulator, ArmEmulatorConfig

    config = ArmEmulatorConfig(host=args.host, port=args.port, task=args.task, action_mode=args.action_mode,
                               seed=args.seed, command_timeout=args.command_timeout)
    emulator = ArmEmulator(config)
    stop = {"now": False}

    def request_stop(signum: int, frame: object) -> None:
        stop["now"] = True

    previous = signal.signal(signal.SIGTERM, request_stop)
    host, port = emulator.address
    # Machine-readable first line on stderr, so a caller that asked for port 0 learns the port.
    sys.stderr.write(f"listening on {host}:{port}\n")
    sys.stderr.flush()
    try:
        emulator.serve(duration=args.duration, should_stop=lambda: stop["now"])
    except KeyboardInterrupt:
        pass
    finally:
        signal.signal(signal.SIGTERM, previous)
        summary = emulator.summary()
        emulator.close()
    if args.json:
        emit_json(summary)
    else:
        packets = summary.pop("packets")
        console.print(f"arm emulator at {summary.pop('address')}: " + ", ".join(f"{k} {v}" for k, v in summary.items()))
        console.print("packets: " + ", ".join(f"{k} {v}" for k, v in packets.items()))
    return 0
