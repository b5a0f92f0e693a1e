"""The PX4 backend's thrust against the emulated PX4 over real UDP on loopback: newtons
normalized by the vehicle's airframe (the X500 model). PX4's attitude, position and
velocity setpoints are the emulator's (``test_px4_emulator.py``, pymavlink as the
client); the backend sends only the filter's body rates."""

from __future__ import annotations

import pytest
from px4_rig import ServedVehicle, backend_for, fly, serve_vehicle, wait_for

from sim2real.hardware.emulator.px4 import Px4EmulatorConfig
from sim2real.sim.drone.airframe import airframe

vehicle_fixture = pytest.fixture(name="vehicle")(serve_vehicle)


def test_the_backend_normalizes_thrust_by_the_vehicles_airframe() -> None:
    """Against the X500 model (connect options say so): 1.2 x its 19.6 N weight in newtons
    climbs at 0.2 g, as the same command does on the Crazyflie; normalized by the
    Crazyflie's 0.6 N it would be full thrust (0.74 g up, through the ceiling)."""
    x500 = airframe("x500")
    vehicle = ServedVehicle(Px4EmulatorConfig(port=0, gcs_port=9, airframe="x500"))
    backend = backend_for(vehicle)
    try:
        assert backend.max_thrust == pytest.approx(x500.max_collective_thrust)
        backend.connect(timeout=5.0)
        assert backend.detail()["airframe"] == "x500"  # what deploy check and the console show
        backend.enable()
        fly(backend, 1.0, 1.2 * x500.hover_thrust)
        state = backend.state()
        assert state is not None and state.base_pos is not None and state.base_lin_vel is not None
        assert 0.4 < float(state.base_pos[2]) < 1.6, state.base_pos  # 0.2 g for ~1 s: about 1 m, not 3.6
        assert 1.0 < float(state.base_lin_vel[2]) < 2.8, state.base_lin_vel
        fly(backend, 0.5, x500.hover_thrust)  # its weight: the climb rate holds
        after = backend.state()
        assert after is not None and after.base_lin_vel is not None
        assert abs(float(after.base_lin_vel[2]) - float(state.base_lin_vel[2])) < 0.5
        backend.safe("test")
        assert wait_for(lambda: not vehicle.emu.commander.armed, 12.0) and vehicle.emu.crashes == 0
    finally:
        backend.close()
        vehicle.close()
