"""`sim2real deploy check --help`: every backend-options example in it is accepted by the
backend it is written for (the options go through the backend's own strict loader)."""

from __future__ import annotations

import json
import re
import shlex

import pytest

from sim2real.commands.deploy_check import build_parser
from sim2real.hardware.backend import backend_class
from sim2real.sim import robot_deployment

EXAMPLE = re.compile(r"^\s*sim2real deploy check .*$", re.MULTILINE)


def examples() -> list[tuple[str, str, dict]]:
    """(robot, backend, options) of every example in the help text that passes --options."""
    found = []
    for line in EXAMPLE.findall(build_parser().format_help()):
        words = shlex.split(line)
        if "--options" not in words:
            continue
        robot = words[words.index("--robot") + 1]
        backend = words[words.index("--backend") + 1] if "--backend" in words else robot_deployment(robot).real_backend
        found.append((robot, backend, json.loads(words[words.index("--options") + 1])))
    return found


def test_the_help_has_an_options_example() -> None:
    assert examples()


@pytest.mark.parametrize(("robot", "backend", "options"), examples())
def test_each_options_example_loads_through_its_backends_loader(robot: str, backend: str, options: dict) -> None:
    info = robot_deployment(robot)
    # The suite never uses a NIC (the DDS config refuses one under pytest): the example's
    # interface becomes loopback; its keys, types and every other value are loaded as written.
    loadable = {**options, "interface": "lo"} if "interface" in options else options
    # The backend's constructor loads its options (unknown keys, types, ranges) without touching the robot.
    backend_class(backend)(info.driver_mode(info.action_mode, {})[0], loadable)
