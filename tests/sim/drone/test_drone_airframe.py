"""The airframes a drone task can fly: the X500 model against its published numbers,
the Crazyflie's airframe against drone.xml, and the task's PID hovering each."""

from __future__ import annotations

import mujoco
import numpy as np
import pytest

import sim2real  # noqa: F401  (first: picks MUJOCO_GL before mujoco is imported)
from sim2real.sim.core.env import SimEnv
from sim2real.sim.core.errors import ConfigError
from sim2real.sim.core.registry import REGISTRY
from sim2real.sim.drone import constants as C
from sim2real.sim.drone import x500
from sim2real.sim.drone.airframe import CRAZYFLIE, X500, Airframe
from sim2real.sim.drone.base import DroneTask


def _model(airframe: Airframe) -> mujoco.MjModel:
    spec = mujoco.MjSpec.from_file(str(C.MODEL_XML))
    airframe.apply(spec)
    return spec.compile()


def test_x500_model_has_its_published_numbers() -> None:
    model = _model(X500)
    assert model.body("drone").mass[0] == pytest.approx(2.0)
    np.testing.assert_allclose(model.body("drone").inertia, x500.INERTIA)
    np.testing.assert_allclose(model.actuator_gainprm[:, 0], 8.54858e-06 * 1000.0**2)
    np.testing.assert_allclose(model.actuator_gear[:, 5], -C.ROTOR_SPIN * 0.016)
    for i in range(4):
        np.testing.assert_allclose(model.site(f"thrust{i + 1}").pos[:2], X500.rotor_xy[i])
    assert 2 * np.hypot(*model.site("thrust1").pos[:2]) == pytest.approx(0.5, abs=0.01)  # 500 mm wheelbase
    assert X500.max_collective_thrust / X500.hover_thrust == pytest.approx(1.74, abs=0.01)


def test_the_crazyflies_airframe_is_drone_xml_number_for_number() -> None:
    """Applying the Crazyflie's airframe changes nothing: drone.xml is that airframe, so a
    task that skips apply() for it flies the same model as one that does not."""
    plain = mujoco.MjModel.from_xml_path(str(C.MODEL_XML))
    applied = _model(CRAZYFLIE)
    # atol: drone.xml writes the rotor positions to the micrometre
    for field in ("body_mass", "body_inertia", "actuator_gainprm", "actuator_dynprm", "actuator_gear", "site_pos",
                  "site_size", "geom_size", "geom_pos"):
        np.testing.assert_allclose(getattr(applied, field), getattr(plain, field), rtol=1e-6, atol=1e-6,
                                   err_msg=field)
    assert applied.opt.viscosity == pytest.approx(plain.opt.viscosity, rel=1e-3)


@pytest.mark.parametrize("airframe", ["crazyflie", "x500"])
def test_the_tasks_pid_hovers_each_airframe_from_the_ground(airframe: str) -> None:
    env = SimEnv(REGISTRY.get("DroneHover"), action_mode="ctbr_residual", airframe=airframe, start="ground", seed=0)
    try:
        env.reset(seed=0)
        expected = X500 if airframe == "x500" else CRAZYFLIE
        assert env.data.qpos[2] == pytest.approx(expected.rest_height)
        success = False
        for _ in range(500):
            _, _, terminated, truncated, info = env.step(np.zeros(4))
            assert not terminated, "crashed"
            if truncated:
                success = bool(info.get("success"))
                break
        assert success
        assert isinstance(env.task, DroneTask)
        assert np.linalg.norm(env.data.qpos[:3] - env.task.target[0]) < 0.05
    finally:
        env.close()


def test_an_unknown_airframe_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="airframe"):
        SimEnv(REGISTRY.get("DroneHover"), airframe="f450")
