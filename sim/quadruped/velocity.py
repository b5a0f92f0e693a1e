"""Velocity tracking on flat ground: follow a commanded (vx, vy, yaw rate) in the
body frame, resampled every few seconds (legged_gym / Playground joystick task)."""

from __future__ import annotations

from typing import Any, ClassVar

import mujoco
import numpy as np

from sim2real.sim.core.errors import ConfigError
from sim2real.sim.core.task import BatchRng, PhysicsBatch, StepResult, draw_rows
from sim2real.sim.quadruped import constants as c
from sim2real.sim.quadruped import rewards
from sim2real.sim.quadruped.base import MOVING_THRESHOLD, QuadrupedTask
from sim2real.sim.quadruped.gait_metrics import GaitStats


def _check_range(name: str, value: Any, bound: float) -> tuple[float, float]:
    try:
        low, high = (float(v) for v in value)
    except (TypeError, ValueError):
        raise ConfigError(name, f"must be a (low, high) pair, got {value!r}") from None
    if not (np.isfinite(low) and np.isfinite(high)) or low > high or low < -bound or high > bound:
        raise ConfigError(name, f"must satisfy -{bound} <= low <= high <= {bound}, got ({low}, {high})")
    return low, high


class Velocity(QuadrupedTask):
    """Track a velocity command on flat ground.

    Options (besides :class:`QuadrupedTask`'s):
        lin_vel_x, lin_vel_y, yaw_rate: Command ranges (m/s, m/s, rad/s).
        resample_seconds: Mean time between command changes (each env draws
            uniformly within +-20 % so changes do not line up across the batch).
        zero_command_probability: Share of commands that are "stand still".
        turn_in_place_probability: Share of commands that only turn (vx = vy = 0). Drawn
            uniformly, a planar speed below the moving threshold is rare (about 2 %), so a
            policy barely sees a turn started from a stand without it.
        success_error: Episode-mean xy tracking error (m/s) below which an episode
            without a fall counts as a success.
    """

    name: ClassVar[str] = "velocity"

    def __init__(
        self,
        num_envs: int,
        action_mode: str | None = None,
        lin_vel_x: tuple[float, float] = (-0.5, 1.0),
        lin_vel_y: tuple[float, float] = (-0.5, 0.5),
        yaw_rate: tuple[float, float] = (-1.0, 1.0),
        resample_seconds: float = 5.0,
        zero_command_probability: float = 0.1,
        turn_in_place_probability: float = 0.0,
        success_error: float = 0.25,
        **options: Any,
    ) -> None:
        super().__init__(num_envs, action_mode, **options)
        self.ranges = np.array(
            [
                _check_range("lin_vel_x", lin_vel_x, 3.0),
                _check_range("lin_vel_y", lin_vel_y, 3.0),
                _check_range("yaw_rate", yaw_rate, 5.0),
            ]
        )
        if not np.isfinite(resample_seconds) or resample_seconds < self.control_dt:
            raise ConfigError("resample_seconds", f"must be >= control_dt ({self.control_dt}), got {resample_seconds}")
        for name, p in (("zero_command_probability", zero_command_probability),
                        ("turn_in_place_probability", turn_in_place_probability)):
            if not 0.0 <= p <= 1.0:
                raise ConfigError(name, f"must be in [0, 1], got {p}")
        if not np.isfinite(success_error) or success_error <= 0:
            raise ConfigError("success_error", f"must be > 0, got {success_error}")
        self.resample_seconds = float(resample_seconds)
        self.zero_command_probability = float(zero_command_probability)
        self.turn_in_place_probability = float(turn_in_place_probability)
        self.success_error = float(success_error)
        self.command = np.zeros((num_envs, 3))
        self.moving = np.zeros(num_envs, dtype=bool)
        """Where the command asks for motion (air-time bonus on, stand-still penalty off)."""
        self.time_to_resample = np.zeros(num_envs)
        self._error_sum = np.zeros(num_envs)
        self._steps = np.zeros(num_envs)
        self.gait_stats = GaitStats(num_envs)

    # -- layouts -------------------------------------------------------------------------
    def present_layout(self) -> list[tuple[str, int]]:
        return [
            ("base_lin_vel", 3),
            ("base_ang_vel", 3),
            ("projected_gravity", 3),
            ("command", 3),
            ("joint_pos", 12),
            ("joint_vel", 12),
            ("last_action", 12),
            *([("gait_clock", 2)] if self.gait is not None else []),
        ]

    # -- commands ------------------------------------------------------------------------
    def sample_commands(self, rng: np.random.Generator, n: int) -> np.ndarray:
        cmd = rng.uniform(self.ranges[:, 0], self.ranges[:, 1], (n, 3))
        # Tiny planar commands are indistinguishable from standing; make them exact zeros.
        cmd[np.linalg.norm(cmd[:, :2], axis=1) < MOVING_THRESHOLD, :2] = 0.0
        if self.turn_in_place_probability:  # no draw when off: the default's stream stays as it was
            cmd[rng.uniform(size=n) < self.turn_in_place_probability, :2] = 0.0
        cmd[rng.uniform(size=n) < self.zero_command_probability] = 0.0
        return cmd

    def _resample_time(self, rng: np.random.Generator, n: int) -> np.ndarray:
        return self.resample_seconds * rng.uniform(0.8, 1.2, n)

    def set_command(self, env_id: int, command: np.ndarray) -> None:
        """An operator's velocity command ``(vx, vy, yaw rate)`` for environment ``env_id``
        (it holds until the next resampling)."""
        self._set_commands(env_id, np.asarray(command, dtype=np.float64))

    def _set_commands(self, ids: np.ndarray | int, commands: np.ndarray) -> None:
        self.command[ids] = commands
        self.moving[ids] = (np.abs(commands) > MOVING_THRESHOLD).any(axis=-1)

    def reset_task(self, env_id: int, model: mujoco.MjModel, data: mujoco.MjData, rng: np.random.Generator) -> None:
        self._set_commands(env_id, self.sample_commands(rng, 1)[0])
        self.time_to_resample[env_id] = self._resample_time(rng, 1)[0]
        self._error_sum[env_id] = 0.0
        self._steps[env_id] = 0.0
        self.gait_stats.reset(env_id)

    def reference_twist(self) -> np.ndarray:
        return self.command

    def after_step(self, phys: PhysicsBatch, rng: BatchRng) -> None:
        self.advance_reference()  # with the command that was just acted on
        self.time_to_resample -= self.control_dt
        due = np.flatnonzero(self.time_to_resample <= 0.0)
        if len(due):
            self._set_commands(due, draw_rows(rng, due, self.sample_commands))
            self.time_to_resample[due] = draw_rows(rng, due, self._resample_time)

    # -- observation ---------------------------------------------------------------------
    def observation_blocks(self, phys: PhysicsBatch) -> dict[str, np.ndarray]:
        return {**super().observation_blocks(phys), "command": self.command}

    # -- reward --------------------------------------------------------------------------
    def evaluate(self, phys: PhysicsBatch, action: np.ndarray) -> StepResult:
        st = self.base_state(phys)
        fell = self.fallen(st, phys)
        lin_err_sq = rewards.squared_norm(self.command[:, :2] - st.lin_vel[:, :2])
        yaw_err = self.command[:, 2] - st.ang_vel[:, 2]
        terms = self.locomotion_terms(st, phys, action, fell, self.moving)
        terms["tracking_lin_vel"] = rewards.tracking(lin_err_sq)
        terms["tracking_ang_vel"] = rewards.tracking(yaw_err**2)
        vel_error = np.sqrt(lin_err_sq)
        self._error_sum += vel_error
        self._steps += 1
        success = (self._error_sum / self._steps < self.success_error) & ~fell
        torque = phys.sensordata[:, self.torque_idx]
        gait = self.gait_stats.update(
            st.pos[:, 2], np.abs(torque * st.joint_vel).sum(axis=1), np.linalg.norm(st.lin_vel[:, :2], axis=1),
            torque[:, 2::3], phys.sensordata[:, self.foot_pos_idx].reshape(-1, 4, 3)[:, :, 2] - c.FOOT_RADIUS,
            self.air.last_contact, self.moving,  # this step's contacts, read once by locomotion_terms
        )
        return StepResult(
            reward=self.weighted_sum(terms),
            terminated=fell,
            success=success,
            metrics={"vel_tracking_error": vel_error, "yaw_rate_error": np.abs(yaw_err), "fell": fell.astype(float),
                     **gait},
        )

    def task_state(self, env_id: int) -> dict[str, Any]:
        return {"command": self.command[env_id].round(4).tolist()}
