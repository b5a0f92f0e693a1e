"""One of our own quadruped policies dressed as a foreign one, for the round-trip tests:
a foreign project's conventions (:class:`Convention`: its joint order, default pose,
action scale, observation scales and gains) and :class:`ForeignNetwork`, which takes the
observation those conventions define, rebuilds ours from it, runs our network and
returns the raw action the foreign pipeline expects.

Written from the foreign semantics alone (not from the importer's adapter), so importing
it back must give our policy again only if the importer reads each format right."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch
from torch import nn

from sim2real.sim.quadruped import constants as c

OUR_ACTION_SCALE = c.ACTION_SCALE
"""The joint_pos scale our policy was trained with (the task's default)."""
OUR_TERMS = ("lin_vel", "ang_vel", "gravity_vec", "commands", "dof_pos", "dof_vel", "actions")
"""Our observation's blocks, in its order, by the foreign terms' names."""
SIZES = {"lin_vel": 3, "ang_vel": 3, "gravity_vec": 3, "commands": 3, "dof_pos": 12, "dof_vel": 12, "actions": 12}


@dataclass
class Convention:
    """What a foreign project's files say about a policy (joint vectors in its order)."""

    joint_names: list[str]
    default_pos: np.ndarray
    action_scale: np.ndarray
    terms: list[str]
    scales: dict[str, np.ndarray] = field(default_factory=dict)
    kp: float = c.KP
    kd: float = 1.0

    def scale(self, term: str) -> np.ndarray:
        return np.broadcast_to(np.asarray(self.scales.get(term, 1.0), dtype=float), (SIZES[term],)).copy()

    @property
    def ours(self) -> np.ndarray:
        """Our joint index of each of its joints."""
        return np.array([c.JOINT_NAMES.index(n) for n in self.joint_names])


# Isaac Gym's order (alphabetical legs FL, FR, RL, RR), legged_gym-style pose and scales.
ISAAC_GYM = Convention(
    joint_names=[f"{leg}_{part}_joint" for leg in ("FL", "FR", "RL", "RR") for part in ("hip", "thigh", "calf")],
    default_pos=np.array([0.1, 0.8, -1.5, -0.1, 0.8, -1.5, 0.1, 1.0, -1.5, -0.1, 1.0, -1.5]),
    action_scale=np.array([0.125, 0.25, 0.25] * 4),
    terms=list(OUR_TERMS),
    scales={"lin_vel": np.full(3, 2.0), "ang_vel": np.full(3, 0.25), "commands": np.array([2.0, 2.0, 0.25]),
            "dof_pos": np.full(12, 1.0), "dof_vel": np.full(12, 0.05)},
)
# Isaac Lab's order (PhysX: joint type by joint type), its terms in another order.
ISAAC_LAB = Convention(
    joint_names=[f"{leg}_{part}_joint" for part in ("hip", "thigh", "calf") for leg in ("FL", "FR", "RL", "RR")],
    default_pos=np.array([0.1, -0.1, 0.1, -0.1, 0.8, 0.8, 1.0, 1.0, -1.5, -1.5, -1.5, -1.5]),
    action_scale=np.full(12, 0.25),
    terms=["lin_vel", "ang_vel", "gravity_vec", "commands", "dof_pos", "dof_vel", "actions"],
    scales={"ang_vel": np.full(3, 0.25), "dof_vel": np.full(12, 0.05)},
)


def _linear(weight: np.ndarray, bias: np.ndarray) -> nn.Linear:
    layer = nn.Linear(weight.shape[1], weight.shape[0])
    with torch.no_grad():
        layer.weight.copy_(torch.as_tensor(weight, dtype=torch.float32))
        layer.bias.copy_(torch.as_tensor(bias, dtype=torch.float32))
    return layer


class ForeignNetwork(nn.Module):
    """Foreign observation -> foreign raw action through ``ours`` (our exported network: our
    observation -> our action in [-1, 1], acting with ``our_scale``). The two conversions are
    linear layers, so the whole is an MLP that exports to ONNX as Isaac Lab's do.

    ``frames`` are the foreign stack's frames in its order (0 the present; ours hold the
    present and then ``max(frames)`` whole past frames, newest first), interleaved frame by
    frame (``time``, rl_sar's) or term by term (``term``, Isaac Lab's)."""

    def __init__(self, ours: nn.Module, conv: Convention, our_scale: float = OUR_ACTION_SCALE,
                 frames: tuple[int, ...] = (0,), priority: str = "time") -> None:
        super().__init__()
        idx, frame = conv.ours, sum(SIZES.values())
        size = frame * len(frames)
        inp, add = np.zeros((size, size)), np.zeros(size)
        offsets = {t: int(sum(SIZES[u] for u in conv.terms[:conv.terms.index(t)])) for t in conv.terms}
        ours_at = {t: int(sum(SIZES[u] for u in OUR_TERMS[:OUR_TERMS.index(t)])) for t in OUR_TERMS}
        for j, k in enumerate(frames):
            for term in OUR_TERMS:
                n, s = SIZES[term], conv.scale(term)
                rows = k * frame + ours_at[term] + np.arange(n)  # our frame k (0: present, k: history entry k)
                if n == 12:
                    rows = rows[idx]  # their joint j is our joint idx[j]
                cols = (j * frame + offsets[term] if priority == "time"
                        else len(frames) * offsets[term] + j * n) + np.arange(n)
                if term == "dof_pos":  # theirs (q - their_default) * s; ours q - our_default
                    inp[rows, cols], add[rows] = 1.0 / s, conv.default_pos - c.DEFAULT_POSE[idx]
                elif term == "actions":  # theirs a * s, to their_default + scale a; ours (target - ours) / ours
                    inp[rows, cols] = conv.action_scale / (s * our_scale)
                    add[rows] = (conv.default_pos - c.DEFAULT_POSE[idx]) / our_scale
                else:
                    inp[rows, cols] = 1.0 / s
        # Their raw action j = (our_default[idx j] + our_scale a[idx j] - their_default j) / their_scale j.
        out = np.zeros((12, 12))
        out[np.arange(12), idx] = our_scale / conv.action_scale
        self.to_ours = _linear(inp, add)
        self.ours = ours
        self.to_theirs = _linear(out, (c.DEFAULT_POSE[idx] - conv.default_pos) / conv.action_scale)

    def forward(self, foreign: torch.Tensor) -> torch.Tensor:
        return self.to_theirs(self.ours(self.to_ours(foreign)))
