"""Captions of simulator states, per task: what a person would say about the frame.

Each caption function takes the task and the physics of the whole batch and returns,
per environment, a caption, a ground-truth success label (the task's own success
criterion where it is a per-frame property) and a scalar "progress" (higher is
closer to the goal) used to order states in the evaluation plots.

The captions are the training data of ``sim2real reward finetune-clip`` and the
natural prompts of the reward: the goal caption of a task is the sentence its
successful frames are labelled with (``GOAL_PROMPTS``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from sim2real.errors import ConfigError


@dataclass
class Captions:
    """Per-environment labels of one batch of states."""

    text: list[str]
    """Caption of each environment's frame."""
    success: np.ndarray
    """Ground-truth success label per environment (bool)."""
    progress: np.ndarray
    """Higher is closer to the goal (e.g. minus the distance), per environment."""
    state: dict[str, np.ndarray] = field(default_factory=dict)
    """Simulator state a reward audit groups failures by, per environment (first axis):
    for reach ``target_rel_ee`` ``[B, 3]``, ``target_pos`` ``[B, 3]`` and ``ee_tilt_deg``
    ``[B]``; empty for tasks that record none."""


def _pick(values: np.ndarray, bins: list[tuple[float, str]], last: str) -> list[str]:
    """``bins`` are ``(upper bound, caption)`` in increasing order; ``last`` above all."""
    out = []
    for v in values:
        out.append(next((text for bound, text in bins if v < bound), last))
    return out


# -- arm ---------------------------------------------------------------------------
# Seven distance bands: with only "near" and "far" beyond 8 cm, the first model's
# reward was flat beyond about 15 cm and PPO stalled at about 20 cm (docs/vlm_rewards.md).
REACH_TEMPLATES = [
    (0.03, "the gripper touches the {color} ball"),
    (0.06, "the gripper is very close to the {color} ball"),
    (0.10, "the gripper is close to the {color} ball"),
    (0.16, "the gripper is near the {color} ball"),
    (0.25, "the gripper is a short way from the {color} ball"),
    (0.35, "the gripper is far from the {color} ball"),
]
REACH_FAR_TEMPLATE = "the gripper is very far from the {color} ball"
"""The bands' sentences, naming the target's colour (ArmReach's ``target_colors``)."""
REACH_BINS = [(bound, text.format(color="green")) for bound, text in REACH_TEMPLATES]
REACH_FAR = REACH_FAR_TEMPLATE.format(color="green")
"""The sentences of the default green target."""


def arm_reach(task: Any, phys: Any) -> Captions:
    """Distance bands, naming the target's colour this episode (``green`` unless the task's
    ``target_colors`` option draws others)."""
    from sim2real.sim.arm.reach import SUCCESS_RADIUS

    offset = task.target_rel_ee(phys)
    dist = np.linalg.norm(offset, axis=1)
    text = [
        template.format(color=task.target_color(i))
        for i, template in enumerate(_pick(dist, REACH_TEMPLATES, REACH_FAR_TEMPLATE))
    ]
    quat = task.ee_quat(phys)  # (w, x, y, z)
    # World z of the gripper's approach axis is 1 - 2 (x^2 + y^2); it points straight down
    # (-1) in the arm's home pose, so the tilt is the angle from straight down.
    down = -(1.0 - 2.0 * (quat[:, 1] ** 2 + quat[:, 2] ** 2))
    state = {
        "target_rel_ee": offset.copy(),
        "target_pos": np.asarray(phys.mocap_pos[:, 0], dtype=np.float64).copy(),
        "ee_tilt_deg": np.degrees(np.arccos(np.clip(down, -1.0, 1.0))),
    }
    return Captions(text, dist < SUCCESS_RADIUS, -dist, state)


# -- drone -------------------------------------------------------------------------
HOVER_BINS = [
    (0.1, "the drone hovers at the green marker"),
    (0.3, "the drone flies close to the green marker"),
]
HOVER_FAR = "the drone is far from the green marker"
HOVER_GROUND = "the drone sits on the ground"


def drone_hover(task: Any, phys: Any) -> Captions:
    pos = phys.qpos[:, :3]
    error = np.linalg.norm(task.target - pos, axis=1)
    text = _pick(error, HOVER_BINS, HOVER_FAR)
    text = [HOVER_GROUND if z < 0.1 and e >= 0.3 else t for t, z, e in zip(text, pos[:, 2], error)]
    return Captions(text, error < task.tolerance, -error)


# -- quadruped ---------------------------------------------------------------------
def quadruped_posture(task: Any, phys: Any) -> Captions:
    quat = phys.qpos[:, 3:7]  # free joint orientation (w, x, y, z)
    up_z = 1.0 - 2.0 * (quat[:, 1] ** 2 + quat[:, 2] ** 2)  # world z of the body's up axis
    height = phys.qpos[:, 2]
    text = []
    for u, h in zip(up_z, height):
        if u < 0.4:
            text.append("the robot dog is lying on its side")
        elif h < 0.18:
            text.append("the robot dog is lying on the ground")
        elif u > 0.9:
            text.append("the robot dog stands upright")
        else:
            text.append("the robot dog is tilted")
    return Captions(text, (up_z > 0.9) & (height >= 0.18), up_z)


CAPTIONERS: dict[str, Callable[[Any, Any], Captions]] = {
    "sim2real/ArmReach-v0": arm_reach,
    "sim2real/DroneHover-v0": drone_hover,
    "sim2real/QuadrupedVelocity-v0": quadruped_posture,
}
"""Gymnasium id -> caption function (one line per captioned task)."""

GOAL_PROMPTS: dict[str, tuple[str, str]] = {
    "sim2real/ArmReach-v0": ("the gripper touches the green ball", "the gripper is very far from the green ball"),
    "sim2real/DroneHover-v0": ("the drone hovers at the green marker", "the drone is far from the green marker"),
    "sim2real/QuadrupedVelocity-v0": ("the robot dog stands upright", "the robot dog is lying on its side"),
}
"""Gymnasium id -> (goal prompt, baseline prompt) matching the captions above."""


def captioner(task_id: str) -> Callable[[Any, Any], Captions]:
    """The caption function of a task (Gymnasium id or any registered name)."""
    from sim2real.sim import REGISTRY
    from sim2real.sim.core.registry import gym_id

    gid = gym_id(REGISTRY.get(task_id))
    if gid not in CAPTIONERS:
        raise ConfigError("task", f"no captions for {gid}; captioned tasks: {sorted(CAPTIONERS)}")
    return CAPTIONERS[gid]
