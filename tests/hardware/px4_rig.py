"""What the PX4 tests share: pymavlink's ``mavutil`` as the ground station, the emulator
driven by a test's own clock (:class:`Bench`), and the emulator served in real time on a
thread (:class:`ServedVehicle`)."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

os.environ.setdefault("MAVLINK20", "1")  # mavutil speaks MAVLink 2, as PX4 and MAVSDK do

from pymavlink import mavutil
from pymavlink.dialects.v20 import common as M
from ros2_control_rig import wait_for  # noqa: F401  (the hardware tests' one wait)

import sim2real  # noqa: F401  (first: picks MUJOCO_GL before mujoco is imported)
from sim2real.hardware.backend import backend_class
from sim2real.hardware.emulator.px4 import Px4Emulator, Px4EmulatorConfig
from sim2real.hardware.emulator.px4_link import ATT_IGNORE_ATTITUDE
from sim2real.hardware.px4.backend import Px4Backend
from sim2real.hardware.px4.modes import MODES
from sim2real.sim.drone import constants as C

HOVER = C.HOVER_THRUST / (4 * C.MAX_THRUST)
"""Normalized thrust that holds the simulated (Crazyflie-scale) drone up."""
POSITION_ONLY = 0b0000_1111_1111_1000
"""SET_POSITION_TARGET_LOCAL_NED type_mask: velocity, acceleration, yaw and yaw rate ignored."""
VELOCITY_ONLY = 0b0000_1111_1100_0111
"""SET_POSITION_TARGET_LOCAL_NED type_mask: position, acceleration, yaw and yaw rate ignored."""


class Gcs:
    """mavutil listening as an offboard computer does (``udpin``); the emulator sends to it."""

    def __init__(self) -> None:
        self.conn: Any = mavutil.mavlink_connection("udpin:127.0.0.1:0", source_system=255, source_component=190)
        self.port: int = self.conn.port.getsockname()[1]
        self.messages: list[Any] = []

    def drain(self) -> list[Any]:
        out = []
        while (msg := self.conn.recv_match(blocking=False)) is not None:
            out.append(msg)
        self.messages += out
        return out

    def of(self, kind: str) -> list[Any]:
        return [m for m in self.messages if m.get_type() == kind]

    def rates(self, thrust: float, rates_frd: tuple[float, float, float] = (0.0, 0.0, 0.0)) -> None:
        self.conn.mav.set_attitude_target_send(0, 1, 1, ATT_IGNORE_ATTITUDE, [1.0, 0.0, 0.0, 0.0], *rates_frd, thrust)

    def local_ned(self, mask: int, position: tuple[float, float, float] = (0.0, 0.0, 0.0),
                  velocity: tuple[float, float, float] = (0.0, 0.0, 0.0)) -> None:
        """SET_POSITION_TARGET_LOCAL_NED in MAV_FRAME_LOCAL_NED with ``mask``."""
        self.conn.mav.set_position_target_local_ned_send(0, 1, 1, M.MAV_FRAME_LOCAL_NED, mask, *position, *velocity,
                                                         0, 0, 0, 0, 0)

    def heartbeat(self) -> None:
        """A ground station's HEARTBEAT (the data link PX4 watches)."""
        self.conn.mav.heartbeat_send(M.MAV_TYPE_GCS, M.MAV_AUTOPILOT_INVALID, 0, 0, M.MAV_STATE_ACTIVE)

    def set_mode(self, name: str) -> None:
        main, sub = MODES[name]
        self.conn.mav.command_long_send(1, 1, M.MAV_CMD_DO_SET_MODE, 0, M.MAV_MODE_FLAG_CUSTOM_MODE_ENABLED,
                                        main, sub, 0, 0, 0, 0)

    def arm(self, arm: bool = True, force: bool = False) -> None:
        self.conn.mav.command_long_send(1, 1, M.MAV_CMD_COMPONENT_ARM_DISARM, 0, float(arm),
                                        21196.0 if force else 0.0, 0, 0, 0, 0, 0)

    def set_param(self, name: str, value: float, kind: int = M.MAV_PARAM_TYPE_REAL32) -> None:
        self.conn.mav.param_set_send(1, 1, name.encode(), value, kind)

    def close(self) -> None:
        self.conn.close()


