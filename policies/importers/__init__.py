"""Importing policies trained elsewhere (Isaac Gym, Isaac Lab) as sim2real policies:
one reader module per foreign format fills a :class:`~sim2real.policies.importers.spec.ForeignSpec`
(register it in :data:`READERS`), :mod:`~sim2real.policies.importers.writer` does the rest."""

from __future__ import annotations

from types import ModuleType

from sim2real.policies.importers import isaac_lab, legged_gym, rl_sar, unitree_deploy

READERS: dict[str, ModuleType] = {
    "rl_sar": rl_sar,
    "legged_gym": legged_gym,
    "isaac_lab": isaac_lab,
    "unitree_deploy": unitree_deploy,
}
"""Format -> its reader module: ``read(path, **files) -> ForeignSpec`` and ``FILES``, the
extra files and options it takes (``sim2real import`` flags of the same names)."""
