"""What an imported policy expects, declared: its observation terms with their scales,
its joint order by name, default pose, action scale and clips, servo gains and timing.

Readers (one module per foreign format) fill a :class:`ForeignSpec`; the adapter
(:mod:`~sim2real.policies.importers.adapter`) turns it into the affine maps between our
robot's observation and action and the policy's; the metadata of the imported policy
records it (``adapter``), so evaluation, deployment and the pre-flight check all read
one description.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from sim2real.sim.core.errors import ConfigError
from sim2real.sim.quadruped import constants as c

TERM_SIZES: dict[str, int] = {
    "lin_vel": 3,
    "ang_vel": 3,
    "gravity_vec": 3,
    "commands": 3,
    "dof_pos": c.NUM_JOINTS,
    "dof_vel": c.NUM_JOINTS,
    "actions": c.NUM_JOINTS,
}
"""The observation terms legged_gym, Isaac Lab and rl_sar policies read, and their sizes:
base linear and angular velocity (body frame), gravity in the body frame, the commanded
(vx, vy, yaw rate), joint positions relative to the policy's default pose, joint
velocities, and the policy's previous raw action."""

NO_CLIP = 1e6
"""Stands for "not clipped" (Isaac Lab's clip null)."""


UNMEASURED = {"lin_vel": "base linear velocity: simulator truth in simulation; on a Go2 the backend's leg-kinematics "
                        "and IMU estimate (sim/quadruped/estimator.py)"}
"""Terms a robot cannot read from its sensors directly (reported by the pre-flight check)."""


