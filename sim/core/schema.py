"""The one strict loader: plain values (YAML, ROS parameters, ``--set`` flags) into
typed dataclasses, for every config family (training, HIL-SERL, randomization,
energy tanks, safety limits, ROS node settings).

A field's type says what it accepts; ``Annotated[..., Bounds(...)]`` adds its range.
Wrong types are refused (``3e-4`` arrives from YAML 1.1 as a string and is read as the
number it is; ``abc`` is refused), as are values out of range, NaN and infinities,
unknown keys and non-integral numbers for integer fields. The error is one line naming
the file (when there is one), the dotted key, the value and what was expected.

The same type hints and the docstring under each field feed the ROS parameter
descriptors (:mod:`sim2real.ros_nodes.parameters`) and the configuration reference
(``docs/CONFIGURATION.md``), so the loader, ``ros2 param describe`` and the docs
cannot disagree.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import inspect
import itertools
import math
import textwrap
import types
import typing
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal, Union

from sim2real.errors import ConfigError


@dataclass(frozen=True)
class Bounds:
    """A numeric range (for a list: of each element). ``None``: unbounded on that side."""

    ge: float | None = None
    gt: float | None = None
    le: float | None = None
    lt: float | None = None

    def check(self, value: float, path: str) -> None:
        for bound, ok in ((self.gt, lambda v, b: v > b), (self.ge, lambda v, b: v >= b),
                          (self.lt, lambda v, b: v < b), (self.le, lambda v, b: v <= b)):
            if bound is not None and not ok(value, bound):
                raise ConfigError(path, f"{value!r} is out of range: expected {self}")

    @property
    def low(self) -> float | None:
        return self.ge if self.ge is not None else self.gt

    @property
    def high(self) -> float | None:
        return self.le if self.le is not None else self.lt

    def __str__(self) -> str:
        lo = f"{'(' if self.gt is not None else '['}{_num(self.low) if self.low is not None else '-inf'}"
        hi = f"{_num(self.high) if self.high is not None else 'inf'}{')' if self.lt is not None else ']'}"
        return f"{lo}, {hi}"


@dataclass(frozen=True)
class OneOf:
    """Choices from elsewhere (``Annotated[str, OneOf(names)]``): a registry's names,
    which a ``Literal`` would repeat by hand."""

    names: Sequence[str]
    """Any sequence; a lazy one (``sim2real.robot_names.ROBOT_NAMES``) is read at each check."""

    def check(self, value: Any, path: str) -> None:
        if value not in self.names:
            raise ConfigError(path, f"{value!r} is not one of {', '.join(map(repr, self.names))}")


def _num(x: float) -> str:
    return f"{x:g}"


def between(low: float, high: float) -> Bounds:
    """The closed range ``[low, high]``."""
    return Bounds(ge=low, le=high)


Positive = Annotated[float, Bounds(gt=0.0)]
NonNegative = Annotated[float, Bounds(ge=0.0)]
Fraction = Annotated[float, Bounds(ge=0.0, le=1.0)]
PositiveInt = Annotated[int, Bounds(ge=1)]
NonNegativeInt = Annotated[int, Bounds(ge=0)]


# -- loading ---------------------------------------------------------------------------------
def from_dict(cls: type, values: Any, prefix: str = "", validate: bool = True) -> Any:
    """An instance of dataclass ``cls`` from ``values`` (missing fields keep their
    defaults), then its ``validate()`` (cross-field rules) if it has one and ``validate``
    (off: types and ranges only, for one layer of a layered config)."""
    if isinstance(values, (list, tuple)) and len(values) == len(dataclasses.fields(cls)):
        values = {f.name: v for f, v in zip(dataclasses.fields(cls), values, strict=True)}  # [low, high]
    if not isinstance(values, dict):
        raise ConfigError(prefix.rstrip(".") or "config", f"expected a mapping, got {values!r}")
    hints = type_hints(cls)
    names = [f.name for f in dataclasses.fields(cls) if f.init]
    kwargs: dict[str, Any] = {}
    for key, value in values.items():
        path = prefix + str(key)
        if key not in names:
            raise ConfigError(path, f"unknown field; known: {', '.join(names)}")
        kwargs[key] = coerce(value, hints[key], path, validate)
    try:
        obj = cls(**kwargs)
    except (TypeError, ValueError) as exc:  # a __post_init__ check
        if isinstance(exc, ConfigError):
            raise
        raise ConfigError(prefix.rstrip(".") or cls.__name__, str(exc)) from None
    check = getattr(obj, "validate", None) if validate else None
    if callable(check):
        try:
            check()
        except ConfigError as exc:
            if prefix and not exc.field.startswith(prefix):
                raise ConfigError(prefix + exc.field, exc.message) from None
            raise
    return obj


def read_yaml(path: str | Path, expected: str = "a mapping at the top level") -> dict[str, Any]:
    """The YAML mapping in ``path``; a missing, malformed or non-mapping file is one
    ConfigError line naming the file (``expected`` says what the file should hold)."""
    import yaml

    p = Path(path)
    try:
        data = yaml.safe_load(p.read_text()) or {}
    except FileNotFoundError:
        raise ConfigError("config", f"file {p} does not exist") from None
    except yaml.YAMLError as exc:
        raise ConfigError("config", " ".join(f"not valid YAML: {exc}".split()), source=str(p)) from None
    if not isinstance(data, dict):
        raise ConfigError("config", f"expected {expected}", source=str(p))
    return data


def load_file(cls: type, path: str | Path) -> Any:
    """``cls`` from a YAML file; every error names the file."""
    try:
        return from_dict(cls, read_yaml(path))
    except ConfigError as exc:
        raise exc.with_source(str(path)) from None


def nest(flat: dict[str, Any]) -> dict[str, Any]:
    """Dotted keys into nested mappings (``None`` values, unset flags, are left out)."""
    out: dict[str, Any] = {}
    for key, value in flat.items():
        if value is None:
            continue
        node = out
        *parents, leaf = key.split(".")
        for part in parents:
            child = node.setdefault(part, {})
            if not isinstance(child, dict):
                raise ConfigError(key, f"{part} is a value, not a section")
            node = child
        node[leaf] = value
    return out


def flatten(values: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested mappings as dotted keys (``ppo.learning_rate``), the inverse of :func:`nest`;
    an empty mapping stays a value (``task_options: {}``)."""
    out: dict[str, Any] = {}
    for key, value in values.items():
        if isinstance(value, dict) and value:
            out.update(flatten(value, f"{prefix}{key}."))
        else:
            out[prefix + key] = value
    return out


