"""Rendering through mujoco's public API (issue 26, defect 5): the scene comes from the
model passed to ``render`` (one GL context serves every randomized copy), cameras are
checked, and the one private attribute left (the GPU context, for height fields) is pinned."""

from __future__ import annotations

import mujoco
import pytest

import sim2real  # noqa: F401  (MUJOCO_GL before any renderer)
from sim2real.sim.core.rendering import OffscreenRenderer

XML = """
<mujoco>
  <worldbody>
    <light pos="0 0 3"/>
    <camera name="front" pos="0 -1 0.3" xyaxes="1 0 0 0 0.3 1"/>
    <geom name="box" type="box" size="0.1 0.1 0.1" rgba="1 0 0 1"/>
  </worldbody>
</mujoco>
"""


def test_a_copy_of_the_model_renders_its_own_colours() -> None:
    model = mujoco.MjModel.from_xml_string(XML)
    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)
    renderer = OffscreenRenderer(model, 64, 48)
    try:
        red = renderer.render(model, data, "front")
        blue_model = mujoco.MjModel.from_xml_string(XML.replace('rgba="1 0 0 1"', 'rgba="0 0 1 1"'))
        blue = renderer.render(blue_model, data, "front")
        assert red[..., 0].mean() > red[..., 2].mean() and blue[..., 2].mean() > blue[..., 0].mean()
        assert renderer.render(model, data).shape == (48, 64, 3)  # the free camera
        with pytest.raises(ValueError, match="does not exist"):
            renderer.render(model, data, "side")
        with pytest.raises(ValueError, match="out of range"):
            renderer.render(model, data, 3)
    finally:
        renderer.close()


def test_the_renderer_still_keeps_its_gpu_context_where_height_fields_are_uploaded() -> None:
    """mujoco.Renderer has no public accessor for its MjrContext; if this fails, mujoco
    moved it and OffscreenRenderer.upload_heightfield must follow."""
    model = mujoco.MjModel.from_xml_string(XML)
    renderer = mujoco.Renderer(model, 48, 64)
    try:
        assert isinstance(renderer._mjr_context, mujoco.MjrContext)
    finally:
        renderer.close()


@pytest.mark.parametrize(
    "first_import", ["sim2real.errors", "sim2real.hardware.preflight", "sim2real.ros_nodes.sim_robot"]
)
def test_the_gl_backend_is_chosen_before_mujoco_whatever_module_comes_first(first_import: str) -> None:
    """MuJoCo reads MUJOCO_GL once, at import: modules of other layers import mujoco
    themselves, so the choice must not wait for the first render."""
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k not in ("MUJOCO_GL", "PYOPENGL_PLATFORM", "DISPLAY",
                                                           "WAYLAND_DISPLAY")}
    code = (f"import os, {first_import}\n"
            "from sim2real import gl_backend as gl\n"
            "print(os.environ.get('MUJOCO_GL'), gl.MUJOCO_IMPORTED_FIRST)")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    backend, imported_first = out.stdout.split()
    assert backend in ("egl", "osmesa") and imported_first == "False"


@pytest.mark.heavy
def test_rendering_then_training_in_one_process_does_not_crash() -> None:
    """Mesa's llvmpipe and Triton (torch's optimizers import it) each load an LLVM; Triton's
    after Mesa's segfaulted the process. The renderer loads Triton first."""
    import subprocess
    import sys

    code = ("import sim2real\nfrom sim2real.sim import make\n"
            "from sim2real.sim.core.rendering import OffscreenRenderer\n"
            "env = make('ArmReach'); env.reset(seed=0)\n"
            "OffscreenRenderer(env.model, 32, 32, live=True).render(env.model, env.data, 'front')\n"
            "import torch\ntorch.optim.Adam([torch.zeros(2, requires_grad=True)])\nprint('trained')\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and "trained" in done.stdout, done.stderr[-2000:]
