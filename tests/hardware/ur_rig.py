"""The UR arm's test rig: the ur_robot_driver emulator serving on a thread in a DDS domain
of its own, the ``ur`` backend, and a plain rclpy client speaking to the driver as a user's
tools do (``ros2 service call``, ``ros2 topic echo``)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import fair_server
import numpy as np
from dds_domains import unique_domain_id
from ros2_control_rig import control_path, wait_for
from std_msgs.msg import Bool, Float64, Float64MultiArray
from std_srvs.srv import Trigger

from sim2real.hardware.emulator.ros2_control_ur import UrDriverEmulator, UrDriverEmulatorConfig
from sim2real.hardware.realtime import EXECUTOR_PRIORITY
from sim2real.hardware.ros2_control import topics as T
from sim2real.hardware.ros2_control import ur_topics as UT
from sim2real.hardware.ros2_control.ur import UrArm
from sim2real.policies.classical.ur_reach import UrReachController

PERIOD = 0.05


@dataclass
class DriverClient:
    """A user's view of the driver: its dashboard services, status topics and the forward
    controller's command topic, on a node of its own."""

    ros: T.RosThread
    program: list[bool] = field(default_factory=list)
    scaling: list[float] = field(default_factory=list)

    def __post_init__(self) -> None:
        node = self.ros.node
        node.create_subscription(Bool, UT.PROGRAM_RUNNING, lambda m: self.program.append(bool(m.data)),
                                 UT.latched_qos())
        node.create_subscription(Float64, UT.SPEED_SCALING, lambda m: self.scaling.append(float(m.data)),
                                 T.controller_qos())
        self.commands = node.create_publisher(Float64MultiArray, UT.POSITION_COMMANDS, T.controller_qos())
        self.velocities = node.create_publisher(Float64MultiArray, UT.VELOCITY_COMMANDS, T.controller_qos())
        self._clients = {name: node.create_client(Trigger, name) for name in (UT.PLAY, UT.STOP,
                                                                               UT.UNLOCK_PROTECTIVE_STOP)}

    def last_scaling(self) -> float | None:
        """The latest speed scaling heard, in percent; None before the first (a loaded
        machine may discover the topic after the test's first look)."""
        return self.scaling[-1] if self.scaling else None

    def call(self, service: str, timeout: float = 3.0) -> Any:
        """A dashboard service's response (``success``, ``message``)."""
        client = self._clients[service]
        assert client.wait_for_service(timeout_sec=timeout), f"{service} is not offered"
        future = client.call_async(Trigger.Request())
        end = time.monotonic() + timeout
        while not future.done() and time.monotonic() < end:
            time.sleep(0.005)
        assert future.done(), f"{service} did not answer in {timeout} s"
        return future.result()


@dataclass
class UrRig:
    domain: int
    emulator: UrDriverEmulator
    backend: UrArm
    client: DriverClient
    thread: threading.Thread

    def reach(self, seconds: float, stop_when: Any = None) -> None:
        """The classical reach through the backend at the control rate for ``seconds``
        (stopping early when ``stop_when()``), toward the emulator's goal. At the control
        path's real-time priority, as the deployment graph's policy and filter run: at a
        normal priority a loaded machine delays a command past the backend's deadman."""
        controller = UrReachController()
        end = time.monotonic() + seconds
        next_at = time.monotonic()
        with control_path("ur test host"):
            while time.monotonic() < end and not (stop_when is not None and stop_when()):
                m = self.backend.state()
                mission = self.emulator.mission()
                if m is not None and m.ee_pos is not None and mission is not None and mission.goal is not None:
                    self.backend.command(controller.command(m.ee_pos, mission.goal))
                next_at += PERIOD
                time.sleep(max(next_at - time.monotonic(), 0.0))

    def report(self) -> str:
        """What both sides saw, whole, for a failed assertion's message: the robot's
        summary, the backend's counters and its last hold (a deadman or stale states stop
        a reach)."""
        return json.dumps({"emulator": self.emulator.summary(), "backend": self.backend.counters(),
                           "phase": self.backend.phase.name, "last_hold": self.backend.last_hold}, default=str)

    def flange_speed(self, seconds: float = 0.2) -> float:
        """Mean flange speed (m/s) over the next ``seconds``, measured at the robot."""
        p0 = self.emulator.ee_pos()
        time.sleep(seconds)
        return float(np.linalg.norm(self.emulator.ee_pos() - p0) / seconds)


def ur_rig(config: UrDriverEmulatorConfig | None = None, connect: bool = True,
           options: dict[str, Any] | None = None) -> Iterator[UrRig]:
    domain = unique_domain_id()
    cfg = config or UrDriverEmulatorConfig(unlock_delay_s=0.3)
    cfg.domain_id = domain
    emulator = UrDriverEmulator(cfg)
    thread = threading.Thread(target=emulator.serve, daemon=True)
    thread.start()
    backend = UrArm("ee_delta", {"domain_id": domain, **fair_server.ARM_OPTIONS, **(options or {})})
    # At real-time priority like every thread of this process that takes the GIL: a
    # normal-priority holder preempted on a loaded machine stalls the real-time loops.
    client = DriverClient(T.RosThread("ur_test_client", domain, "", realtime=("ur test client", EXECUTOR_PRIORITY - 1)))
    try:
        if connect:
            backend.connect(5.0)
            assert wait_for(lambda: backend.driver_state()["speed_scaling_percent"] is not None, 2.0)
        yield UrRig(domain, emulator, backend, client, thread)
    finally:
        backend.close()
        client.ros.close()
        emulator.close()
