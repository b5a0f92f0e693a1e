"""Per-env sequences of different lengths in one batched array: each env's rows, then
its last row repeated, so batched lookups past an env's end read its last row."""

from __future__ import annotations

import numpy as np


def store_padded(buffer: np.ndarray, env_id: int, rows: np.ndarray) -> np.ndarray:
    """``rows [K, ...]`` as env ``env_id``'s sequence in ``buffer [B, L, ...]``, padded
    with its last row; the buffer grows along axis 1 (every env padded with its own
    last row) when ``K > L``. Returns the buffer (a new one when it grew)."""
    if len(rows) > buffer.shape[1]:
        grown = np.repeat(buffer[:, -1:], len(rows), axis=1)
        grown[:, : buffer.shape[1]] = buffer
        buffer = grown
    buffer[env_id, : len(rows)] = rows
    buffer[env_id, len(rows) :] = rows[-1]
    return buffer
