"""Typed dataclass fields as ROS 2 parameters: the value in the field's ROS type, and a
``ParameterDescriptor`` with its description (the field's docstring), its range
(``floating_point_range`` / ``integer_range``), its choices, whether it can change
while the node runs, and ``read_only`` for what is fixed at start.

``ros2 param describe`` then tells the operator what a parameter means and accepts,
and rclpy refuses a wrong type or a value out of range before any node code runs.
"""

from __future__ import annotations

import sys
import typing
from typing import Any, Literal

from rcl_interfaces.msg import FloatingPointRange, IntegerRange, ParameterDescriptor, ParameterType

from sim2real.sim.core.schema import FieldSpec

INT64_MAX = 2**63 - 1

_SCALAR = {bool: ParameterType.PARAMETER_BOOL, int: ParameterType.PARAMETER_INTEGER,
           float: ParameterType.PARAMETER_DOUBLE, str: ParameterType.PARAMETER_STRING}
_ARRAY = {bool: ParameterType.PARAMETER_BOOL_ARRAY, int: ParameterType.PARAMETER_INTEGER_ARRAY,
          float: ParameterType.PARAMETER_DOUBLE_ARRAY, str: ParameterType.PARAMETER_STRING_ARRAY}


def _scalar(tp: Any) -> type:
    """``float`` for ``float``, ``str`` for ``Literal['a', 'b']``, ..."""
    if typing.get_origin(tp) is Literal:
        return type(typing.get_args(tp)[0])
    return tp


def _item(spec: FieldSpec) -> tuple[type, bool]:
    """(element type, is a list) of a field."""
    base = spec.base
    if typing.get_origin(base) in (list, tuple):
        from sim2real.sim.core.schema import strip

        return _scalar(strip(typing.get_args(base)[0])), True
    return _scalar(base), False


def parameter_type(spec: FieldSpec) -> int:
    item, is_list = _item(spec)
    table = _ARRAY if is_list else _SCALAR
    if item not in table:
        raise TypeError(f"{spec.name}: {spec.type} has no ROS parameter type")
    return table[item]


def ros_value(spec: FieldSpec, value: Any) -> Any:
    """``value`` in the field's ROS type (``2`` for a float field is ``2.0``; tuples are lists)."""
    item, is_list = _item(spec)
    return [item(v) for v in value] if is_list else item(value)


def descriptor(spec: FieldSpec, live: bool, read_only: bool = False) -> ParameterDescriptor:
    """The descriptor of one field (see the module docstring)."""
    constraints = []
    _, is_list = _item(spec)
    if spec.choices:
        constraints.append("one of: " + ", ".join(str(c) for c in spec.choices))
    if spec.bounds is not None:
        constraints.append(f"{'each element ' if is_list else ''}in {spec.bounds}")
    if read_only:
        constraints.append("fixed when the node starts")
    elif live:
        constraints.append("can change while the node is active (applied at once, or refused with the reason)")
    else:
        constraints.append("read at configure: refused while the node is configured")
    d = ParameterDescriptor(name=spec.name, type=parameter_type(spec), description=spec.doc,
                            additional_constraints="; ".join(constraints), read_only=read_only,
                            dynamic_typing=False)
    b = spec.bounds
    if b is not None and not is_list:  # ROS ranges are closed; an open end is checked by the node
        if d.type == ParameterType.PARAMETER_DOUBLE:
            d.floating_point_range = [FloatingPointRange(
                from_value=float(b.low) if b.low is not None else -sys.float_info.max,
                to_value=float(b.high) if b.high is not None else sys.float_info.max, step=0.0)]
        elif d.type == ParameterType.PARAMETER_INTEGER:
            d.integer_range = [IntegerRange(from_value=int(b.low) if b.low is not None else -INT64_MAX,
                                            to_value=int(b.high) if b.high is not None else INT64_MAX, step=1)]
    return d
