"""A trot reference for residual locomotion policies (policies modulating a
trajectory generator, Iscen et al., "PMTG", CoRL 2018).

In the ``gait_residual`` action mode the servo target is
``q_default + reference(phase, command) + action_scale * action``: the reference
below steps the diagonal pairs (FR+RL, FL+RR) in antiphase and places the feet
for the commanded body twist, open loop; the policy learns the corrections
(balance, foot placement under disturbances, the actual tracking). Learning to
trot from joint targets alone takes tens of millions of samples (legged_gym's
GPU budget); the reference removes the search for a gait.

The reference is a pure function of its phase and the command, so the deployed
policy node runs the same code with the same clock (one phase advance per
control step) and the observation carries the clock as ``(sin, cos)``.
"""

from __future__ import annotations

import numpy as np

from sim2real.sim.quadruped import constants as c

PAIR_PHASE = np.array([0.0, 0.5, 0.5, 0.0])
"""Cycle offset of FR, FL, RR, RL: diagonal pairs in antiphase (a trot)."""
_FOOT_Y = np.array([-1.0, 1.0, -1.0, 1.0]) * (c.HIP_OFFSET[1] + c.THIGH_OFFSET)
_FOOT_X = np.array([1.0, 1.0, -1.0, -1.0]) * c.HIP_OFFSET[0]
KNEE_LOAD_SHIFT = 0.5
"""Share of the standing knee offset moved from swing to stance legs while trotting.
The full shift (stance legs at twice the standing offset) lands the feet too hard
and the open-loop trot fell in 1-5 of 6 commanded runs; 0.5 fell in none (3 Hz,
8 cm steps; measured with zero residual)."""
MAX_STRIDE = 0.18
"""Largest foot excursion (m) over a stance phase; beyond it the legs' IK saturates."""


def leg_ik(x: np.ndarray, z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Thigh and calf angles placing the foot at ``(x, z)`` from the thigh joint in
    the leg's sagittal plane (x forward, z up), knee pointing backwards.

    With equal thigh and calf lengths ``l`` the hip-foot distance is
    ``2 l cos(knee_bend / 2)`` and the thigh sits half the bend behind the foot ray.
    """
    length = c.THIGH_LENGTH
    d = np.clip(np.hypot(x, z), 1e-3, 2 * length - 1e-6)
    bend = 2.0 * np.arccos(d / (2 * length))
    ray = np.arctan2(-x, -z)  # angle of the hip-foot ray from straight down, positive backwards
    return ray + bend / 2, -bend


class TrotReference:
    """Per-env trot clock and the joint offsets it asks for.

    Args:
        num_envs: Batch size.
        frequency_hz: Gait cycles per second (each foot swings once per cycle, for
            half of it).
        step_height: Peak foot lift (m) at full amplitude.
        blend_seconds: Time to fade stepping in when a motion is commanded and out
            when the command returns to standing (the feet then stand still).
        knee_load_shift: Share of the standing knee offset moved from swing to stance
            legs while stepping (:data:`KNEE_LOAD_SHIFT`; 0 keeps the standing offset).
    """

    def __init__(
        self, num_envs: int, frequency_hz: float = 3.0, step_height: float = 0.08, blend_seconds: float = 0.25,
        knee_load_shift: float = KNEE_LOAD_SHIFT,
    ) -> None:
        if not 0.5 <= frequency_hz <= 5.0 or not 0.0 <= step_height <= 0.12 or blend_seconds <= 0:
            raise ValueError("frequency_hz in [0.5, 5], step_height in [0, 0.12] m and blend_seconds > 0 required")
        self.frequency = float(frequency_hz)
        self.step_height = float(step_height)
        self.blend_rate = 1.0 / float(blend_seconds)
        self.knee_load_shift = float(knee_load_shift)
        self.phase = np.zeros(num_envs)
        """Cycle fraction in [0, 1) of the FR/RL pair."""
        self.amplitude = np.zeros(num_envs)
        """0 (standing) to 1 (stepping)."""
        self.stance_height = 2 * c.THIGH_LENGTH * np.cos(c.DEFAULT_POSE[1])
        self.knee_offset = c.static_knee_offset()

    def reset(self, env_id: int | np.ndarray, phase: float | np.ndarray = 0.0) -> None:
        self.phase[env_id] = phase
        self.amplitude[env_id] = 0.0

    def clock(self) -> np.ndarray:
        """``[B, 2]``: ``(sin, cos)`` of the phase, the policy's view of the clock."""
        angle = 2 * np.pi * self.phase
        return np.stack([np.sin(angle), np.cos(angle)], axis=1)

    def advance(self, dt: float, moving: np.ndarray) -> None:
        """One control period: run the clock and fade stepping towards ``moving``."""
        self.phase = (self.phase + self.frequency * dt) % 1.0
        step = self.blend_rate * dt
        self.amplitude = np.clip(self.amplitude + np.where(moving, step, -step), 0.0, 1.0)

    def joint_offsets(self, command: np.ndarray, crouch: np.ndarray | None = None) -> np.ndarray:
        """``[B, 12]`` joint targets relative to the default pose for the body twist
        ``command [B, 3]`` = (vx, vy, yaw rate), at the current phase, with the hips
        ``crouch [B]`` metres lower than standing (none: standing height).

        Each foot moves, during its stance half-cycle, opposite to the ground speed
        that the commanded twist gives its hip, then swings back on a sine arc; the
        knee offsets keep the stance height under the robot's weight.
        """
        cycle = (self.phase[:, None] + PAIR_PHASE[None]) % 1.0  # [B, 4]
        swing = cycle < 0.5
        s = np.where(swing, cycle * 2.0, cycle * 2.0 - 1.0)  # progress within the half cycle
        # Hip ground velocity in the body frame: v + w x r.
        vx = command[:, 0:1] - command[:, 2:3] * _FOOT_Y[None]
        vy = command[:, 1:2] + command[:, 2:3] * _FOOT_X[None]
        stance_time = 0.5 / self.frequency
        amp = self.amplitude[:, None]
        sx = np.clip(vx * stance_time, -MAX_STRIDE, MAX_STRIDE) * amp
        sy = np.clip(vy * stance_time, -MAX_STRIDE, MAX_STRIDE) * amp
        # Stance: from +stride/2 to -stride/2; swing: back on a cosine, lifted on a sine.
        along = np.where(swing, -0.5 * np.cos(np.pi * s), 0.5 - s)
        x, y = sx * along, sy * along
        stance = self.stance_height if crouch is None else self.stance_height - crouch[:, None]
        z = -stance + np.where(swing, self.step_height * np.sin(np.pi * s), 0.0) * amp
        thigh, calf = leg_ik(x, z)
        hip = np.arcsin(np.clip(y / stance, -0.5, 0.5))  # hip roll about +x moves the foot to +y
        q = np.stack([hip, thigh, calf], axis=2)
        # In a trot two legs carry the weight: stance knees need more than the standing
        # offset against the servo's sag, swinging ones (light calves) less.
        load = 1.0 + self.knee_load_shift * amp * np.where(swing, -1.0, 1.0)  # [B, 4]
        q = q + load[:, :, None] * self.knee_offset.reshape(4, 3)[None]
        return q.reshape(-1, c.NUM_JOINTS) - c.DEFAULT_POSE
