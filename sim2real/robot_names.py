"""The registered robots' names (``sim2real.sim.ROBOTS``, the one registry), read when
first needed: importing the simulation takes about a second, which building a command's
argument parser or declaring a node's settings should not pay before a robot is named.

    parser.add_argument("--robot", choices=ROBOT_NAMES)      # argparse checks `in`, help lists them
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import overload


class RegisteredRobots(Sequence[str]):
    """The names in registration order; every read asks the registry."""

    @staticmethod
    def _names() -> tuple[str, ...]:
        from sim2real.sim import ROBOTS

        return tuple(ROBOTS)

    @overload
    def __getitem__(self, index: int) -> str: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[str]: ...

    def __getitem__(self, index: int | slice) -> str | Sequence[str]:
        return self._names()[index]

    def __len__(self) -> int:
        return len(self._names())

    def __iter__(self) -> Iterator[str]:
        return iter(self._names())

    def __contains__(self, name: object) -> bool:
        return name in self._names()

    def __repr__(self) -> str:
        return repr(self._names())


ROBOT_NAMES = RegisteredRobots()
