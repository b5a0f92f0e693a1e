"""Choose a headless OpenGL backend before MuJoCo is imported (no mujoco import here).

MuJoCo reads ``MUJOCO_GL`` once, when it is imported, and modules of every layer
import mujoco themselves. The one module Python imports before any of them is the
``sim2real`` package, so the choice is made there, from this leaf (like
:mod:`sim2real.errors`, it imports nothing of sim2real). It is not part of the
command-line shell: what rendering needs beyond the choice (the system packages, the
explanation of a failure) is in :mod:`sim2real.sim.core.rendering`.
"""

from __future__ import annotations

import ctypes.util
import os
import sys

MUJOCO_IMPORTED_FIRST = False
"""MuJoCo was imported before :func:`choose_gl_backend` set ``MUJOCO_GL`` (so it never
saw the choice: rendering then names this as the likely cause of a GL failure)."""


def choose_gl_backend() -> str | None:
    """Set ``MUJOCO_GL`` to ``egl`` or ``osmesa`` when unset and no display exists.

    Returns the backend chosen (or already set), ``None`` when none was found.
    """
    global MUJOCO_IMPORTED_FIRST
    current = os.environ.get("MUJOCO_GL")
    if current:
        return current
    if os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"):
        return None  # a desktop session: let MuJoCo use GLFW
    for backend, lib in (("egl", "EGL"), ("osmesa", "OSMesa")):
        if ctypes.util.find_library(lib):
            MUJOCO_IMPORTED_FIRST = "mujoco" in sys.modules
            os.environ["MUJOCO_GL"] = backend
            if backend == "osmesa":
                os.environ.setdefault("PYOPENGL_PLATFORM", "osmesa")
            else:
                os.environ.setdefault("PYOPENGL_PLATFORM", "egl")
            return backend
    return None
