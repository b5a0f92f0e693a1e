"""Named blocks of a flat vector (observations, actions): ``[(name, size), ...]``."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


def layout_slices(layout: Sequence[tuple[str, int]]) -> dict[str, slice]:
    """Each block's slice of the flat vector, in layout order."""
    out, start = {}, 0
    for name, size in layout:
        out[name] = slice(start, start + size)
        start += size
    return out


@dataclass(frozen=True)
class SignedPermutation:
    """``y[..., i] = sign[i] * x[..., index[i]]``: a reflection of a flat vector (a
    robot's left-right mirror, :meth:`sim2real.sim.core.task.Task.mirror`)."""

    index: np.ndarray
    sign: np.ndarray

    def __call__(self, x: np.ndarray) -> np.ndarray:
        return x[..., self.index] * self.sign.astype(x.dtype)

    def __len__(self) -> int:
        return len(self.index)
