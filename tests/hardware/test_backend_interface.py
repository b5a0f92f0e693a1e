"""Every motion command reaches a robot through the safety filter: a backend's one door
for motion is :meth:`RobotBackend.command`, which the hardware bridge feeds with the
filter's output. A backend's own public methods may only read (its driver's state, its
timing, its logs); one that moved the robot would be a way around the filter (the PX4
backend once had public attitude, position and velocity setpoints)."""

from __future__ import annotations

import inspect

import pytest

from sim2real.hardware.backend import BACKENDS, RobotBackend, backend_class

READ_ONLY = {
    "options_class": "the options' dataclass (a class, not an action)",
    "driver_state": "the UR driver's program, speed scaling and controller, as read",
    "writer_timing": "the Go2 writer's measured ticks",
    "hover_log": "the Crazyflie's flight samples, as logged",
}
"""Public methods a backend adds to :class:`RobotBackend`'s, each one that only reads."""


@pytest.mark.parametrize("name", sorted(BACKENDS))
def test_a_backend_moves_the_robot_only_through_command(name: str) -> None:
    cls = backend_class(name)
    interface = {n for n in dir(RobotBackend) if not n.startswith("_")}
    added = {n for n, v in inspect.getmembers(cls) if not n.startswith("_") and callable(v)} - interface
    assert added <= set(READ_ONLY), (
        f"{name} adds public methods {sorted(added - set(READ_ONLY))}: a motion command must go through "
        "command() (the filter's output); a method that only reads belongs in READ_ONLY, with why")
