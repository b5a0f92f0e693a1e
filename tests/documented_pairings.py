"""The ``backend:=real`` pairings docs/hardware.md documents, read from it: what both the
fast check of their launch arguments (tests/ros_nodes/test_launch_and_config.py) and the
heavy run of each pairing (tests/hardware/test_launch_pairings.py) test, so a pairing is
written once, where the user reads it."""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

HARDWARE_DOC = Path(__file__).resolve().parents[1] / "docs" / "hardware.md"


@dataclass(frozen=True)
class Pairing:
    robot: str
    emulate: list[str]
    """``sim2real hardware emulate``'s arguments after ``--robot R``."""
    launch: dict[str, str]
    """The launch arguments (``name:=value``)."""


def documented_pairings(text: str | None = None) -> dict[str, Pairing]:
    """``sim2real hardware emulate --robot R [--backend B] & ros2 launch sim2real R.launch.py
    ARGS`` in ``text`` (default: docs/hardware.md), by ``R`` (its own backend) or ``R-B``."""
    found: dict[str, Pairing] = {}
    pattern = (r"sim2real hardware emulate --robot (\S+)(?: --backend (\S+))? & "
               r"ros2 launch sim2real (\S+)\.launch\.py ([^#\n]*)")
    for emulated, backend, robot, args in re.findall(pattern, HARDWARE_DOC.read_text() if text is None else text):
        assert emulated == robot, f"the {robot}'s launch paired with the {emulated}'s emulator"
        found[f"{robot}-{backend}" if backend else robot] = Pairing(
            robot, ["--backend", backend] if backend else [], dict(arg.split(":=", 1) for arg in shlex.split(args)))
    return found
