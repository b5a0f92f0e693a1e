"""Registries of classes imported only when used (a backend needs its vendor's library,
which an install without the ``hardware`` extra lacks)."""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import TypeVar

from sim2real.sim.core.errors import ConfigError

T = TypeVar("T")


def load_registered(registry: Mapping[str, str], name: str, base: type[T], what: str) -> type[T]:
    """The class ``registry[name]`` (``module:Class``) names, checked to be a ``base``.

    Raises:
        ConfigError: ``name`` is not registered (the message lists what is).
    """
    if name not in registry:
        raise ConfigError("backend", f"unknown {what} {name!r}; known: {', '.join(sorted(registry))}")
    module, _, attribute = registry[name].partition(":")
    found = getattr(importlib.import_module(module), attribute)
    if not (isinstance(found, type) and issubclass(found, base)):
        raise TypeError(f"{registry[name]} is not a {base.__name__}")
    return found
