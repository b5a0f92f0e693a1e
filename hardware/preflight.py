"""The pre-flight check: the robot's live data against what its policy saw in training.

The commonest reason a policy that works in simulation fails on the robot is a mismatch
in the data, not in the physics: joints in another order, degrees for radians, an IMU
mounted another way, a quaternion scalar-last, a stream slower than the policy's loop,
a slow link. Before a robot is enabled, :class:`Preflight` reads its state streams
(through its backend, for ``preflight_seconds``) while it rests in its safe state, and
compares them with the simulated robot (``sim/<robot>``: joint names, ranges and rest
poses, gravity) and the backend's nominal rates. Each item is PASS, WARN or FAIL; any
FAIL keeps the robot disabled (the hardware bridge refuses ``enable``) and makes
``sim2real deploy check`` exit non-zero. The policy's own item (is the observation it
would get inside its training distribution) is added by the command, which knows the
policy.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from sim2real.hardware.backend import RobotBackend
from sim2real.sim.core.deployment import Measurements, RobotDeployment

Status = Literal["PASS", "WARN", "FAIL", "INFO"]

REST_TOLERANCE = 0.35
"""rad a joint may be from a rest pose and still be in it (a robot lying in damping
settles where it falls)."""
LEVEL_GRAVITY_Z = -0.9
"""A resting robot's gravity along its body z, at most (cos 25 deg of tilt)."""


@dataclass(frozen=True)
class Item:
    name: str
    status: Status
    measured: str
    expected: str
    hint: str = ""


def format_table(items: list[Item]) -> str:
    """The items as a plain-text table (one line each)."""
    width = max((len(i.name) for i in items), default=4)
    lines = [f"{'item':<{width}}  status  measured / expected"]
    for i in items:
        line = f"{i.name:<{width}}  {i.status:<6}  {i.measured} / {i.expected}"
        lines.append(line + (f"  -> {i.hint}" if i.hint else ""))
    return "\n".join(lines)


def verdict(items: list[Item]) -> str:
    """``""`` when nothing failed, else the failed items in one line."""
    failed = [f"{i.name}: {i.hint or i.measured}" for i in items if i.status == "FAIL"]
    return ("pre-flight check failed: " + "; ".join(failed)) if failed else ""


class Preflight:
    """Collects a robot's states and judges them (thread-safe :meth:`add`)."""

    def __init__(self, info: RobotDeployment[Any], backend: RobotBackend, seconds: float) -> None:
        self.info = info
        self.backend = backend
        self.seconds = seconds
        self.reported = False
        """Set by the caller once it has shown the table."""
        self._samples: list[tuple[float, Measurements]] = []
        self._lock = threading.Lock()
        self._items: list[Item] | None = None

    def add(self, m: Measurements) -> None:
        now = time.monotonic()
        with self._lock:
            if self._samples and now - self._samples[0][0] > self.seconds:
                return
            self._samples.append((now, m))

    def samples(self) -> list[tuple[float, Measurements]]:
        """(arrival time, measurement) of every state read so far."""
        with self._lock:
            return list(self._samples)

    def finished(self) -> bool:
        with self._lock:
            return bool(self._samples) and time.monotonic() - self._samples[0][0] > self.seconds

    def items(self) -> list[Item]:
        """The judged items (computed once, after :meth:`finished`)."""
        if self._items is None:
            with self._lock:
                samples = list(self._samples)
            rates = self.backend.stream_rates() or self.backend.state_rate
            self._items = judge(self.info, samples, rates, self.backend.latency())
        return self._items

    def verdict(self) -> str:
        """``""`` when the robot may be enabled, else why not."""
        if not self.finished():
            return f"the pre-flight check is still reading the robot's state ({self.seconds:.1f} s)"
        return verdict(self.items())



