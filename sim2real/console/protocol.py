"""The console's wire format, strictly: JSON as RFC 8259 has it, small and shallow, both ways.

Incoming messages are refused with a reason (never an exception out of the session) when
they are not a JSON object, nest deeper than :data:`MAX_DEPTH`, carry ``NaN`` or
``Infinity`` (Python's JSON extension, not JSON), an integer of more than
:data:`MAX_INT_DIGITS` digits (10**400 cannot become a float) or a float that overflows.
Outgoing messages never carry ``NaN`` or ``Infinity``: a non-finite number is sent as
``null``.
"""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np

MAX_DEPTH = 4
"""Nesting of arrays and objects in a page's message (the deepest is ``{"axes": [...]}``)."""
MAX_INT_DIGITS = 20


class Refused(ValueError):
    """A message that is not one the console accepts; the text says why."""


def _depth(text: str) -> int:
    """How deep arrays and objects nest in ``text`` (strings skipped), without parsing it."""
    depth = deepest = 0
    in_string = escaped = False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in "]}":
            depth -= 1
    return deepest


def _constant(name: str) -> Any:
    raise Refused(f"{name} is not JSON (numbers must be finite)")


def _int(digits: str) -> int:
    if len(digits.lstrip("-")) > MAX_INT_DIGITS:
        raise Refused(f"an integer of {len(digits.lstrip('-'))} digits is out of range")
    return int(digits)


def _float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise Refused(f"{text[:20]} is out of range (numbers must be finite)")
    return value


def parse_message(text: str) -> dict[str, Any]:
    """A page's message as a dict.

    Raises:
        Refused: anything else, with the reason.
    """
    if _depth(text) > MAX_DEPTH:
        raise Refused(f"nested deeper than {MAX_DEPTH} levels")
    try:
        msg = json.loads(text, parse_constant=_constant, parse_int=_int, parse_float=_float)
    except Refused:
        raise
    except (ValueError, RecursionError) as exc:
        raise Refused("not JSON") from exc
    if not isinstance(msg, dict):
        raise Refused("not a JSON object")
    return msg


def finite_number(value: Any) -> bool:
    """A JSON number that is finite (``true`` is no number here)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _finite(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, np.ndarray)):
        return [_finite(v) for v in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def dumps(message: dict[str, Any]) -> str:
    """``message`` as strict JSON: non-finite numbers become ``null``, numpy values plain."""
    return json.dumps(_finite(message), allow_nan=False)
