"""What the Go2 backend writes to the motors, decided every 2 ms.

The Go2's firmware applies the last ``rt/lowcmd`` forever, with no timeout of its own,
so this state machine (the one real deployments run, rl_sar's) is the robot's only
watchdog::

    DAMPING --enable--> STANDING --(stand_seconds)--> HOLD --command--> POLICY
     ^   ^                                                                |
     |   +--- estop(), a stale command, a stale or invalid state ---------+
     |                                                                    |
     +--(stand_seconds)-- LYING_DOWN <--- safe(), close() ----------------+

* DAMPING: kp 0, kd ``damping_kd`` on every motor, no torque: the legs fold slowly
  under the robot's weight (the passive mode of rl_sar and Unitree's examples).
* STANDING: targets interpolated from the measured pose to the standing pose over
  ``stand_seconds`` with the stand gains (Unitree's stand example: Kp 60, Kd 5).
* HOLD: the standing pose, stand gains, until the first command (at most
  ``first_command_timeout``).
* POLICY: the newest command's 12 joint targets with the simulated servo's gains
  (Kp 35, Kd 1: the policy sees the dynamics it trained on); older than
  ``command_timeout`` (3 policy periods) -> DAMPING.
* LYING_DOWN: targets interpolated from the measured pose to :data:`LYING_POSE` over
  ``stand_seconds`` with the stand gains, held until the joints show it lying (at most
  as long again), then DAMPING (lying, the legs folded): the way
  back to where the stand-up started, and what sport mode takes over on ``close()``.
  The motors track position targets on their own encoders, so a stale state does not
  stop it; a stale lowstate still ends it in DAMPING, as in every mode.
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass, field

import numpy as np

from sim2real.sim.core.errors import ConfigError
from sim2real.sim.quadruped import constants as C

LYING_POSE = np.array([0.0, 1.36, -2.65, 0.0, 1.36, -2.65, -0.2, 1.36, -2.65, 0.2, 1.36, -2.65])
"""Lying on the belly, legs folded (FR, FL, RR, RL x hip, thigh, calf): the first target
of Unitree's low-level stand example (``example/go2/low_level/go2_stand_example.py``,
``_targetPos_1``), where the sport service's StandDown leaves the robot."""
LYING_TOLERANCE = 0.3
"""rad: thighs and calves this close to :data:`LYING_POSE` (folded at least that far) count as lying."""


def is_lying(q: np.ndarray, dq: np.ndarray | None = None) -> bool:
    """Whether measured joints (and velocities, if given) show a robot lying still:
    every thigh and calf folded to within :data:`LYING_TOLERANCE` of :data:`LYING_POSE`
    (or further), no joint moving faster than 0.5 rad/s."""
    q = np.asarray(q, dtype=np.float64)
    if q.shape != LYING_POSE.shape or not np.all(np.isfinite(q)):
        return False
    thigh, calf = q[1::3], q[2::3]
    folded = bool(np.all(thigh >= LYING_POSE[1::3] - LYING_TOLERANCE)
                  and np.all(calf <= LYING_POSE[2::3] + LYING_TOLERANCE))
    still = dq is None or bool(np.all(np.abs(np.asarray(dq, dtype=np.float64)) < 0.5))
    return folded and still


class Mode(enum.Enum):
    DAMPING = "damping"
    STANDING = "standing"
    HOLD = "hold"
    POLICY = "policy"
    LYING_DOWN = "lying_down"


@dataclass
class MotorTargets:
    """One command for the 12 motors (FR, FL, RR, RL x hip, thigh, calf)."""

    q: np.ndarray = field(default_factory=lambda: np.zeros(C.NUM_JOINTS))
    dq: np.ndarray = field(default_factory=lambda: np.zeros(C.NUM_JOINTS))
    kp: np.ndarray = field(default_factory=lambda: np.zeros(C.NUM_JOINTS))
    kd: np.ndarray = field(default_factory=lambda: np.zeros(C.NUM_JOINTS))
    tau: np.ndarray = field(default_factory=lambda: np.zeros(C.NUM_JOINTS))


@dataclass
class GaitConfig:
    """Gains and timing of the deployment state machine."""

    damping_kd: float = 8.0
    """Kd of the passive/damping state (rl_sar's passive mode), kp 0."""
    stand_kp: float = 60.0
    """Kp while standing up (Unitree's stand example)."""
    stand_kd: float = 5.0
    """Kd while standing up."""
    stand_seconds: float = 1.5
    """Duration of the stand-up interpolation."""
    policy_kp: float = C.KP
    """Kp under the policy: the simulated servo's, so the dynamics match training."""
    policy_kd: float = C.KV
    """Kd under the policy."""
    command_timeout: float = 3 * C.CONTROL_DT
    """Seconds without a command after which the policy's last one is no longer applied."""
    first_command_timeout: float = 2.0
    """Seconds the standing pose is held after enable() waiting for the first command."""
    state_timeout: float = 3 * C.CONTROL_DT
    """Seconds without a valid lowstate after which the robot is put in damping."""

    def validate(self) -> None:
        for name in ("damping_kd", "stand_kp", "stand_kd", "policy_kp", "policy_kd"):
            value = getattr(self, name)
            if not (isinstance(value, int | float) and math.isfinite(value) and 0 <= value <= 500):
                raise ConfigError(name, f"must be a gain in [0, 500], got {value!r}")
        for name in ("stand_seconds", "command_timeout", "first_command_timeout", "state_timeout"):
            value = getattr(self, name)
            if not (isinstance(value, int | float) and math.isfinite(value) and 0 < value <= 10):
                raise ConfigError(name, f"must be in (0, 10] seconds, got {value!r}")


