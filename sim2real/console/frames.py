"""Camera frames as the page receives them: one JPEG per new frame, shared by every page."""

from __future__ import annotations

import cv2
import numpy as np


class JpegCache:
    """One JPEG per new frame, whichever client asks first (frames may already be JPEG)."""

    def __init__(self, quality: int = 80) -> None:
        self.quality = quality
        self._cache: dict[str, tuple[int, bytes]] = {}

    def get(self, camera: str, seq: int, frame: np.ndarray | bytes) -> bytes:
        hit = self._cache.get(camera)
        if hit is not None and hit[0] == seq:
            return hit[1]
        data = frame if isinstance(frame, bytes) else _encode(frame, self.quality)
        self._cache[camera] = (seq, data)
        return data


def _encode(rgb: np.ndarray, quality: int) -> bytes:
    ok, buf = cv2.imencode(".jpg", cv2.cvtColor(np.ascontiguousarray(rgb), cv2.COLOR_RGB2BGR),
                           [cv2.IMWRITE_JPEG_QUALITY, quality])
    if not ok:
        raise ValueError("JPEG encoding failed")
    return buf.tobytes()
