"""What the correction console attaches to: a HIL-SERL actor or a deployed ROS 2 graph.

A :class:`ConsoleTarget` owns the person's side of the robot's command
(:class:`~.operator.OperatorControl`), the latest camera frames and the episode
statistics; the web layer only calls its methods. Everything it shares between the
web server's thread and the robot's thread goes through :attr:`ConsoleTarget.lock`.
"""

from __future__ import annotations

import abc
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from sim2real.policies.teleop.operator import OperatorControl, OperatorSettings
from sim2real.sim import robot_deployment

LABELS = ("success", "failure", "rerecord")
"""What an operator may say of the current episode."""


class FrameStore:
    """The newest frame of each camera: an RGB array or JPEG bytes, with a counter that
    tells a reader whether it has seen it. Thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._frames: dict[str, tuple[int, float, np.ndarray | bytes]] = {}

    def put(self, camera: str, frame: np.ndarray | bytes, stamp: float | None = None) -> None:
        with self._lock:
            seq = self._frames.get(camera, (0, 0.0, b""))[0] + 1
            self._frames[camera] = (seq, time.time() if stamp is None else stamp, frame)

    def latest(self, camera: str) -> tuple[int, float, np.ndarray | bytes] | None:
        """``(sequence number, capture time (epoch s), frame)``, or None before the first."""
        with self._lock:
            return self._frames.get(camera)

    @property
    def cameras(self) -> list[str]:
        with self._lock:
            return sorted(self._frames)


@dataclass
class EpisodeLog:
    """Episode number, return, success rate and the operator's share of steps."""

    window: int = 20
    """Episodes in the success rate."""
    episode: int = 0
    steps: int = 0
    human_steps: int = 0
    episode_return: float = 0.0
    results: deque[bool] = field(default_factory=lambda: deque(maxlen=20))
    history: deque[dict[str, float]] = field(default_factory=lambda: deque(maxlen=200))
    """Per finished episode: ``episode``, ``return``, ``success``, ``operator_share`` (the plot)."""

    def step(self, reward: float, human: bool) -> None:
        self.steps += 1
        self.human_steps += int(human)
        self.episode_return += float(reward)

    def end(self, success: bool, counted: bool = True) -> dict[str, float]:
        """One episode ended; ``counted=False``: it ran under a latched safety guard (the
        filter's hold, not the policy's or the person's), so not in the success rate."""
        if counted:
            self.results.append(bool(success))
        row = {"episode": self.episode, "return": round(self.episode_return, 3), "success": float(success),
               "operator_share": round(self.human_steps / max(self.steps, 1), 3)}
        self.history.append(row)
        self.episode += 1
        self.steps = self.human_steps = 0
        self.episode_return = 0.0
        return row

    def summary(self) -> dict[str, Any]:
        return {"episode": self.episode, "steps": self.steps, "return": round(self.episode_return, 3),
                "success_rate": round(float(np.mean(self.results)), 3) if self.results else None,
                "operator_share": round(self.human_steps / max(self.steps, 1), 3), "history": list(self.history)}


class ConsoleTarget(abc.ABC):
    """The robot side of the console. Subclasses fill :attr:`frames`, :attr:`episodes`
    and :meth:`snapshot`, apply :meth:`operator_output` to the robot, and implement the
    e-stop, labels and resets.

    Args:
        robot: ``arm``, ``quadruped`` or ``drone`` (its operator space is the robot's own).
        attachment: ``hil`` or ``ros``.
    """

    def __init__(self, robot: str, attachment: str, settings: OperatorSettings | None = None) -> None:
        self.robot, self.attachment = robot, attachment
        self.deployment = robot_deployment(robot)
        self.lock = threading.RLock()
        self.control = OperatorControl(self.deployment.operator, settings or OperatorSettings())
        self.frames = FrameStore()
        self.episodes = EpisodeLog()
        self.events: deque[tuple[float, str]] = deque(maxlen=50)
        """(epoch s, what happened) for the page's log."""
        self.devices: dict[str, dict[str, Any]] = {}
        """Inputs on the console's own machine (a SpaceMouse): their live axes and buttons."""

    def log(self, message: str) -> None:
        self.events.append((time.time(), message))

    def describe(self) -> dict[str, Any]:
        """What the page builds itself from: the robot, its axes and keys, the cameras."""
        space = self.deployment.operator
        return {"robot": self.robot, "attachment": self.attachment, "channel": space.channel,
                "axes": [{"name": a.name, "unit": a.unit, "limit": a.limit, "keys": list(a.keys)} for a in space.axes],
                "cameras": self.camera_names(), "labels": self.labels_enabled(), "resets": self.resets_enabled(),
                "timeout_ms": round(self.control.settings.timeout * 1e3)}

    # -- to implement ------------------------------------------------------------------
    @abc.abstractmethod
    def camera_names(self) -> list[str]:
        """The cameras the page shows, in order."""

    @abc.abstractmethod
    def snapshot(self) -> dict[str, Any]:
        """Robot state, safety state and success probability, JSON-ready."""

    @abc.abstractmethod
    def estop(self, reason: str) -> str:
        """Latch the safety filter's e-stop; the error, if it could not."""

    @abc.abstractmethod
    def reset_estop(self) -> str:
        """Ask the safety filter to clear its latches; why not, if it refused."""

    def labels_enabled(self) -> bool:
        return False

    def resets_enabled(self) -> bool:
        """Whether :meth:`reset_episode` can end the episode (a HIL-SERL run can)."""
        return False

    def label(self, kind: str) -> str:
        """Label the current episode (``success``, ``failure``) or ask to re-record it."""
        return "labels need a HIL-SERL run (sim2real hil run --console)"

    def reset_episode(self) -> str:
        return "this attachment cannot reset episodes"

    def commanded(self) -> None:
        """A person's command was just accepted: targets that publish on a timer may send
        it at once instead (the latency from a key press to the robot)."""

    # -- the operator's side (called by the web layer) -----------------------------------
    def operator_output(self, policy_command: np.ndarray | None = None) -> Any:
        with self.lock:
            return self.control.output(time.monotonic(), policy_command)
