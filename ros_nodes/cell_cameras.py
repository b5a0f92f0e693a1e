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

import time
from typing import Any

import mujoco
import numpy as np
from sensor_msgs.msg import Image

from sim2real.ros_nodes.images import image_message
from sim2real.ros_nodes.newest_only import NewestOnly
from sim2real.sim.core.rendering import OffscreenRenderer

Pose = tuple[np.ndarray, np.ndarray, np.ndarray]
"""``qpos``, ``mocap_pos``, ``mocap_quat``: what the cameras need of a simulation's state."""


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
        self.errors = 0
        self._due = 0.0
        self._renderer: OffscreenRenderer | None = None
        self._data = mujoco.MjData(model)
        # At normal priority, not a live view's nice 10: the cameras stand in for hardware
        # that delivers frames whatever the host's load, and a learner waits for them (at
        # nice 10 beside a real-time graph on 2 cores they fell 0.5-1.2 s behind).
        self.worker: NewestOnly[Pose] = NewestOnly("cell-cameras", self._draw, self._failed, setup=self._warm_up,
                                                   teardown=self._release, niceness=0)
        # The GL context and the first frame (shaders compiled, the model's meshes
        # uploaded) take a few hundred ms: done before the emulator serves, never while.
        self.worker.started.wait(timeout=60.0)

    @property
    def frames_dropped(self) -> int:
        return self.worker.dropped

    def offer(self, now: float, data: mujoco.MjData) -> None:
        """Called by the real-time loop each tick: a copy of the pose when a frame is due
        and someone subscribes (asked at most once per frame period, not every tick)."""
        if now < self._due:
            return
        self._due = now + self.period
        if any(p.get_subscription_count() > 0 for p in self.pubs.values()):
            self.worker.offer((data.qpos.copy(), data.mocap_pos.copy(), data.mocap_quat.copy()))

    # -- the worker thread ---------------------------------------------------------------
    def _warm_up(self) -> None:
        self._renderer = OffscreenRenderer(self.model, *self.size, live=True)
        mujoco.mj_forward(self.model, self._data)
        for cam in self.cameras:
            self._renderer.render(self.model, self._data, cam)

    def _draw(self, pose: Pose) -> None:
        if self._renderer is None:
            return  # no GL: counted once at start
        data = self._data
        data.qpos[:], data.mocap_pos[:], data.mocap_quat[:] = pose
        mujoco.mj_kinematics(self.model, data)
        mujoco.mj_camlight(self.model, data)
        stamp = self.node.get_clock().now().to_msg()
        for cam, pub in self.pubs.items():
            pub.publish(image_message(self._renderer.render(self.model, data, cam), stamp, cam))
            self.frames_published += 1

    def _failed(self, exc: Exception) -> None:  # a broken frame must not end the cameras, nor the emulator
        self.errors += 1
        time.sleep(self.period)

    def _release(self) -> None:
        if self._renderer is not None:
            self._renderer.close()  # the GL context belongs to the worker's thread

    def close(self) -> None:
        self.worker.close()
