"""What every protocol-level emulator offers the command line and the tests.

An emulator is the robot side of one vendor's wire protocol, backed by the simulated
robot: it steps MuJoCo in real time, speaks the protocol exactly as the vendor's
firmware or driver does (including its watchdogs and what it does with malformed
frames), and injects :class:`~sim2real.hardware.emulator.faults.StreamFaults` into the
state it sends.

It also plays the operator a real deployment has: :meth:`Emulator.mission` is the
simulated task's goal or velocity command and its episode counters, which
``sim2real hardware emulate`` publishes on ROS (``goal``, ``cmd_vel``, ``episodes``) the
way a person or a mission planner would for a real robot.
"""

from __future__ import annotations

import abc
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

import mujoco
import numpy as np

from sim2real.hardware.emulator.faults import StreamFaults
from sim2real.hardware.registry import load_registered
from sim2real.sim.core.errors import ConfigError

PoseListener = Callable[[float, mujoco.MjData], None]
"""``(time.monotonic(), the simulation's data)``, called by an emulator's real-time loop."""


@dataclass(frozen=True)
class Mission:
    """What an operator would tell the robot, and how it has done so far."""

    goal: np.ndarray | None = None
    """Position target (m, world frame), for robots deployed towards a goal."""
    cmd_vel: np.ndarray | None = None
    """(vx, vy, yaw rate) for robots deployed on a velocity command."""
    course: dict[str, Any] | None = None
    """The task's course (``Task.course``: its waypoints or obstacles and goal) where its
    policy follows a planned path: what the sim bridge publishes on ``course``."""
    episodes: int = 0
    successes: int = 0


@dataclass
class EmulatorSettings:
    """What every emulator is started with (``sim2real hardware emulate``)."""

    robot: str = ""
    """The robot emulated, where its protocol serves more than one (PX4: the Crazyflie-scale
    ``drone`` or the ``x500``); empty: the emulator's own (:attr:`Emulator.robot`)."""
    task: str = ""
    """Simulated task (registry name; empty: the robot's deployment task)."""
    seed: int = 0
    """Seed of the simulated task (targets, commands)."""
    host: str = "127.0.0.1"
    """Address a UDP emulator listens on (loopback)."""
    port: int | None = None
    """UDP port (None: the real robot's, e.g. the Crazyflie's 19850; 0: any free one;
    :meth:`Emulator.connect_options` says which)."""
    domain_id: int = 0
    """DDS domain of the ROS 2 graph (emulators whose protocol is ROS 2 topics)."""
    robot_domain_id: int | None = None
    """DDS domain of a robot whose own protocol is plain DDS (the Go2: 0, as the real one),
    or whose driver's topics are at the root namespace (ur_robot_driver's, beside the
    graph's ``joint_states``). A run of its own (``deploy --emulate``, tests) gives it a domain apart from the ROS
    graph's, which keeps the graph's participants (another DDS implementation, other
    types) out of its discovery. None: ``domain_id``."""
    interface: str = "lo"
    """Network interface of a robot speaking plain DDS (``lo``: this machine only; ``auto``:
    the interface on the robot's own network, as a real Go2 has)."""
    airframe: str = ""
    """The quadrotor a drone emulator flies (:mod:`sim2real.sim.drone.airframe`; empty: the
    Crazyflie). Only PX4's flies another."""
    faults: StreamFaults = field(default_factory=StreamFaults)
    """Mismatches injected into the state it sends (the pre-flight check's tests)."""
    backend_options: dict[str, Any] = field(default_factory=dict)
    """The host backend's options: an emulator plays the robot they describe where they
    describe the robot's own set-up (the UR's ``controller``, the one its driver runs);
    the rest is the host's and ignored here."""


@dataclass
class MotionOnset:
    """When the robot first moved under power: the first ``observe`` at which, powered,
    its ``position`` had left where it last rested unpowered by more than ``threshold``
    (in any element). ``at`` is ``time.monotonic()``, a clock every process on the
    machine shares, so ``deploy`` sets it against the moment the bridge was asked to
    enable: enable -> first motion as the person at the robot sees it."""

    threshold: float
    rest: np.ndarray | None = None
    at: float | None = None

    def observe(self, now: float, position: np.ndarray, powered: bool) -> None:
        if self.at is not None:
            return
        if not powered or self.rest is None:
            self.rest = np.array(position, dtype=float)
        elif float(np.max(np.abs(position - self.rest))) > self.threshold:
            self.at = now

    def summary(self) -> dict[str, Any]:
        return {"first_motion_at": None if self.at is None else round(self.at, 4)}


def episode_summary(results: list[bool], ends: list[float]) -> dict[str, Any]:
    """An emulator's episodes for its summary: counts, each outcome and when it ended
    (``time.monotonic()``, a clock every process on the machine shares, so a caller can
    keep only the episodes that ended while its graph ran)."""
    return {"episodes": len(results), "successes": sum(results), "episode_results": list(results),
            "episode_ends": [round(t, 3) for t in ends]}


class Emulator(abc.ABC):
    """One simulated robot behind its vendor's protocol (loopback by default)."""

    robot: ClassVar[str]
    """The robot it emulates (a deployment description's name)."""

    @classmethod
    @abc.abstractmethod
    def launch(cls, settings: EmulatorSettings) -> Emulator:
        """An emulator listening (sockets bound, DDS entities created), not yet serving."""

    @abc.abstractmethod
    def connect_options(self) -> dict[str, Any]:
        """The backend options (``hardware_bridge.backend_options``) that reach this
        emulator: its URI, port or DDS domain."""

    @abc.abstractmethod
    def serve(self, duration: float = 0.0, should_stop: Callable[[], bool] | None = None) -> None:
        """Run in real time for ``duration`` s (0: until ``should_stop()`` is true)."""

    @abc.abstractmethod
    def mission(self) -> Mission | None:
        """The simulated task's mission now (None: the robot has none)."""

    @abc.abstractmethod
    def summary(self) -> dict[str, Any]:
        """Counters for ``--json``: ticks, frames accepted and rejected per reason, faults."""

    @abc.abstractmethod
    def close(self) -> None:
        """Stop serving and release the sockets (idempotent)."""

    @classmethod
    def has_cell_cameras(cls) -> bool:
        """:meth:`watch_pose` works (the emulator overrides it): its cell's cameras can be drawn."""
        return cls.watch_pose is not Emulator.watch_pose

    def watch_pose(self, listener: PoseListener) -> mujoco.MjModel:
        """Call ``listener(now, data)`` from the real-time loop after each physics update
        (it must only copy what it needs); returns the simulated robot's model. The
        cameras of the robot's cell are drawn from it.

        Raises:
            ConfigError: this emulator offers no pose (the default).
        """
        raise ConfigError("cameras", f"the {self.robot} emulator has no cameras in its cell")


EMULATORS: dict[str, str] = {
    "ros2_control": "sim2real.hardware.emulator.ros2_control_arm:Ros2ControlArmEmulator",
    "ur": "sim2real.hardware.emulator.ros2_control_ur:UrDriverEmulator",
    "unitree_go2": "sim2real.hardware.emulator.go2:Go2Emulator",
    "crazyflie": "sim2real.hardware.emulator.crazyflie:CrazyflieEmulator",
    "px4": "sim2real.hardware.emulator.px4:Px4Emulator",
}
"""Backend name -> the ``module:class`` of the emulator that speaks its protocol."""


def emulator_class(backend: str) -> type[Emulator]:
    """The emulator of ``backend``'s protocol.

    Raises:
        ConfigError: no emulator for that backend.
    """
    return load_registered(EMULATORS, backend, Emulator, "emulated backend")
