"""A backend's options (``hardware_bridge.backend_options``) through the one strict loader.

A backend's options are flat JSON (``{"interface": "enp3s0", "stand_kp": 60}``) spread
over the dataclasses that use them (the network, the state machine, the estimator);
:func:`load_options` hands each its own keys and loads them with
:func:`sim2real.sim.core.schema.from_dict`, so a wrong type (``"multicast": "false"``),
an out-of-range value or an unknown key is one line naming ``backend_options.KEY``
before the robot is touched.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from sim2real.sim.core.errors import ConfigError
from sim2real.sim.core.schema import from_dict

PREFIX = "backend_options."


def load_options(options: Mapping[str, Any], groups: Sequence[tuple[type, str]], robot: str) -> list[Any]:
    """One instance per ``(dataclass, key prefix)`` in ``groups`` from ``options``.

    Raises:
        ConfigError: an unknown key (the message lists the known ones), a wrong type or
            range, or a dataclass's own ``validate()``.
    """
    names = [{f.name for f in dataclasses.fields(cls) if f.init} for cls, _ in groups]
    split: list[dict[str, Any]] = [{} for _ in groups]
    for key, value in options.items():
        for i, (_, prefix) in enumerate(groups):
            if key.startswith(prefix) and key[len(prefix):] in names[i]:
                split[i][key[len(prefix):]] = value
                break
        else:
            known = sorted(prefix + n for (_, prefix), group in zip(groups, names, strict=True) for n in group)
            raise ConfigError(PREFIX + key, f"unknown {robot} backend option; known: {', '.join(known)}")
    return [from_dict(cls, values, prefix=PREFIX + prefix) for (cls, prefix), values in zip(groups, split, strict=True)]
