"""The demo's JSON: standard JSON only, so every reader can parse it.

Python writes ``NaN`` and ``Infinity`` for non-finite floats, which JSON does not have
(``jq`` and browsers refuse them). A figure that was not measured (no sim step on a
real robot, a ratio without a denominator) is ``null`` instead.
"""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np


def finite(obj: Any) -> Any:
    """``obj`` with every non-finite float as ``None`` (numpy scalars and arrays as Python's)."""
    if isinstance(obj, dict):
        return {str(k): finite(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [finite(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return finite(obj.tolist())
    if isinstance(obj, np.generic):
        return finite(obj.item())
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj


def dumps(obj: Any, indent: int | None = 2) -> str:
    """Standard JSON of ``obj`` (non-finite floats as ``null``; anything else that JSON
    cannot hold is an error, not a string)."""
    return json.dumps(finite(obj), indent=indent, allow_nan=False)
