"""The imported policy as one graph on our robot's observation and action: every
foreign observation term is an affine function of our observation, and our action an
affine function of the foreign action, so the adapter is two matrices and two offsets
around the foreign network (TorchScript-scriptable, so it exports with it to ONNX).

    foreign_obs = clip(our_obs @ W + b, +-obs_clip)
    our_action  = clip((clip(policy(foreign_obs), lo, hi) @ M + m), -1, 1)

Joints are matched by name: the policy's joint j is our joint ``JOINT_NAMES.index(name_j)``.
"""


# No `from __future__ import annotations` here: TorchScript reads the buffer annotations as types.
import numpy as np
import torch
from torch import nn

from sim2real.policies.importers.spec import TERM_SIZES, ForeignSpec
from sim2real.sim.core.layout import layout_slices
from sim2real.sim.quadruped import constants as c

OUR_BLOCKS = {"lin_vel": "base_lin_vel", "ang_vel": "base_ang_vel", "gravity_vec": "projected_gravity",
              "commands": "command", "dof_pos": "joint_pos", "dof_vel": "joint_vel", "actions": "last_action"}
"""Our observation block each foreign term is built from (our blocks are SI units; joint
positions relative to our default pose; last_action our [-1, 1] action)."""


def affine_maps(spec: ForeignSpec, layout: list[tuple[str, int]], action_scale: float
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``W [O, F], b [F], M [A, A], m [A]`` of the module docstring, for our observation
    ``layout`` and our task's ``action_scale`` (q_target = our_default + action_scale * action)."""
    slices = layout_slices(layout)
    size = sum(n for _, n in layout)
    perm = np.array([c.JOINT_NAMES.index(n) for n in spec.joint_names])  # policy joint j <- our joint perm[j]
    W, b, col = np.zeros((size, spec.obs_size)), np.zeros(spec.obs_size), 0
    for term in spec.terms:
        n, scale = TERM_SIZES[term], spec.scales[term]
        block = OUR_BLOCKS[term]
        if block not in slices:
            raise ValueError(f"our observation has no {block!r} block for the policy's {term!r} term")
        rows = np.arange(slices[block].start, slices[block].stop)
        if n == c.NUM_JOINTS:
            rows = rows[perm]
        if term == "dof_pos":  # ours: q - our_default; theirs: (q - their_default) * scale
            W[rows, col + np.arange(n)] = scale
            b[col:col + n] = (c.DEFAULT_POSE[perm] - spec.default_pos) * scale
        elif term == "actions":  # their raw action whose target ours reached: (q_target - their_default) / their_scale
            W[rows, col + np.arange(n)] = action_scale / spec.action_scale * scale
            b[col:col + n] = (c.DEFAULT_POSE[perm] - spec.default_pos) / spec.action_scale * scale
        else:
            W[rows, col + np.arange(n)] = scale
        col += n
    # Our joint perm[j] <- their target default_j + scale_j * a_j, then ours (target - our_default) / action_scale.
    M, m = np.zeros((c.NUM_JOINTS, c.NUM_JOINTS)), np.zeros(c.NUM_JOINTS)
    M[np.arange(c.NUM_JOINTS), perm] = spec.action_scale / action_scale
    m[perm] = (spec.default_pos - c.DEFAULT_POSE[perm]) / action_scale
    return W, b, M, m


class ImportedPolicy(nn.Module):
    """Our observation ``[B, O]`` -> our action ``[B, 12]`` through a foreign network."""

    # Buffers (register_buffer): declared so they read as tensors.
    W: torch.Tensor
    b: torch.Tensor
    M: torch.Tensor
    m: torch.Tensor
    low: torch.Tensor
    high: torch.Tensor

    def __init__(self, network: nn.Module, spec: ForeignSpec, layout: list[tuple[str, int]], action_scale: float
                 ) -> None:
        super().__init__()
        self.network = network
        W, b, M, m = affine_maps(spec, layout, action_scale)
        for name, value in (("W", W), ("b", b), ("M", M), ("m", m), ("low", spec.action_clip[0]),
                            ("high", spec.action_clip[1])):
            self.register_buffer(name, torch.as_tensor(np.asarray(value, dtype=np.float32)))
        self.obs_clip = float(spec.obs_clip)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        foreign = torch.clamp(obs @ self.W + self.b, -self.obs_clip, self.obs_clip)
        raw = torch.maximum(torch.minimum(self.network(foreign), self.high), self.low)
        return torch.clamp(raw @ self.M + self.m, -1.0, 1.0)
