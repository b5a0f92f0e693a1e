"""The one rule that gives a test its own DDS domain (every helper and test imports it:
two allocators once handed the same domain to two tests of one run, and a test saw the
other's nodes).

tests/conftest.py gives each pytest-xdist worker a slice [low, high) of 1..232
(``SIM2REAL_TEST_DOMAINS``) and sets ``ROS_DOMAIN_ID`` to ``low``, the process's default.
Each call here returns the next domain of the rest of the slice, starting at a place set
by the process id: consecutive calls never repeat until the slice is used up, and a
domain ``d`` handed out leaves ``d + 1`` inside the slice too (a test may put its robot's
side there)."""

from __future__ import annotations

import itertools
import os

_counter = itertools.count()


def domain_slice() -> tuple[int, int]:
    """This process's slice ``[low, high)``."""
    low, high = (int(part) for part in os.environ.get("SIM2REAL_TEST_DOMAINS", "1:233").split(":"))
    return low, high


def unique_domain_id() -> int:
    """A DDS domain of this process's slice, other than its default ``low`` and not
    handed out before in this process (until the slice is used up)."""
    low, high = domain_slice()
    first, span = low + 2, high - low - 3  # low (and low + 1, its pair) stay the default's
    return first + (os.getpid() * 31 + next(_counter)) % span