@dataclass
class ForeignSpec:
    """A foreign quadruped policy's conventions (all joint vectors in the policy's order)."""

    source_format: str
    """The reader that produced it (``rl_sar``, ...)."""
    policy_file: Path
    """The TorchScript file."""
    terms: list[str]
    """Observation terms in order (keys of :data:`TERM_SIZES`)."""
    scales: dict[str, np.ndarray]
    """Per-term multipliers (broadcast to the term's size)."""
    joint_names: list[str]
    """The policy's joint order, by our robot's joint names."""
    default_pos: np.ndarray
    """Default joint angles (rad): observations are relative to them, actions added to them."""
    action_scale: np.ndarray
    """Joint target = default_pos + action_scale * action."""
    action_clip: tuple[np.ndarray, np.ndarray]
    """Raw actions are clipped to these before scaling."""
    obs_clip: float | np.ndarray
    """Each frame of the assembled observation is clipped to +-obs_clip (one value, or one
    per value of a frame: Isaac Lab clips term by term)."""
    kp: np.ndarray
    """Servo stiffness (Nm/rad) the policy was trained with."""
    kd: np.ndarray
    """Servo damping (Nm s/rad)."""
    control_dt: float
    """Policy period (s): physics dt times decimation."""
    notes: list[str] = field(default_factory=list)
    """What the reader assumed, for the metadata."""
    history: list[int] = field(default_factory=lambda: [0])
    """The frames the policy reads, in its order: 0 is the present observation, k the one
    it was given k control steps ago (HIMLoco: ``[0, 1, 2, 3, 4, 5]``; Isaac Lab's
    history_length 3: ``[2, 1, 0]``, oldest first)."""
    history_priority: str = "time"
    """How frames and terms interleave: ``time`` (frame by frame, each frame all terms;
    rl_sar's and HIMLoco's) or ``term`` (term by term, each term all frames; Isaac Lab's)."""

    def __post_init__(self) -> None:
        unknown = [t for t in self.terms if t not in TERM_SIZES]
        if unknown:
            raise ConfigError("observations", f"unsupported term(s) {unknown}; supported: {list(TERM_SIZES)}")
        if sorted(self.joint_names) != sorted(c.JOINT_NAMES):
            raise ConfigError("joint_names", f"{self.joint_names} are not the quadruped's 12 joints "
                                             f"{list(c.JOINT_NAMES)} (each once)")
        for name in ("default_pos", "action_scale", "kp", "kd"):
            value = np.asarray(getattr(self, name), dtype=float)
            if value.shape != (c.NUM_JOINTS,) or not np.all(np.isfinite(value)):
                raise ConfigError(name, f"needs {c.NUM_JOINTS} finite values, got {getattr(self, name)!r}")
            setattr(self, name, value)
        if np.any(self.kp <= 0) or np.any(self.kd < 0) or np.any(self.action_scale == 0):
            raise ConfigError("rl_kp/rl_kd/action_scale", "stiffness must be > 0, damping >= 0, action scale non-zero")
        ours = np.array([c.JOINT_NAMES.index(n) for n in self.joint_names])
        low, high = c.joint_ranges()[ours].T
        outside = [n for n, q, lo, hi in zip(self.joint_names, self.default_pos, low, high, strict=True)
                   if not lo <= q <= hi]
        if outside:  # a sign or order mistake usually lands a default angle outside its joint's range
            raise ConfigError("default_dof_pos", f"outside the joint range for {outside}: a sign or order mistake?")
        for term in self.terms:
            scale = np.broadcast_to(np.asarray(self.scales.get(term, 1.0), dtype=float), (TERM_SIZES[term],))
            if not np.all(np.isfinite(scale)) or np.any(scale == 0):
                raise ConfigError(f"{term} scale", f"must be finite and non-zero, got {self.scales.get(term)!r}")
            self.scales[term] = scale.copy()
        clip = np.asarray(self.obs_clip, dtype=float)
        if clip.ndim > 1 or (clip.ndim == 1 and clip.shape != (self.frame_size,)) or not np.all(clip > 0):
            raise ConfigError("clip_obs", f"must be > 0, one value or {self.frame_size} (one per value of a frame)")
        self.obs_clip = np.broadcast_to(clip, (self.frame_size,)).copy()
        if not self.control_dt > 0:
            raise ConfigError("dt", "must be > 0")
        if not self.history or len(set(self.history)) != len(self.history) or min(self.history) < 0 \
                or 0 not in self.history or max(self.history) > 50:
            raise ConfigError("observations_history", f"{self.history}: frames must be distinct steps in 0..50 "
                                                      "including 0 (the present)")
        if self.history_priority not in ("time", "term"):
            raise ConfigError("observations_history_priority", f"{self.history_priority!r} is not time or term")

    @property
    def frame_size(self) -> int:
        """Values in one frame (all terms once)."""
        return sum(TERM_SIZES[t] for t in self.terms)

    @property
    def obs_size(self) -> int:
        """Values the network reads (every frame)."""
        return self.frame_size * len(self.history)

    @property
    def history_steps(self) -> int:
        """How many past steps our task must remember for it."""
        return max(self.history)

    def describe(self) -> dict[str, Any]:
        """The declarative adapter as JSON (the imported policy's metadata ``adapter``)."""
        out: dict[str, Any] = {}
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            if isinstance(v, np.ndarray):
                v = v.tolist()
            elif isinstance(v, dict):
                v = {k: np.asarray(x).tolist() for k, x in v.items()}
            elif isinstance(v, tuple):
                v = [np.asarray(x).tolist() for x in v]
            elif isinstance(v, Path):
                v = v.name
            out[f.name] = v
        out["unmeasured_terms"] = {t: UNMEASURED[t] for t in self.terms if t in UNMEASURED}
        return out


def parse_joint_order(value: str | None, default: list[str]) -> list[str]:
    """``--joint-order``: comma-separated joint names, or a file with one per line (``#`` comments)."""
    if value is None:
        return list(default)
    if Path(value).is_file():
        names = [line.split("#")[0].strip() for line in Path(value).read_text().splitlines()]
    else:
        names = value.split(",")
    names = [n.strip() for n in names if n.strip()]
    if sorted(names) != sorted(c.JOINT_NAMES):
        raise ConfigError("--joint-order", f"{names} are not the quadruped's 12 joints {list(c.JOINT_NAMES)} "
                                           "(each once)")
    return names


def read_yaml_mapping(path: Path, what: str, loader: Any = None) -> dict[str, Any]:
    """The YAML mapping in ``path`` (``loader``: default yaml's SafeLoader), or one line
    saying why not; ``what`` names the expected file in that line."""
    import yaml

    try:
        data = yaml.load(path.read_text(), Loader=loader or yaml.SafeLoader)  # safe loaders build plain data only
    except (OSError, yaml.YAMLError) as exc:
        raise ConfigError(str(path), f"is not readable YAML ({' '.join(str(exc).split())})") from None
    if not isinstance(data, dict):
        raise ConfigError(str(path), f"is not {what} (a mapping at the top)")
    return data


def finite_number(value: Any, what: str) -> float:
    """``value`` as a float, or one line naming the setting ``what``."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not np.isfinite(value):
        raise ConfigError(what, f"needs a finite number, got {value!r}")
    return float(value)