def judge(info: RobotDeployment[Any], samples: list[tuple[float, Measurements]],
          nominal_rate: float | Mapping[str, float], latency: float | None) -> list[Item]:
    """Every robot-level item for ``samples`` (arrival time, measurement). A mapping of
    nominal rates judges each stream the robot sends separately at its own rate, from its
    arrivals in the measurements' ``stamps`` (an arm's joints at 1 kHz, its gripper at 15 Hz)."""
    if not samples:
        return [Item("state", "FAIL", "no state", "a state stream", "nothing arrived from the robot")]
    ms = [m for _, m in samples]
    if isinstance(nominal_rate, Mapping):
        rates = [_rate(np.unique([m.stamps[key] for m in ms if key in m.stamps]), rate, f"state rate ({key})")
                 for key, rate in nominal_rate.items()]
    else:
        rates = [_rate(np.array([t for t, _ in samples]), nominal_rate)]
    items = [_streams(info, ms[-1]), *rates, _latency(latency)]
    if ms[-1].joint_pos is not None and info.joints:
        items += _joints(info, np.array([m.joint_pos for m in ms if m.joint_pos is not None]))
    if info.floating_base and ms[-1].base_quat is not None:
        items += _attitude(np.array([m.base_quat for m in ms if m.base_quat is not None]))
    return items


def _streams(info: RobotDeployment[Any], m: Measurements) -> Item:
    missing = [n for n in info.measured if getattr(m, n) is None]
    bad = [n for n in info.measured if getattr(m, n) is not None and not np.all(np.isfinite(getattr(m, n)))]
    if missing or bad:
        return Item("streams", "FAIL", f"missing {missing}, non-finite {bad}", ", ".join(info.measured))
    return Item("streams", "PASS", "all present and finite", ", ".join(info.measured))


def _rate(arrivals: np.ndarray, nominal: float, name: str = "state rate") -> Item:
    if arrivals.size < 3:
        return Item(name, "FAIL", f"{arrivals.size} states", f"{nominal:.0f} Hz",
                    "the stream is (nearly) silent")
    gaps = np.diff(arrivals)
    rate = (arrivals.size - 1) / max(arrivals[-1] - arrivals[0], 1e-9)
    jitter = float(np.percentile(np.abs(gaps - 1.0 / rate), 99)) * 1e3
    measured = f"{rate:.0f} Hz, p99 jitter {jitter:.1f} ms"
    if rate < 0.5 * nominal:
        return Item(name, "FAIL", measured, f"{nominal:.0f} Hz",
                    "the driver streams far slower than this robot's interface does: check its configuration")
    if rate < 0.8 * nominal:
        return Item(name, "WARN", measured, f"{nominal:.0f} Hz", "slower than nominal")
    return Item(name, "PASS", measured, f"{nominal:.0f} Hz")


def _latency(latency: float | None) -> Item:
    if latency is None:
        return Item("link latency", "INFO", "not measurable on this protocol", "< 10 ms")
    measured = f"{latency * 1e3:.1f} ms"
    if latency > 0.02:
        return Item("link latency", "FAIL", measured, "< 10 ms", "the link delays state by more than a control "
                    "period's share: a wired link, no Wi-Fi bridge, no busy DDS relay")
    if latency > 0.01:
        return Item("link latency", "WARN", measured, "< 10 ms")
    return Item("link latency", "PASS", measured, "< 10 ms")


