"""Fixtures of the hardware tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from ros2_control_rig import Rig, connected_rig


@pytest.fixture
def rig() -> Iterator[Rig]:
    """The emulated Franka under ros2_control and a backend connected to it."""
    yield from connected_rig()
