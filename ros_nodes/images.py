"""The one place images become ROS messages and ROS messages become images.

Outgoing: :func:`image_message` (``sensor_msgs/Image``, ``rgb8``) and
:func:`compressed_message` (``sensor_msgs/CompressedImage``, ``jpeg``, what
image_transport's ``compressed`` plugin publishes on ``<topic>/compressed``).

Incoming: :func:`decode_image` checks a message before trusting any of its fields
(encoding, sizes, ``step``, the data's length, the compressed header's dimensions,
read before the decoder allocates anything) and returns an RGB array or the reason it
refused the message, never an exception: a subscriber must survive whatever arrives on
its topic. A JPEG with intact headers but damaged scan data decodes as libjpeg decodes
it (the damaged blocks gray), as every image viewer shows it.

OpenCV is imported on first use, so a graph without cameras never loads it.
"""

from __future__ import annotations

import array
from typing import Any

import numpy as np
from sensor_msgs.msg import CompressedImage, Image

MAX_SIDE = 16384
"""Pixels: a larger width or height is refused, whatever the message claims."""
MAX_PIXELS = 8192 * 8192
"""Width x height above which an image is refused (what a decoder would allocate)."""
MAX_COMPRESSED_BYTES = 64 * 1024 * 1024
"""A compressed image larger than this is refused before decoding."""

CHANNELS = {"rgb8": 3, "bgr8": 3, "rgba8": 4, "bgra8": 4, "mono8": 1}
"""The 8-bit encodings :func:`decode_image` accepts, with their channels per pixel."""


def _checked_rgb(rgb: np.ndarray) -> np.ndarray:
    """``rgb`` as a C-contiguous ``[H, W, 3]`` uint8 array.

    Raises:
        ValueError: another shape or type (a bug of the caller, not data from outside).
    """
    if rgb.dtype != np.uint8 or rgb.ndim != 3 or rgb.shape[2] != 3 or rgb.shape[0] < 1 or rgb.shape[1] < 1:
        raise ValueError(f"expected an [H, W, 3] uint8 image, got {rgb.dtype} {rgb.shape}")
    return np.ascontiguousarray(rgb)


def _header(msg: Any, stamp: Any, frame_id: str) -> None:
    msg.header.stamp = stamp
    msg.header.frame_id = frame_id


def image_message(rgb: np.ndarray, stamp: Any, frame_id: str) -> Image:
    """``rgb`` (``[H, W, 3]`` uint8) as an ``rgb8`` ``sensor_msgs/Image`` stamped ``stamp``
    (a ``builtin_interfaces/Time``) in ``frame_id``."""
    rgb = _checked_rgb(rgb)
    msg = Image()
    _header(msg, stamp, frame_id)
    msg.height, msg.width = int(rgb.shape[0]), int(rgb.shape[1])
    msg.encoding, msg.is_bigendian, msg.step = "rgb8", 0, int(rgb.shape[1]) * 3
    msg.data = array.array("B", rgb.tobytes())
    return msg


def jpeg(rgb: np.ndarray, quality: int = 80) -> bytes:
    """``rgb`` (``[H, W, 3]`` uint8) as JPEG bytes at ``quality`` (1-100).

    Raises:
        ValueError: a wrong image or quality, or OpenCV could not encode it.
    """
    import cv2

    rgb = _checked_rgb(rgb)
    if not 1 <= int(quality) <= 100:
        raise ValueError(f"JPEG quality must be in [1, 100], got {quality}")
    ok, buf = cv2.imencode(".jpg", cv2.cvtColor(rgb, cv2.COLOR_RGB2BGR), [cv2.IMWRITE_JPEG_QUALITY, int(quality)])
    if not ok:
        raise ValueError(f"OpenCV could not encode a {rgb.shape[1]}x{rgb.shape[0]} image as JPEG")
    return buf.tobytes()


def compressed_message(rgb: np.ndarray, stamp: Any, frame_id: str, quality: int = 80) -> CompressedImage:
    """``rgb`` as a ``sensor_msgs/CompressedImage`` with ``format: jpeg``."""
    msg = CompressedImage()
    _header(msg, stamp, frame_id)
    msg.format = "jpeg"
    msg.data = array.array("B", jpeg(rgb, quality))
    return msg


def decode_image(msg: Image | CompressedImage) -> np.ndarray | str:
    """The ``[H, W, 3]`` uint8 RGB image in ``msg``, or the reason it cannot be read
    (one line). Never raises: any message, however malformed, gives one or the other."""
    try:
        if isinstance(msg, Image):
            return _decode_raw(msg)
        if isinstance(msg, CompressedImage):
            return _decode_compressed(msg)
        return f"not an image message: {type(msg).__name__}"
    except Exception as exc:  # a decoder's own failure on hostile data is a refusal too
        return f"undecodable image: {type(exc).__name__}: {' '.join(str(exc).split())}"


