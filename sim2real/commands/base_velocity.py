"""``--base-velocity``: what a quadruped policy observes as ``base_lin_vel`` (``eval``,
``robustness``, ``sim2sim``): the simulator's truth, or the robot's own leg odometry on
its simulated lowstate (:mod:`sim2real.sim.quadruped.onboard`). Another robot's task
refuses the option with a one-line error."""

from __future__ import annotations

import argparse
from typing import Any

from sim2real.sim.quadruped.onboard import BASE_VELOCITY_SOURCES


def add_base_velocity_flag(parser: argparse.ArgumentParser, default: str | None = None, detail: str = "") -> None:
    parser.add_argument("--base-velocity", choices=BASE_VELOCITY_SOURCES, default=default,
                        help="quadrupeds: what the policy observes as base_lin_vel: the simulator's truth, or the "
                             "robot's leg odometry on its simulated lowstate (noise, one physics step of latency)"
                             + (f"; {detail}" if detail else "; default: as the policy was trained"))


def base_velocity_options(args: argparse.Namespace) -> dict[str, Any] | None:
    """The task options ``--base-velocity`` asks for (None: the policy's own)."""
    return None if args.base_velocity is None else {"base_velocity": args.base_velocity}
