"""Named blocks of a flat vector (observations, actions): ``[(name, size), ...]``."""

from __future__ import annotations

from collections.abc import Sequence


def layout_slices(layout: Sequence[tuple[str, int]]) -> dict[str, slice]:
    """Each block's slice of the flat vector, in layout order."""
    out, start = {}, 0
    for name, size in layout:
        out[name] = slice(start, start + size)
        start += size
    return out
