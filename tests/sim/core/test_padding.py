"""Per-env sequences of different lengths in one batched array."""

from __future__ import annotations

import numpy as np

from sim2real.sim.core.padding import store_padded


def test_rows_are_padded_with_their_last_and_the_buffer_grows_for_a_longer_one() -> None:
    buffer = np.zeros((2, 1, 3))
    buffer = store_padded(buffer, 0, np.array([[1.0, 1, 1], [2, 2, 2]]))
    assert buffer.shape == (2, 2, 3)
    np.testing.assert_array_equal(buffer[1], 0.0)  # the other env: padded with its own last row
    buffer = store_padded(buffer, 1, np.array([[5.0, 5, 5]]))
    np.testing.assert_array_equal(buffer[1], [[5, 5, 5], [5, 5, 5]])
    grown = store_padded(buffer, 1, np.arange(12.0).reshape(4, 3))
    assert grown.shape == (2, 4, 3)
    np.testing.assert_array_equal(grown[0], [[1, 1, 1], [2, 2, 2], [2, 2, 2], [2, 2, 2]])
    np.testing.assert_array_equal(grown[1, -1], [9, 10, 11])
