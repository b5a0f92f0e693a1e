"""Attach the correction console to a running ROS 2 graph (docs/console.md).

  sim2real console --robot arm                          (cameras: the robot's simulated views)
  sim2real console --robot quadruped --cameras front    (real cameras from the camera node)

Prints the page's URL with its token (traded for an expiring session cookie when opened);
runs until Ctrl-C. The graph runs elsewhere (`ros2 launch sim2real <robot>.launch.py`,
`sim2real deploy --robot R --duration ...`) in the same ROS_DOMAIN_ID. HIL-SERL runs start
their console with `sim2real hil run --console`.
"""

from __future__ import annotations

import argparse
import sys

from sim2real.console.launch import DEFAULT_PORT
from sim2real.robot_names import ROBOT_NAMES


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--robot", choices=ROBOT_NAMES, required=True)
    parser.add_argument("--cameras", default=None,
                        help="comma-separated camera names (<cam>/image_raw/compressed); default: the simulated "
                             "robot's live views")
    parser.add_argument("--action-mode", default="", help="the safety filter's action mode (default: the robot's)")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help="0: any free port")
    parser.add_argument("--bind", default="127.0.0.1",
                        help="address to serve on; anything but loopback prints a warning")
    parser.add_argument("--takeover-blend", type=float, default=0.4, metavar="SECONDS")
    parser.add_argument("--safety-filter", default="safety_filter", help="the filter node whose e-stop it calls")
    parser.add_argument("--spacemouse", action="store_true", help="a SpaceMouse on this machine is an input too")


def run(args: argparse.Namespace) -> int:
    from sim2real.ros_nodes import console as node
    from sim2real.sim import robot_deployment

    cameras = args.cameras if args.cameras is not None else ",".join(robot_deployment(args.robot).live_cameras)
    params = {"robot": args.robot, "cameras": cameras, "action_mode": args.action_mode, "port": args.port,
              "bind": args.bind, "blend_seconds": args.takeover_blend, "safety_filter": args.safety_filter,
              "spacemouse": "true" if args.spacemouse else ""}
    ros_args = [f"{k}:={v}" for k, v in params.items() if v != ""]  # empty: the node's default
    return int(node.main([sys.argv[0], "--ros-args", *[a for kv in ros_args for a in ("-p", kv)]]))
