"""The one rule that gives a test its own DDS domain (every helper and test imports it:
two allocators once handed the same domain to two tests of one run, and a test saw the
other's nodes).

tests/conftest.py gives each pytest-xdist worker a slice [low, high) of 1..232
(``SIM2REAL_TEST_DOMAINS``) and sets ``ROS_DOMAIN_ID`` to ``low``, the process's default.
Each call here returns the first domain of the next pair of the rest of the slice,
starting at a place set by the process id: consecutive calls never repeat until the slice
is used up, and ``d + 1`` is the test's too (a test may put its robot's side there)."""

from __future__ import annotations

import itertools
import os

_counter = itertools.count()


def domain_slice() -> tuple[int, int]:
    """This process's slice ``[low, high)``."""
    low, high = (int(part) for part in os.environ.get("SIM2REAL_TEST_DOMAINS", "1:233").split(":"))
    return low, high


def unique_domain_id() -> int:
    """A DDS domain ``d`` of this process's slice, with ``d + 1`` free for the test's own
    use: pairs handed out in turn, never the default's (``low``, ``low + 1``), none again
    in this process until the slice is used up. Pairs, not neighbours: a test whose robot
    side is on ``d + 1`` would otherwise meet the next test's graph there while its
    participants are still going (measured: a bridge that received 1 command in 10 s)."""
    low, high = domain_slice()
    pairs = (high - low - 2) // 2
    return low + 2 + 2 * ((os.getpid() * 31 + next(_counter)) % pairs)
