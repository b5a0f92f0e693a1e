"""The cameras of an emulated robot's cell, as their ROS 2 drivers publish them
(``realsense2_camera``, ``usb_cam``: ``sensor_msgs/Image``, ``rgb8``, on
``/<camera>/image_raw``), drawn from the emulator's simulation
(``sim2real hardware emulate --cameras front,wrist``).

Frames are drawn only while someone subscribes, at most ``rate_hz``, on a thread of
their own that owns the GL context: the emulator's real-time loop hands over a copy of
the pose (:meth:`CellCameras.offer`, an emulator's pose listener) and never waits for a
frame. A pose still waiting when a newer one comes is dropped and counted.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from typing import Any

import mujoco
import numpy as np
from sensor_msgs.msg import Image

from sim2real.ros_nodes.images import image_message
from sim2real.sim.core.rendering import OffscreenRenderer

CAMERA_NICENESS = 10
"""How much lower the drawing thread runs than the emulator's real-time loop."""


class CellCameras:
    """Args:
        node: The emulator's rclpy node (publishers are made on it).
        model: The simulated robot's model (its named cameras).
        cameras: Camera names; each is published on ``/<name>/image_raw``.
        size: ``(width, height)`` of the frames.
        rate_hz: Frames per second per camera, at most.
    """

    def __init__(self, node: Any, model: mujoco.MjModel, cameras: tuple[str, ...], size: tuple[int, int],
                 rate_hz: float) -> None:
        missing = [c for c in cameras if mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_CAMERA, c) < 0]
        if missing:
            raise ValueError(f"the simulated robot has no camera {missing}")
        self.node, self.model, self.cameras, self.size = node, model, cameras, size
        self.period = 1.0 / rate_hz
        self.pubs = {cam: node.create_publisher(Image, f"/{cam}/image_raw", 1) for cam in cameras}
        self.frames_published = 0
        self.frames_dropped = 0
        self.errors = 0
        self._due = 0.0
        self._pending: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
        self._ready = threading.Condition()
        self._stop = False
        self._started = threading.Event()
        self._thread = threading.Thread(target=self._run, name="cell-cameras", daemon=True)
        self._thread.start()
        # The GL context and the first frame (shaders compiled, the model's meshes
        # uploaded) take a few hundred ms: done before the emulator serves, never while.
        self._started.wait(timeout=60.0)

    def wanted(self) -> bool:
        return any(p.get_subscription_count() > 0 for p in self.pubs.values())

    def offer(self, now: float, data: mujoco.MjData) -> None:
        """Called by the real-time loop each tick: a copy of the pose when a frame is due."""
        if now < self._due or not self.wanted():
            return
        self._due = now + self.period
        pose = (data.qpos.copy(), data.mocap_pos.copy(), data.mocap_quat.copy())
        with self._ready:
            if self._pending is not None:
                self.frames_dropped += 1
            self._pending = pose
            self._ready.notify()

    def _run(self) -> None:
        with contextlib.suppress(OSError, AttributeError):
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), CAMERA_NICENESS)
        renderer: OffscreenRenderer | None = None
        data = mujoco.MjData(self.model)
        try:
            try:
                renderer = OffscreenRenderer(self.model, *self.size, live=True)
                mujoco.mj_forward(self.model, data)
                for cam in self.cameras:
                    renderer.render(self.model, data, cam)
            except Exception:
                self.errors += 1
            finally:
                self._started.set()
            while True:
                with self._ready:
                    while self._pending is None and not self._stop:
                        self._ready.wait()
                    if self._stop or self._pending is None:
                        return
                    (data.qpos[:], data.mocap_pos[:], data.mocap_quat[:]), self._pending = self._pending, None
                if renderer is None:
                    continue  # no GL: counted once at start
                try:
                    mujoco.mj_kinematics(self.model, data)
                    mujoco.mj_camlight(self.model, data)
                    stamp = self.node.get_clock().now().to_msg()
                    for cam, pub in self.pubs.items():
                        pub.publish(image_message(renderer.render(self.model, data, cam), stamp, cam))
                        self.frames_published += 1
                except Exception:  # a broken frame must not end the cameras, nor the emulator
                    self.errors += 1
                    time.sleep(self.period)
        finally:
            if renderer is not None:
                renderer.close()  # the GL context belongs to this thread

    def close(self) -> None:
        with self._ready:
            self._stop = True
            self._ready.notify()
        self._thread.join(timeout=5)

