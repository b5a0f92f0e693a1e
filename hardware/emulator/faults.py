"""Mismatches between a robot's data and what its policy saw in training, injected into an
emulator's outgoing state before it is encoded on the wire.

These are the integration mistakes that sink real deployments (joint order, units, an
IMU mounted another way, a quaternion in the other order, a slow stream, a slow link);
``sim2real deploy check`` must catch each one, and the tests inject them here. Every
emulator applies :meth:`StreamFaults.distort` to the measurements it encodes and asks
:meth:`StreamFaults.due` whether a state frame is due, so the faults look the same on
every protocol.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field, replace
from typing import Literal

import numpy as np

from sim2real.sim.core.deployment import Measurements
from sim2real.sim.core.errors import ConfigError

SAMPLED = "sampled"
"""Key of :attr:`Measurements.stamps` :meth:`StreamFaults.due` sets: when the frame was
sampled, on the caller's clock (its header stamp, where the protocol has one)."""


@dataclass
class StreamFaults:
    swap_joints: tuple[int, int] | None = None
    """Two joint indices exchanged in every joint stream (a wrong joint order)."""
    joint_units: Literal["rad", "deg"] = "rad"
    """``deg``: joint positions and velocities sent in degrees."""
    imu_flipped: bool = False
    """The IMU mounted upside down (rotated 180 deg about its x axis): gravity reads up."""
    quat_order: Literal["wxyz", "xyzw"] = "wxyz"
    """``xyzw``: the base orientation sent scalar-last where the protocol is scalar-first."""
    rate_hz: float = 0.0
    """Send state at most this often (0: every tick), as a slow driver would."""
    latency: float = 0.0
    """Seconds every state frame is held back before it is sent."""
    _last_due: float = field(default=-math.inf, repr=False)
    _queue: deque[tuple[float, Measurements]] = field(default_factory=deque, repr=False)

    def __post_init__(self) -> None:
        for name in ("rate_hz", "latency"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value >= 0):
                raise ConfigError(name, f"must be a finite number >= 0, got {value!r}")

    @property
    def active(self) -> bool:
        return (self.swap_joints is not None or self.joint_units != "rad" or self.imu_flipped
                or self.quat_order != "wxyz" or self.rate_hz > 0 or self.latency > 0)

    def distort(self, m: Measurements) -> Measurements:
        """``m`` as the faulty robot would report it (a copy; ``m`` is unchanged)."""
        out = replace(m, stamps=dict(m.stamps))
        for name in ("joint_pos", "joint_vel", "joint_effort"):
            values = getattr(out, name)
            if values is None:
                continue
            values = np.array(values, dtype=np.float64)
            if self.swap_joints is not None:
                i, j = self.swap_joints
                values[[i, j]] = values[[j, i]]
            if self.joint_units == "deg" and name != "joint_effort":
                values = np.degrees(values)
            setattr(out, name, values)
        if self.imu_flipped and out.base_quat is not None:
            # q_imu = q_body * Rx(pi): (w, x, y, z) * (0, 1, 0, 0) = (-x, w, z, -y)
            w, x, y, z = out.base_quat
            out.base_quat = np.array([-x, w, z, -y])
            if out.base_ang_vel is not None:
                out.base_ang_vel = np.asarray(out.base_ang_vel) * np.array([1.0, -1.0, -1.0])
        if self.quat_order == "xyzw" and out.base_quat is not None:
            out.base_quat = np.roll(np.asarray(out.base_quat), -1)
        return out

    def due(self, now: float, m: Measurements) -> list[Measurements]:
        """The state frames to send at ``now`` given the newest measurement ``m``: none when
        the slow rate skips this tick, the held-back frames whose latency has passed."""
        take = self.rate_hz <= 0 or now - self._last_due >= 1.0 / self.rate_hz
        if take:
            self._last_due = now
            frame = self.distort(m)
            frame.stamps[SAMPLED] = now  # a driver stamps when it samples, before the link delays it
            self._queue.append((now, frame))
        out = []
        while self._queue and now - self._queue[0][0] >= self.latency:
            out.append(self._queue.popleft()[1])
        return out