def _size_problem(width: int, height: int) -> str:
    if width < 1 or height < 1:
        return f"empty image ({width}x{height})"
    if width > MAX_SIDE or height > MAX_SIDE or width * height > MAX_PIXELS:
        return f"image too large ({width}x{height}; at most {MAX_SIDE} a side and {MAX_PIXELS} pixels)"
    return ""


def _decode_raw(msg: Image) -> np.ndarray | str:
    width, height, step = int(msg.width), int(msg.height), int(msg.step)
    channels = CHANNELS.get(msg.encoding)
    if channels is None:
        return f"unsupported encoding {msg.encoding[:40]!r} (accepted: {', '.join(CHANNELS)})"
    problem = _size_problem(width, height)
    if problem:
        return problem
    if step < width * channels:
        return f"step {step} is shorter than a row ({width} pixels x {channels} bytes)"
    data = np.frombuffer(msg.data, dtype=np.uint8)
    if data.size != step * height:
        return f"{data.size} data bytes, expected step x height = {step} x {height} = {step * height}"
    pixels = data.reshape(height, step)[:, : width * channels].reshape(height, width, channels)
    if msg.encoding == "mono8":
        return np.repeat(pixels, 3, axis=2)
    order = [2, 1, 0] if msg.encoding.startswith("bgr") else [0, 1, 2]
    return np.ascontiguousarray(pixels[:, :, order])


def _decode_compressed(msg: CompressedImage) -> np.ndarray | str:
    import cv2

    data = np.frombuffer(msg.data, dtype=np.uint8)
    if data.size == 0:
        return "empty compressed image"
    if data.size > MAX_COMPRESSED_BYTES:
        return f"compressed image of {data.size} bytes (at most {MAX_COMPRESSED_BYTES})"
    fmt = msg.format.lower()
    if "jpeg" in fmt or "jpg" in fmt:
        size = _jpeg_size(data)
    elif "png" in fmt:
        size = _png_size(data)
    else:
        return f"unsupported compressed format {msg.format[:40]!r} (accepted: jpeg, png)"
    if isinstance(size, str):
        return size
    problem = _size_problem(*size)
    if problem:
        return problem
    bgr = cv2.imdecode(data, cv2.IMREAD_COLOR)
    if bgr is None or bgr.ndim != 3 or (bgr.shape[1], bgr.shape[0]) != size:
        return f"corrupt {fmt} data: the decoder could not read a {size[0]}x{size[1]} image"
    return cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB)


_SOF = {0xC0, 0xC1, 0xC2, 0xC3, 0xC5, 0xC6, 0xC7, 0xC9, 0xCA, 0xCB, 0xCD, 0xCE, 0xCF}
"""JPEG start-of-frame markers (baseline, progressive, lossless, ...): they carry the size."""


def _jpeg_size(data: np.ndarray) -> tuple[int, int] | str:
    """(width, height) from a JPEG's frame header, read before anything is allocated, or
    why the data is not a complete JPEG."""
    b = data.tobytes()
    if len(b) < 4 or b[:2] != b"\xff\xd8":
        return "corrupt jpeg data: no start-of-image marker"
    if b.rstrip(b"\x00")[-2:] != b"\xff\xd9":
        return "truncated jpeg data: no end-of-image marker"
    i = 2
    while i + 4 <= len(b):
        if b[i] != 0xFF:
            return f"corrupt jpeg data: no marker at byte {i}"
        marker = b[i + 1]
        if marker == 0xFF:  # fill byte
            i += 1
            continue
        length = int.from_bytes(b[i + 2:i + 4], "big")
        if length < 2:
            return f"corrupt jpeg data: segment length {length} at byte {i}"
        if marker in _SOF:
            if length < 7 or i + 9 > len(b):
                return "truncated jpeg data: short frame header"
            return int.from_bytes(b[i + 7:i + 9], "big"), int.from_bytes(b[i + 5:i + 7], "big")
        if marker == 0xDA:  # start of scan before any frame header
            break
        i += 2 + length
    return "corrupt jpeg data: no frame header"


def _png_size(data: np.ndarray) -> tuple[int, int] | str:
    b = data[:24].tobytes()
    if len(b) < 24 or b[:8] != b"\x89PNG\r\n\x1a\n" or b[12:16] != b"IHDR":
        return "corrupt png data: no PNG header"
    return int.from_bytes(b[16:20], "big"), int.from_bytes(b[20:24], "big")
