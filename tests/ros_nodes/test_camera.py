"""Camera images as ROS messages (ros_nodes/images.py) and the ``camera`` node.

Messages: rgb8 and JPEG round trips; every malformed message (wrong step, truncated
data, unknown encoding, absurd sizes, corrupt or truncated JPEG) gives a reason, never
an exception. The node, over real DDS in a private domain, reading a video file written
here by OpenCV (frame i: red = 8 i, green = 255 - 8 i, blue = 128): both topics carry
the file's frames in order at the set size and rate; at the end of the file it stops
publishing and reports the end; with ``loop`` it starts again. A live HTTP MJPEG stream
that goes down is reported and reopened when it comes back. A source that cannot be
opened fails configure with one line.
"""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from ros_harness import Harness, unique_domain_id, wait_for

import sim2real  # noqa: F401  (MUJOCO_GL first)
from sim2real.ros_nodes.images import compressed_message, decode_image, image_message, jpeg

FRAMES, W, H = 30, 64, 48


def gradient(h: int = 48, w: int = 64) -> np.ndarray:
    y, x = np.mgrid[0:h, 0:w]
    return np.stack([x * 255 // max(w - 1, 1), y * 255 // max(h - 1, 1), np.full_like(x, 128)], -1).astype(np.uint8)


def rgb_of(msg: Any) -> np.ndarray:
    out = decode_image(msg)
    assert isinstance(out, np.ndarray), out
    return out


def stamp() -> Any:
    from builtin_interfaces.msg import Time

    return Time(sec=12, nanosec=34)


# -- messages -------------------------------------------------------------------------
def test_raw_and_jpeg_round_trips() -> None:
    from sensor_msgs.msg import CompressedImage, Image

    rgb = gradient()
    msg = image_message(rgb, stamp(), "cam")
    assert (msg.encoding, msg.width, msg.height, msg.step, msg.header.frame_id) == ("rgb8", 64, 48, 192, "cam")
    back = decode_image(msg)
    assert isinstance(back, np.ndarray) and np.array_equal(back, rgb)
    comp = compressed_message(rgb, stamp(), "cam", quality=95)
    assert comp.format == "jpeg" and bytes(comp.data[:2]) == b"\xff\xd8" and comp.header.stamp.sec == 12
    back = decode_image(comp)
    assert isinstance(back, np.ndarray) and back.shape == rgb.shape
    assert np.abs(back.astype(int) - rgb).mean() < 3  # lossy, but RGB stays RGB
    assert len(jpeg(rgb, 10)) < len(jpeg(rgb, 95))

    bgr = Image(height=48, width=64, encoding="bgr8", step=64 * 3 + 8)  # padded rows
    rows = np.zeros((48, 64 * 3 + 8), np.uint8)
    rows[:, :192] = rgb[:, :, ::-1].reshape(48, 192)
    bgr.data = rows.tobytes()
    assert np.array_equal(decode_image(bgr), rgb)
    mono = Image(height=2, width=2, encoding="mono8", step=2, data=bytes([0, 50, 100, 250]))
    assert rgb_of(mono).tolist()[1][1] == [250, 250, 250]
    import cv2

    png = CompressedImage(format="png", data=cv2.imencode(".png", rgb[:, :, ::-1])[1].tobytes())
    assert np.array_equal(decode_image(png), rgb)


def _hostile_jpeg(width: int, height: int) -> bytes:
    """A valid JPEG whose frame header claims another size."""
    b = bytearray(jpeg(gradient(), 80))
    i = 2
    while b[i + 1] not in (0xC0, 0xC2):
        i += 2 + int.from_bytes(b[i + 2:i + 4], "big")
    b[i + 5:i + 9] = height.to_bytes(2, "big") + width.to_bytes(2, "big")
    return bytes(b)


def malformed() -> list[tuple[str, Any, str]]:
    from sensor_msgs.msg import CompressedImage, Image
    from std_msgs.msg import String

    good = jpeg(gradient(), 80)
    raw = gradient().tobytes()
    return [
        ("short step", Image(height=48, width=64, encoding="rgb8", step=100, data=raw), "shorter than a row"),
        ("truncated data", Image(height=48, width=64, encoding="rgb8", step=192, data=raw[:-1]), "expected step"),
        ("too much data", Image(height=48, width=64, encoding="rgb8", step=192, data=raw + b"x"), "expected step"),
        ("unknown encoding", Image(height=48, width=64, encoding="yuv422", step=128, data=raw[:6144]),
         "unsupported encoding"),
        ("16-bit", Image(height=48, width=64, encoding="16UC1", step=128, data=raw[:6144]), "unsupported encoding"),
        ("empty", Image(height=0, width=64, encoding="rgb8", step=192), "empty image"),
        ("absurd size", Image(height=4_000_000_000, width=4_000_000_000, encoding="rgb8", step=4_000_000_000),
         "too large"),
        ("corrupt jpeg", CompressedImage(format="jpeg", data=b"\xff\xd8" + bytes(range(256)) * 4 + b"\xff\xd9"),
         "corrupt"),
        ("garbage", CompressedImage(format="jpeg", data=b"not an image at all"), "no start-of-image"),
        ("truncated jpeg", CompressedImage(format="jpeg", data=good[: len(good) // 2]), "truncated"),
        ("scrambled scan", CompressedImage(format="jpeg", data=good[:200] + bytes(len(good) - 202) + good[-2:]),
         "corrupt"),
        ("huge jpeg", CompressedImage(format="jpeg", data=_hostile_jpeg(60000, 60000)), "too large"),
        ("empty jpeg", CompressedImage(format="jpeg", data=_hostile_jpeg(0, 48)), "empty image"),
        ("no data", CompressedImage(format="jpeg"), "empty compressed"),
        ("unknown format", CompressedImage(format="webp", data=good), "unsupported compressed format"),
        ("not an image", String(data="x"), "not an image message"),
    ]


@pytest.mark.parametrize("case", malformed(), ids=lambda c: c[0])
def test_a_malformed_message_gives_a_reason_never_an_exception(case: tuple[str, Any, str]) -> None:
    _, msg, words = case
    reason = decode_image(msg)
    assert isinstance(reason, str) and words in reason and "\n" not in reason, reason


def test_our_own_code_may_not_publish_a_wrong_array() -> None:
    for bad in (np.zeros((4, 4), np.uint8), np.zeros((4, 4, 3), np.float32), np.zeros((0, 4, 3), np.uint8)):
        with pytest.raises(ValueError, match="expected an"):
            image_message(bad, stamp(), "cam")
    with pytest.raises(ValueError, match="quality"):
        jpeg(gradient(), 0)


# -- the node ---------------------------------------------------------------------------
def write_video(path: Path, frames: int = FRAMES) -> Path:
    import cv2

    out = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"MJPG"), 30, (W, H))
    assert out.isOpened()
    for i in range(frames):
        out.write(np.full((H, W, 3), (128, 255 - 8 * i, 8 * i), np.uint8))  # BGR
    out.release()
    return path


def frame_index(rgb: np.ndarray) -> int:
    """The file's frame number, checking the whole pattern (so RGB order too)."""
    r, g, b = (float(rgb[..., c].mean()) for c in range(3))
    i = round(r / 8)
    assert abs(r - 8 * i) < 4 and abs(g - (255 - 8 * i)) < 4 and abs(b - 128) < 4, (r, g, b)
    return i


class Viewer:
    """A node subscribing ``<name>/image_raw``, its ``compressed`` and ``diagnostics``."""

    def __init__(self, h: Harness, name: str) -> None:
        import threading

        from diagnostic_msgs.msg import DiagnosticArray
        from rclpy.node import Node
        from sensor_msgs.msg import CompressedImage, Image

        from sim2real.ros_nodes.qos import sensor_qos, status_qos

        self.raw: list[tuple[float, Any]] = []
        self.compressed: list[tuple[float, Any]] = []
        self.diagnostics: list[Any] = []
        self.lock = threading.Lock()
        node = self.node = h.add(Node("viewer", context=h.context))
        node.create_subscription(Image, f"{name}/image_raw", lambda m: self._add(self.raw, m), sensor_qos())
        node.create_subscription(CompressedImage, f"{name}/image_raw/compressed",
                                 lambda m: self._add(self.compressed, m), sensor_qos())
        node.create_subscription(DiagnosticArray, "diagnostics",
                                 lambda m: self._add(self.diagnostics, *m.status), status_qos())

    def _add(self, into: list, msg: Any) -> None:
        with self.lock:
            into.append((time.monotonic(), msg))

    def count(self) -> int:
        with self.lock:
            return len(self.compressed)

    def last_status(self) -> Any:
        with self.lock:
            return self.diagnostics[-1][1] if self.diagnostics else None


def start_camera(h: Harness, **params: Any) -> Any:
    """Configure, wait until the viewer's subscriptions match, then activate (an
    unwatched stream is read but not published)."""
    from rclpy.lifecycle import TransitionCallbackReturn
    from rclpy.parameter import Parameter

    from sim2real.ros_nodes.camera import CameraNode

    node = h.add(CameraNode(context=h.context, parameter_overrides=[Parameter(k, value=v) for k, v in params.items()]))
    assert node.trigger_configure() == TransitionCallbackReturn.SUCCESS, node.load_error
    assert wait_for(lambda: node.pub_raw.get_subscription_count() and node.pub_compressed.get_subscription_count(),
                    10.0)
    assert node.trigger_activate() == TransitionCallbackReturn.SUCCESS
    return node


def test_a_video_file_is_published_frame_by_frame_at_the_rate_then_its_end_reported(tmp_path: Path) -> None:
    video = write_video(tmp_path / "pattern.avi")
    with Harness() as h:
        viewer = Viewer(h, "cam")
        h.spin()
        node = start_camera(h, source=str(video), name="cam", rate=20.0, width=32, height=24)
        assert wait_for(lambda: node.reader.problem() != "", 10.0)
        time.sleep(1.0)  # the end: nothing more may come
        with viewer.lock:
            raw, comp = list(viewer.raw), list(viewer.compressed)
        assert node.published == FRAMES and len(comp) >= FRAMES - 2 and len(raw) >= FRAMES - 2, (len(raw), len(comp))
        for _, msg in raw:
            assert (msg.encoding, msg.width, msg.height, msg.step, msg.header.frame_id) == ("rgb8", 32, 24, 96, "cam")
        raw_index = {(m.header.stamp.sec, m.header.stamp.nanosec): frame_index(rgb_of(m)) for _, m in raw}
        comp_index = [frame_index(rgb_of(m)) for _, m in comp]
        assert comp_index == sorted(set(comp_index)) and set(comp_index) <= set(range(FRAMES))  # in order, once each
        for _, m in comp:  # the same frame on both topics, with the same stamp
            key = (m.header.stamp.sec, m.header.stamp.nanosec)
            assert key not in raw_index or raw_index[key] == frame_index(rgb_of(m))
        times = [t for t, _ in comp]
        rate = (len(times) - 1) / (times[-1] - times[0])
        print(f"camera node: {rate:.1f} Hz received of 20 Hz")
        assert 15.0 <= rate <= 25.0, rate
        status = viewer.last_status()
        assert status is not None and status.level == b"\x02" and "ended" in status.message, status


def test_a_looping_file_starts_again(tmp_path: Path) -> None:
    video = write_video(tmp_path / "pattern.avi", frames=10)
    with Harness() as h:
        viewer = Viewer(h, "loop")
        h.spin()
        start_camera(h, source=str(video), name="loop", rate=40.0, loop=True, publish_raw=True)
        assert wait_for(lambda: viewer.count() >= 25, 10.0)
        with viewer.lock:
            indices = [frame_index(rgb_of(m)) for _, m in viewer.compressed]
        assert any(b < a for a, b in itertools.pairwise(indices)) and set(indices) == set(range(10)), indices
        assert rgb_of(viewer.raw[-1][1]).shape == (H, W, 3)  # the source's own size


class MjpegServer:
    """An HTTP MJPEG stream (what IP cameras serve) of the test pattern at 30 fps."""

    def __init__(self, port: int = 0) -> None:
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        stopping = self.stopping = threading.Event()

        class Stream(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "multipart/x-mixed-replace; boundary=frame")
                self.end_headers()
                i = 0
                while not stopping.is_set():
                    data = jpeg(np.full((H, W, 3), (8 * (i % FRAMES), 255 - 8 * (i % FRAMES), 128), np.uint8), 90)
                    try:
                        self.wfile.write(b"--frame\r\nContent-Type: image/jpeg\r\nContent-Length: %d\r\n\r\n%s\r\n"
                                         % (len(data), data))
                    except OSError:
                        return
                    i += 1
                    time.sleep(1 / 30)

            def log_message(self, *args: Any) -> None:
                pass

        server = self.server = ThreadingHTTPServer(("127.0.0.1", port), Stream)
        server.daemon_threads = True
        self.url = f"http://127.0.0.1:{server.server_address[1]}/stream"
        threading.Thread(target=server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        self.stopping.set()
        self.server.shutdown()
        self.server.server_close()


def test_a_live_stream_that_stops_is_reported_and_reopened() -> None:
    server = MjpegServer()
    port = int(server.url.split(":")[2].split("/")[0])
    with Harness() as h:
        viewer = Viewer(h, "ipcam")
        h.spin()
        node = start_camera(h, source=server.url, name="ipcam", rate=15.0, reconnect_seconds=0.5)
        try:
            assert wait_for(lambda: viewer.count() >= 10, 10.0)
            server.stop()
            assert wait_for(lambda: node.reader.problem() != "", 5.0)
            assert wait_for(lambda: (s := viewer.last_status()) is not None and s.level == b"\x02", 3.0)
            stopped_at = node.published
            time.sleep(1.0)
            assert node.published == stopped_at  # nothing stale published as new
            server = MjpegServer(port)  # the camera comes back
            assert wait_for(lambda: node.published >= stopped_at + 10, 10.0), node.reader.problem()
            assert node.reader.reconnects >= 1 and node.reader.problem() == ""
            assert wait_for(lambda: (s := viewer.last_status()) is not None and s.level == b"\x00", 3.0)
        finally:
            server.stop()


@pytest.mark.parametrize("source,words", [("missing.avi", "no such file"), ("99", "cannot open camera device"),
                                          ("garbage.avi", "cannot open video file"),
                                          ("rtsp://127.0.0.1:9/none", "cannot open stream")])
def test_a_source_that_cannot_be_opened_fails_configure_in_one_line(tmp_path: Path, source: str,
                                                                    words: str) -> None:
    from rclpy.lifecycle import TransitionCallbackReturn
    from rclpy.parameter import Parameter

    from sim2real.ros_nodes.camera import CameraNode

    (tmp_path / "garbage.avi").write_bytes(b"garbage" * 100)
    path = source if source.isdigit() or "://" in source else str(tmp_path / source)
    with Harness() as h:
        node = h.add(CameraNode(context=h.context, parameter_overrides=[Parameter("source", value=path)]))
        assert node.trigger_configure() == TransitionCallbackReturn.FAILURE
        assert words in node.load_error and "\n" not in node.load_error, node.load_error


def test_the_node_process_exits_with_one_line_when_its_source_is_missing(tmp_path: Path) -> None:
    env = {**os.environ, "ROS_DOMAIN_ID": str(unique_domain_id()), "ROS_AUTOMATIC_DISCOVERY_RANGE": "LOCALHOST"}
    missing = tmp_path / "missing.avi"
    out = subprocess.run([sys.executable, "-m", "sim2real.ros_nodes.camera", "--ros-args", "-p",
                          f"source:={missing}"], capture_output=True, text=True, timeout=60, env=env)
    assert out.returncode != 0
    last = out.stderr.strip().splitlines()[-1]
    assert last.startswith("camera: cannot start: source: ") and "no such file" in last, out.stderr


def test_contradictory_settings_fail_configure(tmp_path: Path) -> None:
    from rclpy.lifecycle import TransitionCallbackReturn
    from rclpy.parameter import Parameter

    from sim2real.ros_nodes.camera import CameraNode

    video = str(write_video(tmp_path / "v.avi", frames=2))
    cases = [({"width": 32}, "set both width and height"),
             ({"publish_raw": False, "publish_compressed": False}, "nothing to publish"),
             ({"name": ""}, "namespace")]
    with Harness() as h:
        for extra, words in cases:
            params = [Parameter(k, value=v) for k, v in {"source": video, **extra}.items()]
            node = h.add(CameraNode(context=h.context, parameter_overrides=params))
            assert node.trigger_configure() == TransitionCallbackReturn.FAILURE
            assert words in node.load_error, node.load_error
