"""Starting the console from a command: its flags, the bind check, the printed URL."""

from __future__ import annotations

import argparse
import ipaddress
import sys

from sim2real.console.auth import SESSION_TTL
from sim2real.errors import ConfigError
from sim2real.policies.teleop.operator import OperatorSettings
from sim2real.policies.teleop.target import ConsoleTarget

DEFAULT_PORT = 8765


def add_console_flags(parser: argparse.ArgumentParser, flag: bool = True) -> None:
    """``--console`` (when ``flag``), ``--console-port``, ``--console-bind``, ``--takeover-blend``,
    ``--console-spacemouse``, ``--console-session-hours``."""
    if flag:
        parser.add_argument("--console", action="store_true",
                            help="serve the correction console (a URL with its token is printed)")
    parser.add_argument("--console-port", type=int, default=DEFAULT_PORT, help="0: any free port")
    parser.add_argument("--console-bind", default="127.0.0.1", metavar="ADDR",
                        help="address to serve on; anything but loopback lets other machines reach the robot's "
                             "controls (the token still guards them) and prints a warning")
    parser.add_argument("--takeover-blend", type=float, default=OperatorSettings.blend_seconds, metavar="SECONDS",
                        help="a takeover blends from the policy's command into the operator's over this time")
    parser.add_argument("--console-spacemouse", action="store_true",
                        help="a SpaceMouse on this machine is an operator input too (hold its left button)")
    parser.add_argument("--console-session-hours", type=float, default=SESSION_TTL / 3600, metavar="HOURS",
                        help="a browser's session lasts this long; then the printed URL is needed again")


def operator_settings(args: argparse.Namespace) -> OperatorSettings:
    from sim2real.sim.core.schema import from_dict

    return from_dict(OperatorSettings, {"blend_seconds": args.takeover_blend})


def start_console(target: ConsoleTarget, args: argparse.Namespace):
    """Serve the console for ``target``; prints its URL (with the token) on stderr."""
    from sim2real.console.auth import new_token
    from sim2real.console.server import ConsoleServer

    bind = args.console_bind
    try:
        loopback = ipaddress.ip_address(bind).is_loopback
    except ValueError as exc:
        if bind != "localhost":
            raise ConfigError("console_bind", f"{bind!r} is not an IP address") from exc
        loopback = True
    if not 0 <= args.console_port <= 65535:
        raise ConfigError("console_port", f"{args.console_port} is not a port number")
    hours = float(getattr(args, "console_session_hours", SESSION_TTL / 3600))
    if not 0 < hours <= 24 * 30:
        raise ConfigError("console_session_hours", f"{hours} is not in (0, 720] hours")
    server = ConsoleServer(target, new_token(), bind, args.console_port, session_ttl=hours * 3600)
    server.start()
    if getattr(args, "console_spacemouse", False):
        from sim2real.console.spacemouse import SpaceMouseInput, open_spacemouse

        device = SpaceMouseInput(target, open_spacemouse())
        device.start()
        server.inputs.append(device)
    if not loopback:
        print(f"WARNING: the console listens on {bind}: anyone who can reach this address and has the token "
              "can move the robot. Prefer an SSH tunnel to 127.0.0.1.", file=sys.stderr)
    print(f"console: {server.url}", file=sys.stderr, flush=True)
    return server
