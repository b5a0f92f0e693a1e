"""Safe actions: what the robot is commanded while a guard is tripped.

* arm: hold position with damping (zero Cartesian velocity: the impedance setpoint
  stays, the controller's damping brakes; in ``joint_torque`` mode damping torques).
* quadruped: stand down (a smooth blend to a crouch) or, after a fall or a torque
  overload, damping mode (targets follow the measured joints, so the servos only damp).
* drone: hover then land (:class:`~sim2real.policies.safety.aerial.HoverThenLand`).

The chain still passes the safe action through its limit filters.
"""

from __future__ import annotations

import abc
import math
from dataclasses import dataclass

import numpy as np

from sim2real.policies.safety.spaces import CommandSpace
from sim2real.policies.safety.types import SafetyState


class Fallback(abc.ABC):
    """Computes the safe action; :meth:`engage` is called when the safe action starts."""

    def __init__(self, space: CommandSpace) -> None:
        self.space = space
        self.engaged_at = 0.0

    def engage(self, state: SafetyState, last_output: np.ndarray | None) -> None:
        self.engaged_at = state.now

    def observe_output(self, command: np.ndarray, state: SafetyState) -> None:
        """Called with the chain's output after every pass, nominal or safe (a fallback
        that learns the robot while things go well, e.g. its hover thrust, does it here)."""

    @abc.abstractmethod
    def command(self, state: SafetyState, causes: list[str], last_output: np.ndarray | None) -> np.ndarray:
        """The safe command now; ``causes`` names the tripped guards."""


class ArmHold(Fallback):
    """Hold position with damping; the gripper keeps its last commanded width, or before
    any command its measured one (the two fingers' joints): a hold never opens a hand that
    holds a tool."""

    def __init__(self, space: CommandSpace, damping: np.ndarray | None = None) -> None:
        super().__init__(space)
        self.damping = np.zeros(7) if damping is None else np.asarray(damping, float)

    def command(self, state: SafetyState, causes: list[str], last_output: np.ndarray | None) -> np.ndarray:
        out = np.zeros(self.space.size)
        if last_output is not None and np.isfinite(last_output[-1]):
            out[-1] = last_output[-1]
        else:
            q = state.value("joint_pos")
            fingers = float(np.sum(q[7:9])) if q is not None and len(q) == 9 else math.nan
            out[-1] = fingers if math.isfinite(fingers) else self.space.hold[-1]
        if self.space.action_mode == "ee_impedance":
            # Hold with the softest spring: compliant, and it cannot store much energy.
            out[6:12] = self.space.lower[6:12]
        qd = state.value("joint_vel")
        if self.space.action_mode == "joint_torque" and qd is not None and len(qd) == 7:
            out[:7] = -self.damping * np.asarray(qd)
        return out


@dataclass
class StandDownParams:
    down_pose: list[float]
    """Joint targets of the crouch the robot lowers itself into (rad)."""
    duration: float = 1.5
    """Seconds of the blend from the pose at the trip to ``down_pose``."""
    damping_causes: tuple[str, ...] = ("fall_guard", "effort_guard")
    """Tripped guards that switch to damping mode instead (no stiffness against the ground)."""


class StandDown(Fallback):
    """Quadruped: blend from the pose at the trip to a crouch (smoothstep), or damping mode."""

    def __init__(self, space: CommandSpace, params: StandDownParams) -> None:
        super().__init__(space)
        if len(params.down_pose) != space.size or params.duration <= 0:
            raise ValueError("down_pose must have one value per joint and duration must be > 0")
        self.params = params
        self.down = np.asarray(params.down_pose, float)
        self.start = self.down.copy()

    def engage(self, state: SafetyState, last_output: np.ndarray | None) -> None:
        super().engage(state, last_output)
        q = state.value("joint_pos")
        if q is not None and len(q) == self.space.size:
            self.start = np.asarray(q, float).copy()
        elif last_output is not None:
            self.start = np.asarray(last_output, float).copy()
        else:
            self.start = self.down.copy()

    def command(self, state: SafetyState, causes: list[str], last_output: np.ndarray | None) -> np.ndarray:
        if any(c in self.params.damping_causes for c in causes):
            q = state.value("joint_pos")
            if q is not None and len(q) == self.space.size:
                return np.asarray(q, float).copy()
            return self.start.copy()
        s = float(np.clip((state.now - self.engaged_at) / self.params.duration, 0.0, 1.0))
        blend = s * s * (3.0 - 2.0 * s)
        return (1.0 - blend) * self.start + blend * self.down
