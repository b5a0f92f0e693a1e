"""Plain values (from YAML) into typed dataclasses, strictly: unknown keys and
values of the wrong type raise :class:`ConfigError` naming the dotted field.

YAML 1.1 reads ``3e-4`` as a string (it wants ``3.0e-4``); float fields accept
such strings so config files can be written the way people write numbers.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from typing import Any, Union

from sim2real.sim.core.errors import ConfigError


def from_dict(cls: type, values: dict[str, Any], prefix: str = "") -> Any:
    """An instance of dataclass ``cls`` from ``values`` (missing fields keep defaults)."""
    if not isinstance(values, dict):
        raise ConfigError(prefix.rstrip(".") or "config", f"expected a mapping, got {values!r}")
    hints = typing.get_type_hints(cls)
    fields = {f.name for f in dataclasses.fields(cls)}
    kwargs: dict[str, Any] = {}
    for key, value in values.items():
        path = prefix + str(key)
        if key not in fields:
            raise ConfigError(path, f"unknown field; known: {sorted(fields)}")
        kwargs[key] = coerce(value, hints[key], path)
    return cls(**kwargs)


def coerce(value: Any, tp: Any, path: str) -> Any:
    """``value`` converted to type ``tp`` or a ConfigError naming ``path``."""
    origin = typing.get_origin(tp)
    if dataclasses.is_dataclass(tp):
        return from_dict(tp, value if value is not None else {}, path + ".")
    if origin in (Union, types.UnionType):
        args = typing.get_args(tp)
        if value is None and type(None) in args:
            return None
        errors = []
        for arg in args:
            if arg is type(None):
                continue
            try:
                return coerce(value, arg, path)
            except ConfigError as exc:
                errors.append(str(exc))
        raise ConfigError(path, f"{value!r} matches none of {[a.__name__ for a in args]}")
    if origin is list:
        if not isinstance(value, (list, tuple)):
            raise ConfigError(path, f"expected a list, got {value!r}")
        (item,) = typing.get_args(tp)
        return [coerce(v, item, f"{path}[{i}]") for i, v in enumerate(value)]
    if origin is dict:
        if not isinstance(value, dict):
            raise ConfigError(path, f"expected a mapping, got {value!r}")
        return dict(value)
    if tp is Any:
        return value
    if tp is bool:
        if not isinstance(value, bool):
            raise ConfigError(path, f"expected true or false, got {value!r}")
        return value
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, (int, float, str)):
            raise ConfigError(path, f"expected an integer, got {value!r}")
        try:
            f = float(value)
        except ValueError:
            raise ConfigError(path, f"expected an integer, got {value!r}") from None
        if f != int(f):
            raise ConfigError(path, f"expected an integer, got {value!r}")
        return int(f)
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, (int, float, str)):
            raise ConfigError(path, f"expected a number, got {value!r}")
        try:
            return float(value)
        except ValueError:
            raise ConfigError(path, f"expected a number, got {value!r}") from None
    if tp is str:
        if not isinstance(value, (str, int, float)) or isinstance(value, bool):
            raise ConfigError(path, f"expected a string, got {value!r}")
        return str(value)
    raise ConfigError(path, f"unsupported field type {tp}")  # a programming error, named anyway
