"""Headless offscreen rendering: pick a working OpenGL backend, explain failures.

``MUJOCO_GL`` must be set before ``mujoco`` is imported, so the backend choice
(:mod:`sim2real.gl_backend`, a leaf of the namespace root) runs from
``sim2real/__init__.py``, which Python imports before any ``sim2real.*`` module.
"""

from __future__ import annotations

import os

import numpy as np

from sim2real.gl_backend import choose_gl_backend

__all__ = ["SYSTEM_PACKAGES", "OffscreenRenderer", "choose_gl_backend"]

SYSTEM_PACKAGES = "libegl1 libegl-mesa0 libgl1-mesa-dri (EGL) or libosmesa6 (OSMesa)"
"""The Debian packages of a headless GL backend (``make deps`` installs them)."""


class OffscreenRenderer:
    """A ``mujoco.Renderer`` with a clear error when no GL backend works."""

    def __init__(self, model, width: int = 480, height: int = 360) -> None:
        import mujoco

        from sim2real.sim.core.errors import RenderingUnavailableError

        # Offscreen buffers default to 640x480; grow them when a larger frame is asked for.
        model.vis.global_.offwidth = max(model.vis.global_.offwidth, width)
        model.vis.global_.offheight = max(model.vis.global_.offheight, height)
        try:
            self._renderer = mujoco.Renderer(model, height=height, width=width)
        except Exception as exc:  # GL context creation fails in many library-specific ways
            from sim2real import gl_backend

            hint = ""
            if gl_backend.MUJOCO_IMPORTED_FIRST:
                hint = (" mujoco was imported before sim2real chose MUJOCO_GL: import sim2real before mujoco, or "
                        "export MUJOCO_GL=egl (or osmesa) before starting Python.")
            raise RenderingUnavailableError(
                f"offscreen rendering failed with MUJOCO_GL={os.environ.get('MUJOCO_GL', '(unset)')}: {exc}. "
                f"Install the headless GL libraries ({SYSTEM_PACKAGES}), e.g. "
                f"`sudo apt-get install libegl1 libegl-mesa0 libgl1-mesa-dri`, or run `make deps`.{hint}"
            ) from exc
        self.width, self.height = width, height
        self._scene_option = mujoco.MjvOption()

    def render(self, model, data, camera: str | int | None = None) -> np.ndarray:
        """An ``[H, W, 3]`` uint8 frame of ``data`` (``model`` may be any copy of
        the renderer's model with the same sizes, e.g. a randomized one)."""
        import mujoco

        # The scene is updated from `model` itself (public mjv_updateScene rather than the
        # renderer's update_scene, which reads the model it was built with): same sizes,
        # so one GL context serves every randomized copy.
        r = self._renderer
        cam = mujoco.MjvCamera()
        cam_id = camera if camera is not None else -1
        if isinstance(cam_id, str):
            name = cam_id
            cam_id = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_CAMERA, name)
            if cam_id == -1:
                raise ValueError(f'The camera "{name}" does not exist.')
        if not -1 <= cam_id < model.ncam:
            raise ValueError(f"The camera id {cam_id} is out of range [-1, {model.ncam}).")
        if cam_id == -1:
            cam.type = mujoco.mjtCamera.mjCAMERA_FREE
            mujoco.mjv_defaultFreeCamera(model, cam)
        else:
            cam.type, cam.fixedcamid = mujoco.mjtCamera.mjCAMERA_FIXED, cam_id
        mujoco.mjv_updateScene(model, data, self._scene_option, None, cam, mujoco.mjtCatBit.mjCAT_ALL, r.scene)
        return r.render().copy()

    def upload_heightfield(self, model, hfield_id: int) -> None:
        import mujoco

        # mujoco.Renderer has no public accessor for its GPU context; pinned by
        # tests/sim/core/test_rendering_api.py.
        mujoco.mjr_uploadHField(model, vars(self._renderer)["_mjr_context"], hfield_id)

    def close(self) -> None:
        self._renderer.close()
