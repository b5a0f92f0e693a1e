"""Headless offscreen rendering: pick a working OpenGL backend, explain failures.

``MUJOCO_GL`` must be set before ``mujoco`` is imported, so the backend choice
(:mod:`sim2real.gl_backend`, a leaf of the namespace root) runs from
``sim2real/__init__.py``, which Python imports before any ``sim2real.*`` module.
"""

from __future__ import annotations

import importlib
import importlib.util
import os

import numpy as np

from sim2real.gl_backend import choose_gl_backend

__all__ = ["SYSTEM_PACKAGES", "OffscreenRenderer", "choose_gl_backend"]

SYSTEM_PACKAGES = "libegl1 libegl-mesa0 libgl1-mesa-dri (EGL) or libosmesa6 (OSMesa)"
"""The Debian packages of a headless GL backend (``make deps`` installs them)."""


_LLVM_ORDER_SETTLED = False


def load_triton_before_mesa() -> None:
    """Load Triton, when installed, before the first GL context of the process.

    Mesa's software rasterizer (llvmpipe, behind EGL and OSMesa here) and Triton
    (PyTorch's kernel compiler, which ``torch.optim`` imports through ``torch._dynamo``)
    each bring their own LLVM. Triton's loaded after Mesa's segfaults the process
    (measured: one render, then ``torch.optim.Adam``); the other order is safe. So a
    process that renders loads Triton first (0.4 s, once) if it is there at all; the
    deployment install has no torch and pays nothing."""
    global _LLVM_ORDER_SETTLED
    if _LLVM_ORDER_SETTLED:
        return
    _LLVM_ORDER_SETTLED = True
    if importlib.util.find_spec("triton") is not None:
        importlib.import_module("triton")


class OffscreenRenderer:
    """A ``mujoco.Renderer`` with a clear error when no GL backend works.

    Args:
        live: Render for a live view: no shadows, no reflections and no multisampling.
            With software GL (EGL on llvmpipe) a 320x240 frame of the arm then takes
            ~9 ms instead of ~220 ms (MuJoCo's default 4096-pixel shadow map and 4x
            multisampling). Default: MuJoCo's full quality, as videos and reports use.
            A live renderer also leaves no GL context bound to the calling thread after
            each call, so one thread may render and another close it (a ROS executor's
            thread renders, the main thread tears the node down; EGL refuses a context
            still bound to another thread).
    """

    def __init__(self, model, width: int = 480, height: int = 360, live: bool = False) -> None:
        import mujoco

        load_triton_before_mesa()
        from sim2real.sim.core.errors import RenderingUnavailableError

        # Offscreen buffers default to 640x480; grow them when a larger frame is asked for.
        model.vis.global_.offwidth = max(model.vis.global_.offwidth, width)
        model.vis.global_.offheight = max(model.vis.global_.offheight, height)
        # Multisampling is fixed when the GL context's buffers are made: make them without
        # it, and give the model its own setting back.
        samples = model.vis.quality.offsamples
        if live:
            model.vis.quality.offsamples = 0
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
        finally:
            model.vis.quality.offsamples = samples
        if live:  # scene flags: mjv_updateScene keeps them
            self._renderer.scene.flags[mujoco.mjtRndFlag.mjRND_SHADOW] = 0
            self._renderer.scene.flags[mujoco.mjtRndFlag.mjRND_REFLECTION] = 0
        self.live = live
        self.width, self.height = width, height
        self._unbind()
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
        try:
            return r.render().copy()
        finally:
            self._unbind()

    def _unbind(self) -> None:
        """A live renderer's GL context leaves this thread (``mujoco.Renderer`` binds it
        again for each frame). Only EGL ties a context to one thread; OSMesa does not."""
        if self.live and os.environ.get("MUJOCO_GL") == "egl":
            import mujoco.egl

            mujoco.egl.EGL.eglReleaseThread()

    def upload_heightfield(self, model, hfield_id: int) -> None:
        import mujoco

        # mujoco.Renderer has no public accessor for its GPU context; pinned by
        # tests/sim/core/test_rendering_api.py (and its GL context, which a live renderer
        # binds here, by tests/ros_nodes/test_sim_cameras.py).
        gl = vars(self._renderer).get("_gl_context")
        if self.live and gl is not None:
            gl.make_current()
        try:
            mujoco.mjr_uploadHField(model, vars(self._renderer)["_mjr_context"], hfield_id)
        finally:
            self._unbind()

    def close(self) -> None:
        self._renderer.close()
