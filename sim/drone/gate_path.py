"""The gate planner of the drone's hierarchy: a smooth path through the gate centres,
crossing each gate along its normal (the direction it must be flown through), and the
carrot a position controller follows along it.

The path is a cubic Hermite spline (SciPy's ``CubicHermiteSpline``) over the chord
length: through the start, each gate's centre and a point past the last gate, with unit
tangents: towards the first gate at the start, the gate's normal at each gate. Cut by
chord length, its parameter is close to arc length, so unit tangents give a path with
no loops or overshoots at the spacings of these courses (1.3-2 m between gates).
"""

from __future__ import annotations

import numpy as np
from scipy.interpolate import CubicHermiteSpline

STEP = 0.05
"""m between the path's samples."""
EXIT = 0.8
"""m flown straight on past the last gate."""


def plan_through_gates(start: np.ndarray, centres: np.ndarray, normals: np.ndarray, step: float = STEP) -> np.ndarray:
    """Samples ``[K, 3]`` of the path from ``start`` through the gates ``centres [N, 3]``
    (normals ``[N, 3]``, unit, the direction of flight), ending ``EXIT`` past the last."""
    start = np.asarray(start, dtype=float)
    centres, normals = np.asarray(centres, dtype=float), np.asarray(normals, dtype=float)
    knots = np.vstack([start, centres, centres[-1] + EXIT * normals[-1]])
    first = centres[0] - start
    tangents = np.vstack([first / max(np.linalg.norm(first), 1e-9), normals, normals[-1]])
    chord = np.concatenate([[0.0], np.cumsum(np.linalg.norm(np.diff(knots, axis=0), axis=1))])
    spline = CubicHermiteSpline(chord, knots, tangents, axis=0)
    return spline(np.arange(0.0, chord[-1] + step / 2, step))


def advance_along(path: np.ndarray, count: np.ndarray, progress: np.ndarray, pos: np.ndarray,
                  window: int = 40) -> np.ndarray:
    """The index of the sample nearest ``pos [B, 3]`` among the ``window`` samples from
    ``progress [B]`` on (never backwards: a path that passes near itself is not
    short-cut); ``path [B, K, 3]`` padded past each env's ``count`` samples."""
    offsets = np.arange(window)
    idx = np.minimum(progress[:, None] + offsets[None], count[:, None] - 1)
    rows = np.arange(len(pos))[:, None]
    distance = np.linalg.norm(path[rows, idx] - pos[:, None], axis=2)
    return idx[np.arange(len(pos)), np.argmin(distance, axis=1)]


def carrot(path: np.ndarray, count: np.ndarray, progress: np.ndarray, lookahead: float,
           step: float = STEP) -> np.ndarray:
    """``[B, 3]`` the point ``lookahead`` metres along the path from ``progress``."""
    idx = np.minimum(progress + int(round(lookahead / step)), count - 1)
    return path[np.arange(len(progress)), idx]
