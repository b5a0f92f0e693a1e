"""Headless offscreen rendering: pick a working OpenGL backend, explain failures.

``MUJOCO_GL`` must be set before ``mujoco`` is imported, so the backend choice
(:func:`sim2real._gl.choose_gl_backend`) runs from ``sim2real/__init__.py``,
which Python always imports before any ``sim2real.*`` module.
"""

from __future__ import annotations

import os

import numpy as np

from sim2real._gl import SYSTEM_PACKAGES, choose_gl_backend

__all__ = ["SYSTEM_PACKAGES", "OffscreenRenderer", "choose_gl_backend"]


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
            hint = ""
            try:
                from mujoco.rendering.classic import gl_context

                if os.environ.get("MUJOCO_GL", "").lower() != gl_context._MUJOCO_GL:
                    hint = (
                        f" mujoco was imported before MUJOCO_GL was set (it saw {gl_context._MUJOCO_GL!r}): import "
                        "sim2real before mujoco, or export MUJOCO_GL=egl (or osmesa) before starting Python."
                    )
            except ImportError:
                pass
            raise RenderingUnavailableError(
                f"offscreen rendering failed with MUJOCO_GL={os.environ.get('MUJOCO_GL', '(unset)')}: {exc}. "
                f"Install the headless GL libraries ({SYSTEM_PACKAGES}), e.g. "
                f"`sudo apt-get install libegl1 libegl-mesa0 libgl1-mesa-dri`, or run `make deps`.{hint}"
            ) from exc
        self.width, self.height = width, height

    def render(self, model, data, camera: str | int | None = None) -> np.ndarray:
        """An ``[H, W, 3]`` uint8 frame of ``data`` (``model`` may be any copy of
        the renderer's model with the same sizes, e.g. a randomized one)."""
        r = self._renderer
        r._model = model  # same sizes; lets one GL context serve every randomized copy
        r.update_scene(data, camera=camera if camera is not None else -1)
        return r.render().copy()

    def upload_heightfield(self, model, hfield_id: int) -> None:
        import mujoco

        mujoco.mjr_uploadHField(model, self._renderer._mjr_context, hfield_id)

    def close(self) -> None:
        self._renderer.close()
