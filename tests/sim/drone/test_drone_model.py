"""The quadrotor MJCF against its published numbers, with raw MuJoCo only:
mass properties, geometry, hover thrust, rotor lag, force/torque allocation,
air drag and contacts."""

from __future__ import annotations

import mujoco
import numpy as np
import pytest

from sim2real.sim.drone import constants as C


@pytest.fixture()
def model() -> mujoco.MjModel:
    return mujoco.MjModel.from_xml_path(str(C.MODEL_XML))


def airborne(model: mujoco.MjModel, command: np.ndarray | float = 0.0) -> mujoco.MjData:
    """Data with the drone level at 1 m, motors settled at ``command``."""
    data = mujoco.MjData(model)
    data.qpos[2] = 1.0
    data.ctrl[:] = command
    data.act[:] = command
    mujoco.mj_forward(model, data)
    return data


def test_mass_inertia_and_geometry_match_constants(model: mujoco.MjModel) -> None:
    body = model.body("drone")
    assert body.mass[0] == pytest.approx(C.MASS)
    np.testing.assert_allclose(body.inertia, C.INERTIA)
    for i in range(4):
        xy = model.site(f"thrust{i + 1}").pos[:2]
        assert np.hypot(*xy) == pytest.approx(C.ARM_LENGTH, rel=1e-3)
        np.testing.assert_allclose(xy, C.ROTOR_XY[i], atol=5e-5)
    np.testing.assert_allclose(model.geom("hull").size, C.COLLISION_HALF_SIZE)
    np.testing.assert_allclose(model.geom("prop1").size[0], C.PROP_RADIUS)


def test_rotor_actuators_and_options_match_constants(model: mujoco.MjModel) -> None:
    np.testing.assert_allclose(model.actuator_gainprm[:, 0], C.MAX_THRUST)
    np.testing.assert_allclose(model.actuator_dynprm[:, 0], C.MOTOR_TIME_CONSTANT)
    assert (model.actuator_dyntype == mujoco.mjtDyn.mjDYN_FILTEREXACT).all()
    np.testing.assert_allclose(model.actuator_gear[:, 2], 1.0)
    np.testing.assert_allclose(model.actuator_gear[:, 5], -C.ROTOR_SPIN * C.YAW_TORQUE_RATIO)
    assert model.opt.timestep == C.PHYSICS_DT
    assert model.opt.density == C.AIR_DENSITY
    assert model.opt.viscosity == pytest.approx(C.EFFECTIVE_VISCOSITY, rel=1e-3)


def test_hover_thrust_equals_weight(model: mujoco.MjModel) -> None:
    """Bisect the equal rotor command at which the drone neither rises nor sinks."""
    low, high = 0.0, 1.0
    for _ in range(50):
        command = 0.5 * (low + high)
        if airborne(model, command).qacc[2] > 0:
            high = command
        else:
            low = command
    thrust = 4 * command * C.MAX_THRUST
    weight = C.MASS * C.GRAVITY
    assert thrust == pytest.approx(weight, rel=0.02)
    assert thrust == pytest.approx(C.HOVER_THRUST, rel=0.02)

    data = airborne(model, command)
    mujoco.mj_step(model, data, 500)  # one second of hovering on those commands
    assert np.abs(data.qpos[:3] - [0, 0, 1]).max() < 1e-3
    assert np.abs(data.qvel).max() < 1e-3


def test_motor_lag_is_first_order_with_the_configured_time_constant(model: mujoco.MjModel) -> None:
    data = airborne(model, 0.2)
    data.ctrl[:] = 0.8
    times, thrusts = [], []
    for _ in range(100):
        mujoco.mj_step(model, data)
        mujoco.mj_forward(model, data)  # actuator_force of the current act
        times.append(data.time)
        thrusts.append(data.actuator_force[0])
    times, thrusts = np.array(times), np.array(thrusts)
    expected = C.MAX_THRUST * (0.8 - 0.6 * np.exp(-times / C.MOTOR_TIME_CONSTANT))
    np.testing.assert_allclose(thrusts, expected, rtol=1e-6)
    # Time to 63.2 % of the step, read off the response.
    rise = np.interp(0.2 + 0.6 * (1 - np.exp(-1)), thrusts / C.MAX_THRUST, times)
    assert rise == pytest.approx(C.MOTOR_TIME_CONSTANT, abs=C.PHYSICS_DT)