def coerce(value: Any, tp: Any, path: str, validate: bool = True) -> Any:
    """``value`` converted to type ``tp`` (constraints included) or a ConfigError naming ``path``."""
    origin = typing.get_origin(tp)
    if origin is Annotated:
        inner, *extras = typing.get_args(tp)
        out = coerce(value, inner, path, validate)
        for bounds in (e for e in extras if isinstance(e, Bounds)):
            for i, v in enumerate(out if isinstance(out, (list, tuple)) else [out]):
                bounds.check(v, f"{path}[{i}]" if isinstance(out, (list, tuple)) else path)
        for one_of in (e for e in extras if isinstance(e, OneOf)):
            one_of.check(out, path)
        return out
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        return from_dict(tp, value if value is not None else {}, path + ".", validate)
    if origin is Literal:
        choices = typing.get_args(tp)
        if value not in choices or isinstance(value, bool) != isinstance(choices[0], bool):
            raise ConfigError(path, f"{value!r} is not one of {', '.join(map(repr, choices))}")
        return value
    if origin in (Union, types.UnionType):
        args = typing.get_args(tp)
        if value is None and type(None) in args:
            return None
        options = [a for a in args if a is not type(None)]
        if len(options) == 1:  # Optional[X]: X's own error says more
            return coerce(value, options[0], path, validate)
        for arg in options:
            try:
                return coerce(value, arg, path, validate)
            except ConfigError:
                continue
        raise ConfigError(path, f"{value!r} matches none of {', '.join(type_name(a) for a in args)}")
    if origin in (list, tuple):
        if not isinstance(value, (list, tuple)):
            raise ConfigError(path, f"expected a list, got {value!r}")
        args = typing.get_args(tp)
        if origin is tuple and args and args[-1] is not Ellipsis:  # fixed length
            if len(value) != len(args):
                raise ConfigError(path, f"expected {len(args)} values, got {value!r}")
            pairs = enumerate(zip(value, args, strict=True))
            return tuple(coerce(v, a, f"{path}[{i}]", validate) for i, (v, a) in pairs)
        item = args[0] if args else Any
        items = [coerce(v, item, f"{path}[{i}]", validate) for i, v in enumerate(value)]
        return tuple(items) if origin is tuple else items
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
        number = _number(value, path, "an integer")
        if number != int(number):
            raise ConfigError(path, f"expected an integer, got {value!r}")
        return int(number)
    if tp is float:
        return _number(value, path, "a number")
    if tp is str:
        if not isinstance(value, (str, int, float)) or isinstance(value, bool):
            raise ConfigError(path, f"expected a string, got {value!r}")
        return str(value)
    raise ConfigError(path, f"unsupported field type {tp}")  # a programming error, named anyway