class Bench:
    """The emulator driven by the test's clock; the GCS talks to it over real UDP."""

    def __init__(self, config: Px4EmulatorConfig | None = None) -> None:
        self.gcs = Gcs()
        cfg = config or Px4EmulatorConfig()
        cfg.port, cfg.gcs_port = 0, self.gcs.port
        self.emu = Px4Emulator(cfg)
        self.now = 100.0
        self.run(0.1)  # its first heartbeat tells mavutil where the vehicle is

    def run(self, seconds: float, thrust: float | None = None, every: float = 0.05,
            send: Callable[[], object] | None = None) -> None:
        """Tick for ``seconds``; every ``every`` s a SET_ATTITUDE_TARGET of ``thrust`` or
        what ``send`` sends (neither: silence)."""
        dt = self.emu.config.tick
        per = max(1, round(every / dt))
        if thrust is not None:
            send = lambda: self.gcs.rates(thrust)  # noqa: E731
        for k in range(round(seconds / dt)):
            if send is not None and k % per == 0:
                send()
            self.emu.poll(0.0, self.now)
            self.emu.tick(self.now)
            self.now += dt
            if k % 25 == 0:
                self.gcs.drain()
        self.gcs.drain()

    def ack(self, command: int) -> int:
        """The result of the last COMMAND_ACK for ``command``, after a tick to answer it."""
        self.run(self.emu.config.tick)
        acks = [m for m in self.gcs.of("COMMAND_ACK") if m.command == command]
        assert acks, f"no COMMAND_ACK for {command}"
        return int(acks[-1].result)

    def mode(self) -> str:
        hb = self.gcs.of("HEARTBEAT")[-1]
        return mavutil.interpret_px4_mode(hb.base_mode, hb.custom_mode)

    def take_off(self, send: Callable[[], object], climb: float = 0.8, every: float = 0.05) -> None:
        """Stream ``send``'s setpoints, OFFBOARD and ARM (each acked), then ``climb`` s of them."""
        self.run(1.2, send=send, every=every)
        self.gcs.set_mode("OFFBOARD")
        assert self.ack(M.MAV_CMD_DO_SET_MODE) == M.MAV_RESULT_ACCEPTED
        self.gcs.arm()
        assert self.ack(M.MAV_CMD_COMPONENT_ARM_DISARM) == M.MAV_RESULT_ACCEPTED
        self.run(climb, send=send, every=every)

    def close(self) -> None:
        self.emu.close()
        self.gcs.close()


class ServedVehicle:
    """The emulator served in real time on a thread of its own."""

    def __init__(self, config: Px4EmulatorConfig | None = None) -> None:
        self.emu = Px4Emulator(config or Px4EmulatorConfig(port=0, gcs_port=9))  # 9 (discard): silent until spoken to
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self.emu.serve, kwargs={"should_stop": self._stop.is_set},
                                        daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self.emu.close()



def open_bench() -> Iterator[Bench]:
    """A :class:`Bench` (the emulator on the test's clock), closed after the test; each test
    module makes it its ``bench`` fixture (``pytest.fixture(name="bench")(open_bench)``)."""
    bench = Bench()
    try:
        yield bench
    finally:
        bench.close()


def serve_vehicle() -> Iterator[ServedVehicle]:
    """A :class:`ServedVehicle`, closed after the test (a module's ``vehicle`` fixture)."""
    vehicle = ServedVehicle()
    try:
        yield vehicle
    finally:
        vehicle.close()


def backend_for(vehicle: ServedVehicle, **options: object) -> Px4Backend:
    """The PX4 backend (through the registry) with the emulator's connect options."""
    backend = backend_class("px4")("ctbr", {**vehicle.emu.connect_options(), "stale_after": 0.5, **options})
    assert isinstance(backend, Px4Backend)
    return backend


def fly(backend: Px4Backend, seconds: float, thrust: float) -> None:
    """``[thrust N, 0, 0, 0]`` at 50 Hz for ``seconds``."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        backend.command(np.array([thrust, 0.0, 0.0, 0.0]))
        time.sleep(0.02)
