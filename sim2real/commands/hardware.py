"""Real-robot tools: run the protocol-level emulator of a robot (the robot side of the wire).

`sim2real hardware emulate --robot quadruped` runs a simulated Go2 behind Unitree's
low-level DDS topics (the arm: ros2_control's topics; the drone: a Crazyflie's CRTP over
cflib's UDP link), in real time, on loopback. Its first line on stderr is
`connect: {JSON}`, the backend options that reach it (`hardware_bridge.backend_options`);
`sim2real deploy --backend real --emulate` starts one and connects for you.

It also plays the operator: the simulated task's goal or velocity command and its
episodes are published on ROS 2 (`goal`, `cmd_vel`, `episodes`), as a person would for a
real robot (--no-mission: not). --cameras front,wrist publishes the cell's cameras as
their drivers do (sensor_msgs/Image on /<camera>/image_raw, drawn from the simulation
while someone subscribes; the arm). --fault injects a mismatch into the state it sends
(the pre-flight check's cases): swap_joints=I,J, joint_units=deg, imu_flipped=true,
quat_order=xyzw, rate_hz=HZ, latency=SECONDS.

Runs until --duration elapses or Ctrl-C / SIGTERM; --json then prints its counters.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
from typing import Any

from sim2real.commands.output import add_json_flag, console, emit_json
from sim2real.errors import ConfigError
from sim2real.robot_names import ROBOT_NAMES
from sim2real.stopping import StopRequest, stop_on_signals


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    emulate = sub.add_parser("emulate", help="run a robot emulator behind its vendor's protocol")
    emulate.add_argument("--robot", choices=ROBOT_NAMES, default="arm", help="robot")
    emulate.add_argument("--backend", default="", help="protocol (default: the robot's own: ros2_control, ur, "
                                                       "unitree_go2, crazyflie, px4)")
    emulate.add_argument("--task", default="", help="simulated task (default: the robot's deployment task)")
    emulate.add_argument("--seed", type=int, default=0, help="seed of the simulated task")
    emulate.add_argument("--airframe", default="", help="the drone emulated by px4: crazyflie (default) or x500 "
                         "(sim/drone/airframe.py)")
    emulate.add_argument("--backend-options", default="{}", metavar="JSON",
                         help="the host backend's options; the robot is set up as they describe it (e.g. "
                              "'{\"controller\": \"scaled_joint_trajectory_controller\"}' for ur5e)")
    emulate.add_argument("--port", type=int, default=None,
                         help="UDP port where the protocol has one (default: the robot's own, the Crazyflie "
                              "simulators' 19850; 0: any free one)")
    emulate.add_argument("--domain-id", type=int, default=None,
                         help="DDS domain (default: $ROS_DOMAIN_ID, else 0)")
    emulate.add_argument("--robot-domain-id", type=int, default=0,
                         help="DDS domain of a robot speaking plain DDS (the Go2; default: 0, the robot's own)")
    emulate.add_argument("--interface", default="lo",
                         help="network interface of a robot speaking plain DDS (default: lo, this machine only; "
                              "auto: the one on the Go2's network 192.168.123.0/24, as the robot)")
    emulate.add_argument("--fault", action="append", default=[], metavar="KEY=VALUE",
                         help="inject a data mismatch (repeatable): swap_joints=I,J joint_units=deg "
                              "imu_flipped=true quat_order=xyzw rate_hz=HZ latency=S")
    emulate.add_argument("--no-mission", action="store_true", help="do not publish the mission on ROS 2")
    emulate.add_argument("--cameras", default="", help="comma-separated cameras of the simulated cell to publish "
                                                       "on /<camera>/image_raw (e.g. front,wrist)")
    emulate.add_argument("--camera-size", default="320x240", metavar="WxH", help="camera frames' size")
    emulate.add_argument("--camera-rate", type=float, default=15.0, help="frames/s per camera, at most")
    emulate.add_argument("--duration", type=float, default=0.0, help="seconds to run (0: until interrupted)")
    add_json_flag(emulate)


def parse_faults(items: list[str]) -> Any:
    """``["swap_joints=1,3", ...]`` -> :class:`StreamFaults` (one-line ConfigError otherwise)."""
    from sim2real.hardware.emulator.faults import StreamFaults

    kwargs: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        try:
            if key == "swap_joints":
                i, j = (int(v) for v in value.split(","))
                kwargs[key] = (i, j)
            elif key in ("joint_units", "quat_order"):
                choices = {"joint_units": ("rad", "deg"), "quat_order": ("wxyz", "xyzw")}[key]
                if value not in choices:
                    raise ValueError(f"one of {', '.join(choices)}")
                kwargs[key] = value
            elif key == "imu_flipped":
                if value.lower() not in ("true", "false"):
                    raise ValueError("true or false")
                kwargs[key] = value.lower() == "true"
            elif key in ("rate_hz", "latency"):
                kwargs[key] = float(value)
            else:
                raise ValueError("a known fault: swap_joints, joint_units, imu_flipped, quat_order, rate_hz, latency")
            if not sep:
                raise ValueError("KEY=VALUE")
        except ValueError as exc:
            raise ConfigError(f"--fault {item}", f"expected {exc}") from None
    return StreamFaults(**kwargs)


def start_emulator(args: argparse.Namespace) -> Any:
    from sim2real.hardware.emulator.base import EmulatorSettings, emulator_class
    from sim2real.ros_nodes.deployment import json_object
    from sim2real.sim import robot_deployment

    try:
        cls = emulator_class(robot_deployment(args.robot).backend(args.backend))
    except ConfigError as exc:
        raise ConfigError("--backend", exc.message) from None
    domain = args.domain_id if args.domain_id is not None else int(os.environ.get("ROS_DOMAIN_ID", "0"))
    settings = EmulatorSettings(robot=args.robot, task=args.task, seed=args.seed, port=args.port, domain_id=domain,
                                robot_domain_id=args.robot_domain_id, interface=args.interface, airframe=args.airframe,
                                faults=parse_faults(args.fault),
                                backend_options=json_object(args.backend_options, "--backend-options"))
    return cls.launch(settings), domain


def run(args: argparse.Namespace) -> int:
    os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
    emulator, domain = start_emulator(args)
    stop = StopRequest()
    with stop_on_signals(stop.set):  # from the first line on: a stop is never a traceback
        serving = threading.Thread(target=emulator.serve, name="emulator", daemon=True,
                                   kwargs={"duration": args.duration, "should_stop": stop.is_set})
        cameras = None
        try:  # the emulator is closed however the run ends, cameras that failed to start included
            # Machine-readable first line on stderr: how a backend reaches this emulator.
            sys.stderr.write(f"connect: {json.dumps(emulator.connect_options())}\n")
            sys.stderr.flush()
            cameras = _start_cameras(emulator, domain, args) if args.cameras else None
            serving.start()
            _publish_missions(emulator, domain, serving, stop) if not args.no_mission else _wait(serving, stop)
        finally:
            stop.set()
            if serving.ident is not None:  # started
                serving.join(timeout=5)
            try:
                summary = emulator.summary()
                if cameras is not None:
                    summary["cameras"] = cameras()
            finally:
                emulator.close()
    if args.json:
        emit_json(summary)
    else:
        console.print(f"{args.robot} emulator: " + ", ".join(f"{k} {v}" for k, v in summary.items()))
    return 0


def _start_cameras(emulator: Any, domain: int, args: argparse.Namespace) -> Any:
    """The cell's cameras on a node of their own; returns what stops them (and says how
    many frames went out)."""
    import rclpy
    from rclpy.context import Context

    from sim2real.ros_nodes.cell_cameras import CellCameras

    try:
        width, height = (int(v) for v in args.camera_size.lower().split("x"))
        if not (16 <= width <= 4096 and 16 <= height <= 4096 and args.camera_rate > 0):
            raise ValueError
    except ValueError:
        raise ConfigError("--camera-size", f"expected WxH within 16..4096 and a positive --camera-rate, "
                                           f"got {args.camera_size!r} at {args.camera_rate!r}") from None
    names = tuple(c for c in args.cameras.split(",") if c)
    context = Context()
    rclpy.init(context=context, domain_id=domain)
    node = rclpy.create_node("cell_cameras", context=context)
    try:
        cameras = CellCameras(node, emulator.watch_pose(lambda now, data: cameras.offer(now, data)), names,
                              (width, height), args.camera_rate)
    except ValueError as exc:
        node.destroy_node()
        rclpy.shutdown(context=context)
        raise ConfigError("--cameras", str(exc)) from None

    def stop() -> dict[str, int]:
        cameras.close()
        node.destroy_node()
        rclpy.shutdown(context=context)
        return {"published": cameras.frames_published, "dropped": cameras.frames_dropped, "errors": cameras.errors}

    return stop


def _wait(serving: threading.Thread, stop: StopRequest) -> None:
    while serving.is_alive() and not stop.wait(0.1):
        pass


def _publish_missions(emulator: Any, domain: int, serving: threading.Thread, stop: StopRequest) -> None:
    import rclpy
    from rclpy.context import Context

    from sim2real.ros_nodes.mission import MissionPublisher

    context = Context()
    rclpy.init(context=context, domain_id=domain)
    node = MissionPublisher(context=context)
    try:
        while serving.is_alive() and not stop.wait(0.1):
            mission = emulator.mission()
            if mission is not None:
                node.publish(mission)
    finally:
        node.destroy_node()
        rclpy.shutdown(context=context)
