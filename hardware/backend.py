"""One interface for every real robot: what the ``hardware_bridge`` node and HIL-SERL's
real-arm actor drive, whatever the vendor's protocol underneath.

A backend speaks one robot's own interface (ros2_control topics for a Franka arm, Unitree's
low-level DDS for a Go2, CRTP through cflib for a Crazyflie) and owns the loops that
protocol needs (the Go2's 500 Hz ``rt/lowcmd``, cflib's link threads). Above it
everything is the same: measurements as :class:`~sim2real.sim.core.deployment.Measurements`
(the state type the safety filter and the policy read), commands in the robot's command
space (:func:`sim2real.policies.safety.spaces.command_space`, physical units, already
filtered), and one small life cycle::

    DISCONNECTED --connect()--> CONNECTED (safe: the robot's passive state)
    CONNECTED --enable()--> ENABLED (commands reach the motors)
    ENABLED --safe(reason)--> CONNECTED        any fault: stale commands, a lost stream
    any --estop(reason)--> ESTOPPED (latched; connect() again after the cause is cleared)

``safe`` is the robot's own safe state, documented per backend (the arm holds its joints,
the Go2 damps its motors, the Crazyflie levels then cuts its motors). A backend never
moves the robot on its own except into that state.

Backends register by name in :data:`BACKENDS` (one line per backend, imported only when
used: each needs its vendor's library); a robot's deployment description names its
default one (``real_backend``) and any other that can drive it (``other_backends``).
"""

from __future__ import annotations

import abc
import enum
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from sim2real.hardware.registry import load_registered
from sim2real.sim.core.deployment import Measurements

if TYPE_CHECKING:
    from sim2real.hardware.preflight import Item


class Phase(enum.Enum):
    DISCONNECTED = "disconnected"
    CONNECTED = "connected"
    """Link up, state streaming, the robot in its safe state; commands are refused."""
    ENABLED = "enabled"
    ESTOPPED = "estopped"


class HardwareError(RuntimeError):
    """A backend cannot do what was asked (no robot answering, a refused enable, a
    protocol error). The message is one line for the operator."""


@dataclass
class Health:
    """What an operator (and the bridge's diagnostics) needs to know of the link."""

    phase: Phase
    reason: str = ""
    """Why the robot is in its safe state or e-stopped (empty when enabled or never enabled)."""
    state_age: float = float("inf")
    """Seconds since the last valid state arrived (inf: none yet)."""
    counters: dict[str, int] = field(default_factory=dict)
    """Frames sent and received, rejected per reason (bad CRC, truncated, ...), faults."""
    detail: dict[str, Any] = field(default_factory=dict)
    """Backend-specific figures (battery voltage, motor temperatures, rate jitter)."""


StateCallback = Callable[[Measurements], None]


