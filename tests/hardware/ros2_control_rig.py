"""The ros2_control arm's test rig: the emulator serving on a thread, a backend connected
to it, each in a DDS domain of its own (shared by the loopback and fault tests; the
``rig`` fixture is in conftest.py)."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np
from dds_domains import unique_domain_id

from sim2real.hardware.emulator.faults import StreamFaults
from sim2real.hardware.emulator.ros2_control_arm import Ros2ControlArmEmulator, Ros2ControlArmEmulatorConfig
from sim2real.hardware.realtime import EXECUTOR_PRIORITY, RealtimeStatus, realtime_thread
from sim2real.hardware.ros2_control.backend import Ros2ControlArm
from sim2real.hardware.ros2_control.topics import Topology


def control_path(name: str = "test host") -> contextlib.AbstractContextManager[RealtimeStatus]:
    """A test's host loop at the control path's real-time priority, as the deployment
    graph's policy, filter and bridge run (where permitted): at normal priority a loaded
    machine delays a command past the backend's deadman, and a reach falls short."""
    return realtime_thread(name, EXECUTOR_PRIORITY, cpu=None)


def wait_for(predicate: Callable[[], bool], timeout: float) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.005)
    return predicate()


@dataclass
class Rig:
    domain: int
    emulator: Ros2ControlArmEmulator
    backend: Ros2ControlArm
    thread: threading.Thread

    def commands_accepted(self) -> int:
        """Arm commands the emulated controller took (forward commands or trajectories)."""
        return self.emulator.counters["commands_accepted"]

    def drive(self, values: np.ndarray, seconds: float) -> None:
        """Send ``values`` every control period for ``seconds``, as the bridge would."""
        end = time.monotonic() + seconds
        next_at = time.monotonic()
        with control_path():
            while time.monotonic() < end:
                self.backend.command(values)
                next_at += 0.05
                time.sleep(max(next_at - time.monotonic(), 0.0))


def start_emulator(domain: int, faults: StreamFaults | None = None,
                   topology: Topology = "franka_ros2") -> tuple[Ros2ControlArmEmulator, threading.Thread]:
    emulator = Ros2ControlArmEmulator(Ros2ControlArmEmulatorConfig(domain_id=domain, topology=topology), faults)
    thread = threading.Thread(target=emulator.serve, daemon=True)
    thread.start()
    return emulator, thread


def connected_rig(topology: Topology = "franka_ros2") -> Iterator[Rig]:
    """franka_ros2's stock topology by default; ``merged``: the single 9-joint stream.

    The backend keeps its default hold limits (50 ms stale, 125 ms deadman), not
    tests/fair_server.py's allowance: the fault tests on this rig check those holds."""
    domain = unique_domain_id()
    emulator, thread = start_emulator(domain, topology=topology)
    backend = Ros2ControlArm("ee_delta", {"domain_id": domain, "topology": topology})
    try:
        backend.connect(5.0)
        yield Rig(domain, emulator, backend, thread)
    finally:
        backend.close()
        emulator.close()