def test_rotor_forces_and_torques_follow_the_allocation_matrix(model: mujoco.MjModel) -> None:
    rng = np.random.default_rng(0)
    for _ in range(5):
        command = rng.uniform(0.1, 0.9, 4)
        data = airborne(model, command)
        wrench = data.qfrc_actuator  # level drone: body and world axes coincide
        expected = C.ALLOCATION @ (command * C.MAX_THRUST)
        np.testing.assert_allclose(wrench[2], expected[0], rtol=1e-9)
        np.testing.assert_allclose(wrench[3:], expected[1:], rtol=1e-4, atol=1e-12)  # XML rounds to 1 um
        np.testing.assert_allclose(wrench[:2], 0.0, atol=1e-12)
    # Signs, spelled out: left rotors (M3, M4) harder rolls right side down, i.e. positive roll.
    assert airborne(model, np.array([0.4, 0.4, 0.5, 0.5])).qacc[3] > 0
    # Clockwise rotors (M2, M4) harder yaw the body counter-clockwise (positive yaw).
    assert airborne(model, np.array([0.4, 0.5, 0.4, 0.5])).qacc[5] > 0


def test_drag_is_zero_at_rest_linear_plus_quadratic_and_wind_pushes_downwind(model: mujoco.MjModel) -> None:
    data = airborne(model, 0.0)
    np.testing.assert_allclose(data.qfrc_fluid, 0.0, atol=1e-12)

    model.opt.density = 0.0  # the viscous (rotor-drag) term alone
    data = airborne(model)
    data.qvel[0] = 1.0
    mujoco.mj_forward(model, data)
    assert -data.qfrc_fluid[0] == pytest.approx(C.LINEAR_DRAG, rel=0.02)

    model.opt.density = C.AIR_DENSITY
    model.opt.wind[:] = [2.0, 0.0, 0.0]
    data = airborne(model)
    force = data.qfrc_fluid[:3]
    assert force[0] > 2 * C.LINEAR_DRAG  # linear part plus a quadratic body-drag part
    assert force[0] < 0.2 * C.HOVER_THRUST  # but a 2 m/s breeze is not a gale
    np.testing.assert_allclose(force[1:], 0.0, atol=1e-9)


def test_drone_rests_on_the_pad_with_its_weight_on_the_touch_sensor(model: mujoco.MjModel) -> None:
    data = mujoco.MjData(model)
    data.qpos[2] = C.REST_HEIGHT + 0.01
    mujoco.mj_step(model, data, 500)
    assert data.qpos[2] == pytest.approx(C.REST_HEIGHT, abs=1e-3)
    assert data.sensor("touch").data[0] == pytest.approx(C.MASS * C.GRAVITY, rel=0.01)
    np.testing.assert_allclose(data.sensor("accelerometer").data, [0, 0, C.GRAVITY], atol=1e-3)


def test_fast_landing_cannot_tunnel_through_the_pad(model: mujoco.MjModel) -> None:
    data = mujoco.MjData(model)
    data.qpos[2] = 0.2
    data.qvel[2] = -8.0  # far beyond any landing
    mujoco.mj_step(model, data, 500)
    assert data.qpos[2] > C.REST_HEIGHT - 0.003


def test_only_drone_contacts_are_generated(model: mujoco.MjModel) -> None:
    """contype/conaffinity: the drone's hull collides with the arena; nothing else collides."""
    hull = model.geom("hull").id
    for g in range(model.ngeom):
        collides_with_hull = bool(model.geom_contype[hull] & model.geom_conaffinity[g]) or bool(
            model.geom_contype[g] & model.geom_conaffinity[hull])
        if g == hull:
            continue
        is_arena = model.geom_bodyid[g] == 0 and model.geom_conaffinity[g]
        assert collides_with_hull == bool(is_arena), model.geom(g).name
        if model.geom_bodyid[g] == model.body("drone").id:
            assert model.geom_contype[g] == 0 and model.geom_conaffinity[g] == 0
