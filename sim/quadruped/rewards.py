"""Locomotion reward terms in the legged_gym / MuJoCo Playground style.

Every function is batched (leading dimension ``B``) and returns the *unweighted*
term; tasks multiply by their weights and by the control period, so weights are
per second and do not change with the policy rate (legged_gym's convention).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from sim2real.sim.core.errors import ConfigError

TRACKING_SIGMA = 0.25
"""Width of the exponential tracking kernels (legged_gym's ``tracking_sigma``)."""

LOCOMOTION_WEIGHTS: dict[str, float] = {
    # rewards
    "tracking_lin_vel": 1.0,
    "tracking_ang_vel": 0.5,
    "feet_air_time": 1.0,
    # penalties
    "lin_vel_z": -2.0,
    "ang_vel_xy": -0.05,
    "orientation": -1.0,
    "torques": -2e-4,
    "dof_acc": -2.5e-7,
    "action_rate": -0.01,
    "dof_pos_limits": -10.0,
    "dof_vel_limits": -1.0,
    "feet_slip": -0.1,
    "stand_still": -0.5,
    "base_height": 0.0,
    "termination": -50.0,
}
"""Default weights of the locomotion tasks. Scaled by ``control_dt`` in the sum, so the
termination penalty of -50 costs 1.0 per fall, as in Playground's Go1 joystick.
``base_height`` is off by default; the tall-gait recipe sets :data:`NATURAL_GAIT_WEIGHT`."""

NATURAL_GAIT_WEIGHT = -100.0
"""Weight of ``base_height`` in ``policies/configs/recipes/quadruped_velocity_tall.yaml``.
Without it every policy walked crouched, the trunk at 0.18-0.23 m against 0.28 m standing
(issue 45): crouching is steadier, so the termination penalty alone pays for it. At -100 a
7 cm deficit costs 0.49 per second, half the tracking reward; the last centimetre 0.01.
Not the default: the tall policy it trained was less robust held out (docs/transfer.md)."""


def tracking(error_sq: np.ndarray, sigma: float = TRACKING_SIGMA) -> np.ndarray:
    """``exp(-err^2 / sigma)``: 1 for perfect tracking, smooth everywhere."""
    return np.exp(-error_sq / sigma)


def squared_norm(x: np.ndarray) -> np.ndarray:
    return (x * x).sum(axis=-1)


def feet_air_time(
    air_time: np.ndarray, first_contact: np.ndarray, moving: np.ndarray, target: float = 0.5
) -> np.ndarray:
    """legged_gym's air-time bonus: at touchdown, reward swings longer than ``target``
    seconds (and penalise shorter ones); only while a motion is commanded."""
    return ((air_time - target) * first_contact).sum(axis=-1) * moving


def height_deficit(height: np.ndarray, target: np.ndarray | float) -> np.ndarray:
    """Squared shortfall of the trunk height below ``target`` (m); standing taller is
    free (the legs cannot reach much past their standing length, and a hop pays
    ``lin_vel_z``). legged_gym's ``base_height`` term is two-sided."""
    return np.square(np.maximum(np.asarray(target) - height, 0.0))


def feet_slip(contact: np.ndarray, foot_vel_xy: np.ndarray) -> np.ndarray:
    """Squared horizontal speed of feet that are in contact, ``foot_vel_xy [B, 4, 2]``."""
    return (contact * (foot_vel_xy * foot_vel_xy).sum(axis=-1)).sum(axis=-1)


class AirTimeTracker:
    """Per-foot swing timers (legged_gym's ``feet_air_time`` bookkeeping).

    Contacts are OR-ed with the previous step's, because a foot touching down
    can bounce off for one step; ``first_contact`` marks touchdowns.
    """

    def __init__(self, num_envs: int, num_feet: int = 4) -> None:
        self.air_time = np.zeros((num_envs, num_feet))
        self.last_contact = np.zeros((num_envs, num_feet), dtype=bool)

    def reset(self, env_id: int) -> None:
        self.air_time[env_id] = 0.0
        self.last_contact[env_id] = False

    def update(self, contact: np.ndarray, dt: float) -> tuple[np.ndarray, np.ndarray]:
        """Advance by ``dt``; returns ``(air_time_at_touchdown, first_contact)``."""
        filtered = contact | self.last_contact
        self.last_contact = contact.copy()
        first_contact = (self.air_time > 0.0) & filtered
        self.air_time += dt
        air_at_touchdown = self.air_time.copy()
        self.air_time *= ~filtered
        return air_at_touchdown, first_contact


class RewardWeights(dict[str, float]):
    """A task's per-second weights: its defaults with a config's ``reward_weights``
    over them (unknown terms and non-finite weights refused), and the step reward.

    ``only_positive``: clip each step's sum of every term but ``termination`` at 0, as
    legged_gym does. Early in training a noisy policy's penalties outweigh its tracking
    rewards, and with negative steps PPO learns that falling at once is the best return;
    the termination penalty is added after the clip, so falls still cost."""

    def __init__(self, defaults: Mapping[str, float], overrides: Mapping[str, Any] | None = None,
                 only_positive: bool = True) -> None:
        super().__init__(defaults)
        if not isinstance(only_positive, bool):
            raise ConfigError("only_positive_rewards", f"must be true or false, got {only_positive!r}")
        self.only_positive = only_positive
        for key, value in (overrides or {}).items():
            if key not in self:
                raise ConfigError(f"reward_weights.{key}", f"unknown term; known: {sorted(self)}")
            try:
                weight = float(value)
            except (TypeError, ValueError):
                raise ConfigError(f"reward_weights.{key}", f"must be a number, got {value!r}") from None
            if not np.isfinite(weight):
                raise ConfigError(f"reward_weights.{key}", f"must be finite, got {value}")
            self[key] = weight
        self._weighted: tuple[float, list[str], np.ndarray] | None = None

    def __setitem__(self, key: str, value: float) -> None:
        super().__setitem__(key, value)
        self._weighted = None

    def step_reward(self, terms: Mapping[str, np.ndarray], dt: float) -> np.ndarray:
        """``dt * sum(weight * term)`` over the weighted terms present (with
        ``only_positive``, the sum without ``termination`` clipped at 0 first)."""
        if self._weighted is None or self._weighted[0] != dt:  # kept until a weight changes
            names = [n for n, w in self.items() if w and n in terms and n != "termination"]
            self._weighted = (dt, names, np.array([self[n] for n in names]) * dt)
        _, names, weights = self._weighted
        reward = weights @ np.stack([terms[n] for n in names])
        if self.only_positive:
            reward = np.maximum(reward, 0.0)
        if "termination" in terms:
            reward = reward + self.get("termination", 0.0) * dt * terms["termination"]
        return reward
