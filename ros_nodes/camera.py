"""``camera``: a camera read with OpenCV, published under image_transport's names:
``<name>/image_raw`` (sensor_msgs/Image, rgb8) and ``<name>/image_raw/compressed``
(sensor_msgs/CompressedImage, jpeg), sensor QoS, at ``rate`` Hz, resized to
``width`` x ``height`` when set (settings: :class:`~sim2real.ros_nodes.settings.CameraSettings`).

Sources: a device index (``0``), a video file, or a stream URL (``rtsp://``,
``http://``). A device or a stream is read by a thread that keeps only the newest
frame (a driver's queue would otherwise hand out frames seconds old), each stamped with
the time it was read; a video file is read one frame per period.

Failures. A source that cannot be opened, or delivers no first frame, fails configure
with one line. A device or stream that stops delivering (unplugged, cut, or nothing for
``reconnect_seconds``) is reported on ``diagnostics`` (ERROR) and in the log
(throttled), and reopened every ``reconnect_seconds``. A video file that ends without
``loop`` is reported and stays ended. A frame is published once: with no new frame,
nothing is published.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
from rclpy.time import Time
from sensor_msgs.msg import CompressedImage, Image

from sim2real.ros_nodes import images
from sim2real.ros_nodes.base import ManagedNode, run_node
from sim2real.ros_nodes.qos import sensor_qos
from sim2real.ros_nodes.settings import CameraSettings
from sim2real.sim.core.errors import ConfigError

Frame = tuple[np.ndarray, float]
"""An OpenCV frame (BGR) and the monotonic time it was read."""


def is_live(source: str) -> bool:
    """A device index or a URL (read continuously), not a video file (read on demand)."""
    return source.isdigit() or "://" in source


def open_capture(source: str) -> Any:
    """An opened ``cv2.VideoCapture`` of ``source``.

    Raises:
        ConfigError: no such file, or OpenCV cannot open it (one line).
    """
    import cv2

    if not is_live(source) and not Path(source).is_file():
        raise ConfigError("source", f"{source!r}: no such file (give a device index, a video file or a stream URL)")
    cap = cv2.VideoCapture(int(source) if source.isdigit() else source)
    if not cap.isOpened():
        cap.release()
        kind = "camera device" if source.isdigit() else "stream" if "://" in source else "video file"
        raise ConfigError("source", f"cannot open {kind} {source!r}")
    return cap


def first_frame(cap: Any, source: str) -> Frame:
    """The first frame of an opened capture.

    Raises:
        ConfigError: it delivers none (then ``cap`` is released).
    """
    ok, frame = cap.read()
    if not ok or frame is None:
        cap.release()
        raise ConfigError("source", f"{source!r} opened but delivered no frame")
    return frame, time.monotonic()


class FileReader:
    """A video file, one frame per :meth:`take`; at its end it loops or ends."""

    def __init__(self, source: str, loop: bool) -> None:
        self.source, self.loop = source, loop
        self.cap: Any = open_capture(source)
        self.pending: Frame | None = first_frame(self.cap, source)
        self.ended = False
        self.reconnects = 0

    def take(self) -> Frame | None:
        if self.pending is not None:
            frame, self.pending = self.pending, None
            return frame
        if self.ended:
            return None
        ok, frame = self.cap.read()
        if not ok and self.loop:
            import cv2

            self.cap.set(cv2.CAP_PROP_POS_FRAMES, 0)
            ok, frame = self.cap.read()
        if not ok or frame is None:
            self.ended = True
            self.cap.release()
            return None
        return frame, time.monotonic()

    def problem(self) -> str:
        return "the video file ended (loop: false); no more images" if self.ended else ""

    def close(self) -> None:
        self.cap.release()


class LiveReader:
    """A device or stream read by a thread keeping the newest frame; reopened every
    ``reconnect_s`` after it stops delivering."""

    def __init__(self, source: str, reconnect_s: float) -> None:
        self.source, self.reconnect_s = source, reconnect_s
        cap = open_capture(source)
        self._newest: Frame | None = first_frame(cap, source)
        self._last_read = time.monotonic()
        self._failure = ""
        self.reconnects = 0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(cap,), name=f"camera {source}", daemon=True)
        self._thread.start()

    def _run(self, cap: Any) -> None:
        while not self._stop.is_set():
            if cap is None:
                if self._stop.wait(self.reconnect_s):
                    break
                try:
                    cap = open_capture(self.source)
                except Exception as exc:
                    self._failure = f"{exc}; retrying every {self.reconnect_s:g} s"
                    continue
                self.reconnects += 1
            ok, frame = cap.read()
            if not ok or frame is None:
                cap.release()
                cap = None
                self._failure = f"{self.source!r} stopped delivering frames; reopening every {self.reconnect_s:g} s"
                continue
            with self._lock:
                self._newest, self._last_read, self._failure = (frame, time.monotonic()), time.monotonic(), ""
        if cap is not None:
            cap.release()

    def take(self) -> Frame | None:
        with self._lock:
            frame, self._newest = self._newest, None
        return frame

    def problem(self) -> str:
        if self._failure:
            return self._failure
        silent = time.monotonic() - self._last_read
        return f"no frame from {self.source!r} for {silent:.1f} s" if silent > self.reconnect_s else ""

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=1.0)  # a read blocked on a dead stream ends later and releases


class CameraNode(ManagedNode):
    """Publishes a camera's newest frame each period (see the module docstring)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__("camera", CameraSettings, **kwargs)
        self.reader: FileReader | LiveReader | None = None
        self.pub_raw: Any = None
        self.pub_compressed: Any = None
        self.frames_read = 0
        """Frames taken from the source (each once)."""
        self.published = 0
        """Frames published to a subscriber (on one topic or both)."""
        self._published_at_report = 0
        self._timers: list[Any] = []

    # -- lifecycle -------------------------------------------------------------------
    def load(self) -> None:
        p = self.params()
        if not p["name"]:
            raise ConfigError("name", "empty: it is the topics' namespace (e.g. camera)")
        if (p["width"] == 0) != (p["height"] == 0):
            raise ConfigError("width", f"{p['width']}x{p['height']}: set both width and height, or neither")
        if not (p["publish_raw"] or p["publish_compressed"]):
            raise ConfigError("publish_raw", "publish_raw and publish_compressed are both false: nothing to publish")
        self.source, self.frame_id = str(p["source"]), str(p["name"])
        self.size = (int(p["width"]), int(p["height"]))
        self.quality, self.period = int(p["jpeg_quality"]), 1.0 / float(p["rate"])
        sensor = sensor_qos()
        if p["publish_raw"]:
            self.pub_raw = self.create_publisher(Image, f"{p['name']}/image_raw", sensor)
        if p["publish_compressed"]:
            self.pub_compressed = self.create_publisher(CompressedImage, f"{p['name']}/image_raw/compressed", sensor)
        live = is_live(self.source)
        self.reader = (LiveReader(self.source, float(p["reconnect_seconds"])) if live
                       else FileReader(self.source, bool(p["loop"])))
        self.get_logger().info(f"{'live source' if live else 'video file'} {self.source!r} -> "
                               f"{p['name']}/image_raw at {p['rate']:g} Hz")

    def unload(self) -> None:
        if self.reader is not None:
            self.reader.close()
            self.reader = None
        self.pub_raw = self.pub_compressed = None  # destroyed with the rest of load()'s endpoints

    def start(self) -> None:
        if isinstance(self.reader, LiveReader):
            self.reader.take()  # read while inactive: old by now, never published as new
        self._timers = [self.create_control_timer(self.period, self._tick)]

    def stop(self) -> None:
        for t in self._timers:
            self.destroy_timer(t)
        self._timers = []

    def destroy_node(self) -> None:
        self.unload()
        super().destroy_node()

    # -- publishing --------------------------------------------------------------------
    def _tick(self) -> None:
        reader = self.reader
        if not self.active or reader is None:
            return
        frame = reader.take()
        if frame is None:
            return
        self.frames_read += 1
        # Only watched topics cost a conversion or an encoding.
        raw, compressed = (p if p is not None and p.get_subscription_count() > 0 else None
                           for p in (self.pub_raw, self.pub_compressed))
        if raw is None and compressed is None:
            return
        rgb = self.to_rgb(frame[0])
        age_ns = int((time.monotonic() - frame[1]) * 1e9)  # stamped when it was read
        stamp = Time(nanoseconds=self.get_clock().now().nanoseconds - age_ns).to_msg()
        if raw is not None:
            raw.publish(images.image_message(rgb, stamp, self.frame_id))
        if compressed is not None:
            compressed.publish(images.compressed_message(rgb, stamp, self.frame_id, self.quality))
        self.published += 1

    def to_rgb(self, frame: np.ndarray) -> np.ndarray:
        """An OpenCV frame (BGR, BGRA or gray; 8 or 16 bits) as RGB uint8 at the set size."""
        import cv2

        if frame.dtype == np.uint16:
            frame = (frame >> 8).astype(np.uint8)
        if frame.dtype != np.uint8:
            raise ValueError(f"unsupported frame type {frame.dtype}")
        w, h = self.size
        if w and (frame.shape[1], frame.shape[0]) != (w, h):
            shrink = w * h < frame.shape[0] * frame.shape[1]
            frame = cv2.resize(frame, (w, h), interpolation=cv2.INTER_AREA if shrink else cv2.INTER_LINEAR)
        if frame.ndim == 2:
            return cv2.cvtColor(frame, cv2.COLOR_GRAY2RGB)
        code = {3: cv2.COLOR_BGR2RGB, 4: cv2.COLOR_BGRA2RGB}.get(frame.shape[2])
        if code is None:
            raise ValueError(f"unsupported frame shape {frame.shape}")
        return cv2.cvtColor(frame, code)

    def report(self) -> None:
        """``diagnostics`` once a second; a source that delivers nothing is an ERROR (and logged)."""
        reader = self.reader
        if reader is None:
            return
        problem = reader.problem()
        if problem:
            self.log_throttled("source", problem, period=10.0, level="error")
        values = {"source": self.source, "frames_read": self.frames_read, "frames_published": self.published,
                  "published_last_second": self.published - self._published_at_report,
                  "reconnects": reader.reconnects}
        self._published_at_report = self.published
        self.publish_status(2 if problem else 0, problem or "streaming", values)


def main(args: list[str] | None = None) -> int:
    return run_node(CameraNode, args)


if __name__ == "__main__":
    raise SystemExit(main())