class DeploymentStateMachine:
    """Mode and motor targets; not thread-safe (the backend holds its lock around it)."""

    def __init__(self, config: GaitConfig | None = None) -> None:
        self.config = config or GaitConfig()
        self.config.validate()
        self.mode = Mode.DAMPING
        self.reason = "connected"
        self._low, self._high = C.joint_ranges()[:, 0], C.joint_ranges()[:, 1]
        self._stand_from = C.DEFAULT_POSE.copy()
        self._stand_start = 0.0
        self._mode_time = 0.0
        self._command = C.DEFAULT_POSE.copy()
        self._command_time = -math.inf

    @property
    def command_time(self) -> float:
        """When the newest policy command arrived (-inf: none yet)."""
        return self._command_time

    def damp(self, reason: str) -> bool:
        """Go to DAMPING; True when that changed the mode."""
        changed = self.mode is not Mode.DAMPING
        self.mode, self.reason = Mode.DAMPING, reason
        return changed

    def stand(self, now: float, measured: np.ndarray) -> None:
        """Start the stand-up from the measured pose."""
        self._stand_from = np.clip(np.asarray(measured, dtype=np.float64), self._low, self._high)
        self._stand_start = now
        self.mode, self.reason = Mode.STANDING, ""

    def lie_down(self, now: float, measured: np.ndarray, reason: str) -> None:
        """Start lying down from the measured pose (already lying down: only the reason changes)."""
        if self.mode is Mode.LYING_DOWN:
            self.reason = reason
            return
        self._stand_from = np.clip(np.asarray(measured, dtype=np.float64), self._low, self._high)
        self._stand_start = now
        self.mode, self.reason = Mode.LYING_DOWN, reason

    def command(self, now: float, q: np.ndarray) -> None:
        """A new policy command (validated by the caller), clipped to the joint ranges."""
        self._command = np.clip(q, self._low, self._high)
        self._command_time = now
        if self.mode is Mode.HOLD:
            self.mode = Mode.POLICY

    def step(self, now: float, state_age: float, measured: np.ndarray | None = None) -> tuple[MotorTargets, str]:
        """The targets to write at ``now`` (``measured``: the newest joint positions); the
        second value is why the mode just dropped to DAMPING (empty when it did not)."""
        cfg, fault = self.config, ""
        if self.mode is not Mode.DAMPING and state_age > cfg.state_timeout:
            fault = f"stale lowstate ({state_age * 1e3:.0f} ms)"
        elif self.mode is Mode.POLICY and now - self._command_time > cfg.command_timeout:
            fault = f"stale command ({(now - self._command_time) * 1e3:.0f} ms)"
        elif self.mode is Mode.HOLD and now - self._mode_time > cfg.first_command_timeout:
            fault = f"no command within {cfg.first_command_timeout:g} s of standing up"
        if fault:
            self.damp(fault)
        out = MotorTargets()
        if self.mode is Mode.DAMPING:
            out.kd[:] = cfg.damping_kd
            return out, fault
        if self.mode in (Mode.STANDING, Mode.LYING_DOWN):
            s = min(max((now - self._stand_start) / cfg.stand_seconds, 0.0), 1.0)
            goal = C.DEFAULT_POSE if self.mode is Mode.STANDING else LYING_POSE
            out.q[:] = (1 - s) * self._stand_from + s * goal
            out.kp[:], out.kd[:] = cfg.stand_kp, cfg.stand_kd
            if s >= 1.0 and self.mode is Mode.STANDING:
                self.mode, self._mode_time = Mode.HOLD, now
            elif s >= 1.0 and (now - self._stand_start >= 2 * cfg.stand_seconds
                               or (measured is not None and is_lying(measured))):
                self.damp(self.reason)  # lying (or as far as it gets): no torque needed to stay there
            return out, fault
        if self.mode is Mode.HOLD:
            out.q[:], out.kp[:], out.kd[:] = C.DEFAULT_POSE, cfg.stand_kp, cfg.stand_kd
        else:
            out.q[:], out.kp[:], out.kd[:] = self._command, cfg.policy_kp, cfg.policy_kd
        return out, fault
