"""Pure pursuit along the planner's waypoints: the body twist and crouch that the gait
reference steps for in the waypoints task (the classical half of the hierarchy's
lower level; the learned follower adds its residual on top).

A pure function of what the robot observes, the waypoints relative to its heading
frame, so the deployed policy node computes exactly what the simulator did.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sim2real.sim.quadruped.planner import WALK_HEIGHT

MAX_CROUCH = 0.14
"""Deepest crouch (m) the reference asks for; the lowest ceiling (0.21 m) needs 0.13."""


@dataclass(frozen=True)
class PursuitGains:
    """How the reference steers towards the waypoints."""

    speed: float = 0.5
    """Forward speed (m/s) when facing the aim point."""
    crouched_speed: float = 0.3
    """Forward speed (m/s) while crouching (short strides keep the low trunk level)."""
    lookahead: float = 0.45
    """Distance (m) to the current waypoint below which the aim moves to the next one."""
    yaw_gain: float = 2.0
    """Yaw rate (rad/s) per radian of heading error."""
    max_yaw_rate: float = 1.0
    """rad/s."""
    lateral_gain: float = 0.8
    """Sideways speed (m/s) per metre that the aim point lies to the side (keeps a narrow
    passage's middle without turning the trunk across it)."""
    max_lateral: float = 0.2
    """m/s."""


def pursue(rel_xy: np.ndarray, allowed: np.ndarray, done: np.ndarray,
           gains: PursuitGains = PursuitGains()) -> tuple[np.ndarray, np.ndarray]:
    """The body twist ``[B, 3]`` (vx, vy, yaw rate) and crouch ``[B]`` (m) for the
    waypoints ``rel_xy [B, k, 2]`` (in the heading frame, current first, k >= 2) with
    their allowed trunk heights ``allowed [B, k]`` (m above the floor: the planner's);
    ``done [B]``: at the goal (stand still)."""
    current, following = rel_xy[:, 0], rel_xy[:, 1]
    near = np.linalg.norm(current, axis=1) < gains.lookahead
    aim = np.where(near[:, None], following, current)
    heading_error = np.arctan2(aim[:, 1], aim[:, 0])
    # The lower of the next two waypoints' heights: crouch before the trunk is under it.
    crouch = np.clip(WALK_HEIGHT - np.minimum(allowed[:, 0], allowed[:, 1]), 0.0, MAX_CROUCH)
    speed = np.where(crouch > 0.02, gains.crouched_speed, gains.speed)
    twist = np.stack([
        speed * np.clip(np.cos(heading_error), 0.0, 1.0),
        np.clip(gains.lateral_gain * aim[:, 1], -gains.max_lateral, gains.max_lateral),
        np.clip(gains.yaw_gain * heading_error, -gains.max_yaw_rate, gains.max_yaw_rate),
    ], axis=1)
    twist[done] = 0.0
    return twist, np.where(done, 0.0, crouch)