class RobotBackend(abc.ABC):
    """One robot behind its vendor's protocol. Thread-safe: :meth:`command` is called from
    the bridge's executor, state callbacks come from the backend's own threads."""

    protocol: ClassVar[str]
    """One line: the vendor interface spoken (for logs and the pre-flight table)."""
    state_rate: ClassVar[float]
    """Hz the robot's interface streams state at (the pre-flight check's reference)."""
    needs_own_process: ClassVar[bool] = False
    """Its loop cannot share a Python interpreter with the rest of the graph (the Go2's
    2 ms writer: measured at 37 Hz instead of 500 in one process with the policy and the
    filter); ``sim2real deploy`` then runs one process per node, as the launch files do."""
    close_seconds: ClassVar[float] = 2.0
    """The longest :meth:`close` takes to leave the robot in its resting state (a
    lie-down, a landing): what a launcher must wait after SIGTERM before it kills the
    bridge's process."""

    def stream_rates(self) -> dict[str, float]:
        """Nominal Hz of each state stream the robot sends on its own (keyed as its arrivals
        are in ``Measurements.stamps``), for the pre-flight check; empty: one stream at
        :attr:`state_rate`."""
        return {}

    def __init__(self, action_mode: str, options: dict[str, Any] | None = None) -> None:
        self.action_mode = action_mode
        """The command space of :meth:`command` (a driver mode of the robot)."""
        self.options = dict(options or {})
        self._lock = threading.Lock()
        self._phase = Phase.DISCONNECTED
        self._reason = ""
        self._latest: Measurements | None = None
        self._callbacks: list[StateCallback] = []

    # -- life cycle ----------------------------------------------------------------
    @abc.abstractmethod
    def connect(self, timeout: float) -> None:
        """Open the link and wait up to ``timeout`` s for the first state; leaves the robot
        in its safe state (:attr:`Phase.CONNECTED`).

        Raises:
            HardwareError: nothing answered, or the robot refused the connection.
        """

    @abc.abstractmethod
    def enable(self) -> None:
        """Take the robot from its safe state to accepting commands (the Go2 stands up,
        the Crazyflie's thrust lock is released). Blocks until done.

        Raises:
            HardwareError: not connected, e-stopped, no fresh state, or the robot refused.
        """

    @abc.abstractmethod
    def command(self, values: np.ndarray) -> None:
        """Send one filtered command (the robot's command space for :attr:`action_mode`).
        Ignored unless enabled.

        Raises:
            ValueError: wrong size or non-finite values (nothing is sent).
        """

    @abc.abstractmethod
    def safe(self, reason: str) -> None:
        """Put the robot in its safe state now (back to :attr:`Phase.CONNECTED`)."""

    @abc.abstractmethod
    def estop(self, reason: str) -> None:
        """The robot's emergency stop (latched: :attr:`Phase.ESTOPPED`)."""

    @abc.abstractmethod
    def close(self) -> None:
        """Safe state, then close the link (idempotent)."""

    # -- state -----------------------------------------------------------------------
    def state(self) -> Measurements | None:
        """The latest measurements (``stamps``: host monotonic arrival times), or None."""
        with self._lock:
            return self._latest

    def on_state(self, callback: StateCallback) -> None:
        """Call ``callback`` with every new measurement, from the backend's thread."""
        self._callbacks.append(callback)

    @property
    def phase(self) -> Phase:
        return self._phase

    def health(self) -> Health:
        with self._lock:
            latest = self._latest
        return Health(self._phase, self._reason, self._state_age(latest), self.counters(), self.detail())

    def latency(self) -> float | None:
        """Seconds the link delays a state (from the robot sampling it to its arrival
        here), where the protocol can tell: a robot time stamp on a clock shared with this
        host, or half an echo's round trip. None where it cannot."""
        return None

    def counters(self) -> dict[str, int]:
        return {}

    def detail(self) -> dict[str, Any]:
        return {}

    def driver_items(self) -> list[Item]:
        """The pre-flight check's rows for what the robot's own driver shows beyond the state
        stream (``deploy check``): none unless its driver has a state of its own
        (ur_robot_driver's program and speed scaling; PX4's arming, battery and failsafes)."""
        return []

    # -- for subclasses -----------------------------------------------------------------
    def _publish(self, m: Measurements) -> None:
        """Record ``m`` as the latest state and hand it to the callbacks."""
        with self._lock:
            self._latest = m
        for callback in self._callbacks:
            callback(m)

    def _set_phase(self, phase: Phase, reason: str = "") -> None:
        self._phase, self._reason = phase, reason

    def _still_connected(self) -> None:
        """Raise unless the robot is CONNECTED: the one rule of every backend's enable. An
        enable calls it under the lock its faults and e-stops take when it starts, and again
        just before it commits: an e-stop or a fault that came while it waited (for a fresh
        state, a controller, the firmware, a stand-up) is never overridden."""
        if self._phase is Phase.ESTOPPED:  # latched
            raise HardwareError(f"cannot enable: estopped ({self._reason or 'no reason given'}): connect() again "
                                "once the cause is cleared")
        if self._phase is not Phase.CONNECTED:
            raise HardwareError(f"cannot enable: {self._phase.value} ({self._reason or 'no reason given'})")

    @staticmethod
    def _state_age(m: Measurements | None) -> float:
        if m is None or not m.stamps:
            return float("inf")
        return time.monotonic() - max(m.stamps.values())


BACKENDS: dict[str, str] = {
    "ros2_control": "sim2real.hardware.ros2_control.backend:Ros2ControlArm",
    "ur": "sim2real.hardware.ros2_control.ur:UrArm",
    "unitree_go2": "sim2real.hardware.go2.backend:Go2Backend",
    "crazyflie": "sim2real.hardware.crazyflie.backend:CrazyflieBackend",
    "px4": "sim2real.hardware.px4.backend:Px4Backend",
}
"""Backend name -> ``module:class``."""


def backend_class(name: str) -> type[RobotBackend]:
    """The backend registered as ``name``.

    Raises:
        ConfigError: no such backend.
    """
    return load_registered(BACKENDS, name, RobotBackend, "backend")
