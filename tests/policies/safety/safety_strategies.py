"""Hypothesis strategies shared by the safety-filter tests: commands that include
NaN, +-inf and huge values, and plausible robot states."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

ANY_FLOAT = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([np.nan, np.inf, -np.inf, 1e300, -1e300, 1e9, -1e9, 0.0]),
    st.floats(-10.0, 10.0),
)
"""Every float, with the dangerous ones drawn often."""


def commands(size: int) -> st.SearchStrategy[np.ndarray]:
    return hnp.arrays(np.float64, (size,), elements=ANY_FLOAT)


def finite_vectors(size: int, low: float = -5.0, high: float = 5.0) -> st.SearchStrategy[np.ndarray]:
    return hnp.arrays(np.float64, (size,), elements=st.floats(low, high))


def unit_quaternions() -> st.SearchStrategy[np.ndarray]:
    return hnp.arrays(np.float64, (4,), elements=st.floats(-1.0, 1.0)).filter(
        lambda q: np.linalg.norm(q) > 0.1
    ).map(lambda q: q / np.linalg.norm(q))


def boxes(size: int) -> st.SearchStrategy[tuple[np.ndarray, np.ndarray]]:
    """(lower, upper) with lower <= upper elementwise."""
    return st.tuples(finite_vectors(size, -100, 100), finite_vectors(size, 0, 50)).map(
        lambda pair: (pair[0], pair[0] + pair[1])
    )
