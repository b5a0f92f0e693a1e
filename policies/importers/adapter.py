"""The imported policy as one graph on our robot's observation and action: every
foreign observation term is an affine function of our observation, and our action an
affine function of the foreign action, so the adapter is two matrices and two offsets
around the foreign network (TorchScript-scriptable, so it exports with it to ONNX).

    foreign_obs = clip(our_obs @ W + b, +-obs_clip)      (every frame of a history, too)
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


def history_blocks(spec: ForeignSpec) -> list[str]:
    """Our blocks the task must remember for the policy's past frames (its terms' blocks)."""
    return [OUR_BLOCKS[t] for t in spec.terms]


def _frame_rows(layout: list[tuple[str, int]], frame: int, blocks: list[str]) -> dict[str, np.ndarray]:
    """Our observation's columns holding each block ``frame`` steps ago: the present
    blocks for frame 0, else the ``history`` block (newest first, entries of ``blocks``)."""
    slices = layout_slices(layout)
    if frame == 0:
        return {b: np.arange(slices[b].start, slices[b].stop) for b in blocks if b in slices}
    sizes = dict(layout)
    entry = sum(sizes[b] for b in blocks)
    if "history" not in slices or slices["history"].stop - slices["history"].start < frame * entry:
        raise ValueError(f"our observation has no history of {frame} steps of {blocks}")
    start, out = slices["history"].start + (frame - 1) * entry, {}
    for b in blocks:
        out[b] = np.arange(start, start + sizes[b])
        start += sizes[b]
    return out


def affine_maps(spec: ForeignSpec, layout: list[tuple[str, int]], action_scale: float
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``W [O, F], b [F], M [A, A], m [A]`` of the module docstring, for our observation
    ``layout`` and our task's ``action_scale`` (q_target = our_default + action_scale * action)."""
    size = sum(n for _, n in layout)
    perm = np.array([c.JOINT_NAMES.index(n) for n in spec.joint_names])  # policy joint j <- our joint perm[j]
    W, b = np.zeros((size, spec.obs_size)), np.zeros(spec.obs_size)
    blocks = history_blocks(spec)
    frames = {k: _frame_rows(layout, k, blocks) for k in spec.history}
    offsets = np.cumsum([0] + [TERM_SIZES[t] for t in spec.terms])
    for k_index, k in enumerate(spec.history):
        for t_index, term in enumerate(spec.terms):
            n, scale = TERM_SIZES[term], spec.scales[term]
            if spec.history_priority == "time":
                col = k_index * spec.frame_size + offsets[t_index]
            else:  # term by term, each term's frames in the policy's order
                col = len(spec.history) * offsets[t_index] + k_index * n
            block = OUR_BLOCKS[term]
            if block not in frames[k]:
                raise ValueError(f"our observation has no {block!r} block for the policy's {term!r} term")
            rows = frames[k][block]
            if n == c.NUM_JOINTS:
                rows = rows[perm]
            cols = col + np.arange(n)
            if term == "dof_pos":  # ours: q - our_default; theirs: (q - their_default) * scale
                W[rows, cols] = scale
                b[cols] = (c.DEFAULT_POSE[perm] - spec.default_pos) * scale
            elif term == "actions":  # their raw action whose target ours reached: (q_target - their_default) / scale
                W[rows, cols] = action_scale / spec.action_scale * scale
                b[cols] = (c.DEFAULT_POSE[perm] - spec.default_pos) / spec.action_scale * scale
            else:
                W[rows, cols] = scale
    # Our joint perm[j] <- their target default_j + scale_j * a_j, then ours (target - our_default) / action_scale.
    M, m = np.zeros((c.NUM_JOINTS, c.NUM_JOINTS)), np.zeros(c.NUM_JOINTS)
    M[np.arange(c.NUM_JOINTS), perm] = spec.action_scale / action_scale
    m[perm] = (spec.default_pos - c.DEFAULT_POSE[perm]) / action_scale
    return W, b, M, m


def clip_vector(spec: ForeignSpec) -> np.ndarray:
    """``obs_clip`` for every value the network reads, in its order."""
    frame = np.asarray(spec.obs_clip, dtype=float)
    if spec.history_priority == "time":
        return np.tile(frame, len(spec.history))
    offsets = np.cumsum([0] + [TERM_SIZES[t] for t in spec.terms])
    frames = len(spec.history)
    return np.concatenate([np.tile(frame[offsets[i]:offsets[i + 1]], frames) for i in range(len(spec.terms))])


class ImportedPolicy(nn.Module):
    """Our observation ``[B, O]`` -> our action ``[B, 12]`` through a foreign network."""

    # Buffers (register_buffer): declared so they read as tensors.
    W: torch.Tensor
    b: torch.Tensor
    M: torch.Tensor
    m: torch.Tensor
    low: torch.Tensor
    high: torch.Tensor
    clip_low: torch.Tensor
    clip_high: torch.Tensor

    def __init__(self, network: nn.Module, spec: ForeignSpec, layout: list[tuple[str, int]], action_scale: float
                 ) -> None:
        super().__init__()
        self.network = network
        W, b, M, m = affine_maps(spec, layout, action_scale)
        for name, value in (("W", W), ("b", b), ("M", M), ("m", m), ("low", spec.action_clip[0]),
                            ("high", spec.action_clip[1])):
            self.register_buffer(name, torch.as_tensor(np.asarray(value, dtype=np.float32)))
        clip = torch.as_tensor(clip_vector(spec), dtype=torch.float32)
        self.register_buffer("clip_high", clip)
        self.register_buffer("clip_low", -clip)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        foreign = torch.maximum(torch.minimum(obs @ self.W + self.b, self.clip_high), self.clip_low)
        raw = torch.maximum(torch.minimum(self.network(foreign), self.high), self.low)
        return torch.clamp(raw @ self.M + self.m, -1.0, 1.0)
