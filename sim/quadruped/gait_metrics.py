"""What a gait looks like and what it costs, measured one way wherever a policy walks:
in the training task (``sim2real eval``) and in a foreign model (``sim2real sim2sim``).

- trunk height while walking (a crouched gait loads the knees and scrapes on steps);
- foot clearance: the mean peak height of a foot's lowest point per swing;
- cost of transport: mechanical power over ``m g v`` (dimensionless; a Go2-class trot
  is around 0.5-1 in simulation with no motor losses);
- the knee motors' RMS torque, also as a share of their peak torque (Unitree publishes
  no continuous rating for the Go2's knee).
"""

from __future__ import annotations

import numpy as np

from sim2real.sim.quadruped import constants as c

MIN_SWING_STEPS = 2
"""Control steps (40 ms at 50 Hz) a foot must be off the ground for its lift to count as a swing."""
GRAVITY = 9.81


def cost_of_transport(power_w: np.ndarray | float, mass_kg: float, speed_m_s: np.ndarray | float) -> np.ndarray:
    """``P / (m g v)``; 0 where the robot does not move (no transport to cost)."""
    speed = np.asarray(speed_m_s, dtype=float)
    moving = speed > 1e-3
    return np.where(moving, np.asarray(power_w) / (mass_kg * GRAVITY * np.where(moving, speed, 1.0)), 0.0)


class SwingPeaks:
    """Peak foot height per swing for a batch: a foot off the ground for at least
    :data:`MIN_SWING_STEPS` control steps between two contacts (shorter is contact chatter)."""

    def __init__(self, num_envs: int) -> None:
        self.peak = np.zeros((num_envs, 4))
        self.airborne = np.zeros((num_envs, 4), dtype=int)
        self.total = np.zeros(num_envs)
        self.count = np.zeros(num_envs, dtype=int)

    def reset(self, env_id: int | np.ndarray) -> None:
        self.peak[env_id] = 0.0
        self.airborne[env_id] = 0
        self.total[env_id] = 0.0
        self.count[env_id] = 0

    def update(self, height: np.ndarray, contact: np.ndarray, measuring: np.ndarray | bool) -> None:
        """``height``/``contact [B, 4]``: each foot's lowest point above the ground and
        whether it touches; swings ending in a ``measuring`` step count."""
        self.peak = np.where(self.airborne > 0, np.maximum(self.peak, height), height)
        landed = (self.airborne >= MIN_SWING_STEPS) & contact & np.reshape(measuring, (-1, 1))
        self.total += (self.peak * landed).sum(axis=1)
        self.count += landed.sum(axis=1)
        self.airborne = np.where(contact, 0, self.airborne + 1)

    def mean(self) -> np.ndarray:
        """``[B]`` mean peak so far (0 where no swing ended)."""
        return self.total / np.maximum(self.count, 1)


class GaitStats:
    """Running per-episode gait figures of a batch over the steps where a motion is
    commanded; :meth:`update` returns them as the task's per-step metrics, so an
    episode's final value is its figure (``metrics_final`` in ``sim2real eval``)."""

    NAMES = ("walking_trunk_height", "foot_clearance", "cost_of_transport", "knee_torque_rms", "knee_rms_of_peak")

    def __init__(self, num_envs: int, mass_kg: float = c.TOTAL_MASS) -> None:
        self.mass = float(mass_kg)
        self.swings = SwingPeaks(num_envs)
        self.steps = np.zeros(num_envs)
        self.height = np.zeros(num_envs)
        self.power = np.zeros(num_envs)
        self.speed = np.zeros(num_envs)
        self.knee_sq = np.zeros(num_envs)

    def reset(self, env_id: int | np.ndarray) -> None:
        self.swings.reset(env_id)
        for a in (self.steps, self.height, self.power, self.speed, self.knee_sq):
            a[env_id] = 0.0

    def update(self, trunk_height: np.ndarray, power_w: np.ndarray, speed_m_s: np.ndarray, knee_torque: np.ndarray,
               foot_height: np.ndarray, contact: np.ndarray, moving: np.ndarray) -> dict[str, np.ndarray]:
        """One control step: ``knee_torque [B, 4]`` (N m), ``foot_height``/``contact [B, 4]``,
        ``moving [B]`` (the command asks for motion: only those steps count)."""
        self.swings.update(foot_height, contact, moving)
        w = moving.astype(float)
        self.steps += w
        self.height += w * trunk_height
        self.power += w * power_w
        self.speed += w * speed_m_s
        self.knee_sq += w * (knee_torque * knee_torque).mean(axis=1)
        n = np.maximum(self.steps, 1.0)
        knee_rms = np.sqrt(self.knee_sq / n)
        return {
            # Before the first walking step the trunk's current height stands in (no NaN).
            "walking_trunk_height": np.where(self.steps > 0, self.height / n, trunk_height),
            "foot_clearance": self.swings.mean(),
            "cost_of_transport": cost_of_transport(self.power / n, self.mass, self.speed / n),
            "knee_torque_rms": knee_rms,
            "knee_rms_of_peak": knee_rms / c.CALF_TORQUE,
        }