def _number(value: Any, path: str, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise ConfigError(path, f"expected {what}, got {value!r}")
    try:
        number = float(value)  # YAML 1.1 reads 3e-4 as a string
    except ValueError:
        raise ConfigError(path, f"expected {what}, got {value!r}") from None
    if not math.isfinite(number):
        raise ConfigError(path, f"expected a finite number, got {value!r}")
    return number


# -- describing ------------------------------------------------------------------------------
@dataclass(frozen=True)
class FieldSpec:
    """What one field accepts, for descriptors and docs."""

    name: str
    type: Any
    """The full type hint (``Annotated`` included)."""
    default: Any
    doc: str
    bounds: Bounds | None
    choices: tuple[Any, ...] | None

    @property
    def base(self) -> Any:
        """The type without ``Annotated`` or ``Optional``."""
        return strip(self.type)


def type_hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls, include_extras=True)


def strip(tp: Any) -> Any:
    """``tp`` without ``Annotated`` layers (``X | None`` stays a union of stripped types)."""
    while typing.get_origin(tp) is Annotated:
        tp = typing.get_args(tp)[0]
    if typing.get_origin(tp) in (Union, types.UnionType):
        return functools.reduce(lambda a, b: a | b, (strip(a) for a in typing.get_args(tp)))
    return tp


def fields_of(cls: type) -> list[FieldSpec]:
    """Every init field of dataclass ``cls``: type, default, docstring and range."""
    hints, docs = type_hints(cls), field_docs(cls)
    out = []
    for f in dataclasses.fields(cls):
        if not f.init:
            continue
        tp = hints[f.name]
        # A field's range: in its type (Annotated[float, Bounds(...)]) or, for a field
        # whose value is a compound such as a randomization Range, in its metadata.
        bounds = next((e for e in _extras(tp) if isinstance(e, Bounds)), f.metadata.get("bounds"))
        base = strip(tp)
        one_of = next((e for e in _extras(tp) if isinstance(e, OneOf)), None)
        choices = typing.get_args(base) if typing.get_origin(base) is Literal else (
            tuple(one_of.names) if one_of is not None else None)
        if f.default is not dataclasses.MISSING:
            default = f.default
        elif f.default_factory is not dataclasses.MISSING:
            default = f.default_factory()
        else:
            default = dataclasses.MISSING
        out.append(FieldSpec(f.name, tp, default, docs.get(f.name, ""), bounds, choices))
    return out


def _extras(tp: Any) -> tuple[Any, ...]:
    """The ``Annotated`` metadata of ``tp`` (or of ``X`` in ``X | None``)."""
    if typing.get_origin(tp) in (Union, types.UnionType):
        return tuple(e for a in typing.get_args(tp) for e in _extras(a))
    return typing.get_args(tp)[1:] if typing.get_origin(tp) is Annotated else ()


@functools.cache
def field_docs(cls: type) -> dict[str, str]:
    """The docstring under each field (``x: float = 1.0`` then ``\"\"\"...\"\"\"``), the
    class's own over its bases'."""
    docs: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        if not dataclasses.is_dataclass(klass):
            continue
        try:
            tree = ast.parse(textwrap.dedent(inspect.getsource(klass)))
        except (OSError, TypeError):
            continue
        body = tree.body[0].body if tree.body and isinstance(tree.body[0], ast.ClassDef) else []
        for node, after in itertools.pairwise(body):
            if (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)
                    and isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant)
                    and isinstance(after.value.value, str)):
                docs[node.target.id] = inspect.cleandoc(after.value.value)
    return docs


def type_name(tp: Any) -> str:
    """A reader's name for a type hint: ``float``, ``list[float]``, ``'a' | 'b'``."""
    tp = strip(tp)
    origin = typing.get_origin(tp)
    if origin is Literal:
        return " | ".join(repr(c) for c in typing.get_args(tp))
    if origin in (Union, types.UnionType):
        return " | ".join(type_name(a) for a in typing.get_args(tp))
    if origin in (list, tuple, dict):
        args = ", ".join("..." if a is Ellipsis else type_name(a) for a in typing.get_args(tp))
        return f"{origin.__name__}[{args}]"
    if tp is type(None):
        return "None"
    return getattr(tp, "__name__", str(tp))