def _joints(info: RobotDeployment[Any], q: np.ndarray) -> list[Item]:
    names = info.joints
    if q.shape[1] != len(names):
        return [Item("joints", "FAIL", f"{q.shape[1]} joints", f"{len(names)}: {', '.join(names)}")]
    low, high = info.joint_ranges()
    n = info.safety_joints
    # Where the robot has settled: the last quarter of the window (a Go2 released into
    # damping is still folding its legs at the start).
    mean = q[-max(1, len(q) // 4):, :n].mean(axis=0)
    margin = 0.05 * (high[:n] - low[:n])
    out_of_range = [(names[i], float(mean[i])) for i in range(n)
                    if not low[i] - margin[i] <= mean[i] <= high[i] + margin[i]]
    items = []
    if out_of_range:
        huge = any(abs(v) > 2 * math.pi for _, v in out_of_range)
        items.append(Item("joint ranges", "FAIL", ", ".join(f"{k}={v:.2f}" for k, v in out_of_range),
                          "within the model's joint ranges (rad)",
                          "degrees instead of radians?" if huge else "joint order or zero offsets differ"))
    else:
        items.append(Item("joint ranges", "PASS", "all within range", "the model's joint ranges (rad)"))
    items.append(_rest_pose(names[:n], mean, info.rest_poses))
    return items


def _rest_pose(names: tuple[str, ...], mean: np.ndarray, poses: Mapping[str, tuple[float, ...]]) -> Item:
    expected = ", ".join(poses) or "none known"
    for pose_name, pose in poses.items():
        target = np.asarray(pose[: len(names)])
        off = np.abs(mean - target) > REST_TOLERANCE
        if not off.any():
            return Item("joint order (rest pose)", "PASS", f"in the {pose_name} pose", expected)
        wrong = np.flatnonzero(off)
        for a in wrong:
            for b in range(len(names)):
                swapped = mean.copy()
                swapped[[a, b]] = swapped[[b, a]]
                if b != a and not (np.abs(swapped - target) > REST_TOLERANCE).any():
                    return Item("joint order (rest pose)", "FAIL", f"{names[a]} and {names[b]} exchanged",
                                f"the {pose_name} pose", f"joints {names[a]} and {names[b]} appear swapped")
    return Item("joint order (rest pose)", "WARN", "in no known rest pose: " + " ".join(f"{v:+.2f}" for v in mean),
                expected,
                "put the robot in a rest pose to check the joint order")


def _gravity(q: np.ndarray) -> np.ndarray:
    """Gravity's direction (0, 0, -1) in the body frame of orientation ``q`` (w, x, y, z)."""
    w, x, y, z = q / max(float(np.linalg.norm(q)), 1e-9)
    return -np.array([2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)])


def _attitude(quats: np.ndarray) -> list[Item]:
    """A resting robot is (nearly) level. A scalar-last quaternion read scalar-first is a
    half-turn about an axis tilted by the heading (body z at (0, sin yaw, cos yaw)): it
    reads level only at a heading of 0, where it is a level half-turn no data at rest can
    tell from a robot facing backwards; otherwise gravity reads sideways or up, and read
    the other way round the same numbers are level, which tells it from an IMU mounted
    another way."""
    q = quats.mean(axis=0)
    gravity = _gravity(q)
    measured = f"gravity in body ({gravity[0]:+.2f}, {gravity[1]:+.2f}, {gravity[2]:+.2f})"
    if gravity[2] <= LEVEL_GRAVITY_Z:
        return [Item("gravity (IMU)", "PASS", measured, "(0, 0, -1) at rest"),
                Item("quaternion order", "PASS", "a level rest", "(w, x, y, z)")]
    if _gravity(np.roll(q, 1))[2] <= LEVEL_GRAVITY_Z:
        return [Item("gravity (IMU)", "FAIL", measured, "(0, 0, -1) at rest", "see the quaternion order"),
                Item("quaternion order", "FAIL", "level only when read (x, y, z, w)", "(w, x, y, z)",
                     "the orientation arrives scalar-last (x, y, z, w) where scalar-first is expected")]
    return [Item("gravity (IMU)", "FAIL", measured, "(0, 0, -1) at rest",
                 "gravity reads up or sideways: the IMU is mounted or configured in another orientation"),
            Item("quaternion order", "INFO", "not judged (gravity is wrong either way)", "(w, x, y, z)")]


def robot_writers_item(writers: list[dict[str, Any]] | None) -> Item | None:
    """The robot's state writers discovery found (a DDS robot's backend reports them):
    their type names and XTypes type hashes against ours, and their reliability. None
    where the backend speaks no discovering protocol."""
    if writers is None:
        return None
    expected = "the robot's state writer, our type"
    if not writers:
        return Item("robot's writers", "FAIL", "none discovered", expected,
                    "check the interface, the domain (the robot's is 0) and multicast (docs/hardware.md)")
    shown = "; ".join(f"{w['topic']}: {w['type']} #{str(w['type_hash'])[:8]} ({w['reliability']})" for w in writers)
    if not all(w["same_type"] for w in writers):
        return Item("robot's writers", "FAIL", shown, expected, "a writer of another type identity (firmware "
                    "version?): its frames would not decode as ours")
    return Item("robot's writers", "PASS", shown, expected)
