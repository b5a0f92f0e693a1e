"""Importing policies trained elsewhere (Isaac Gym, Isaac Lab) as sim2real policies:
one reader per foreign format fills a :class:`~sim2real.policies.importers.spec.ForeignSpec`
(register it in :data:`READERS`), :mod:`~sim2real.policies.importers.writer` does the rest."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from sim2real.policies.importers import rl_sar
from sim2real.policies.importers.spec import ForeignSpec

READERS: dict[str, Callable[[Path], ForeignSpec]] = {
    "rl_sar": rl_sar.read,
}
