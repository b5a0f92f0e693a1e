"""A small foreign policy network for the importer tests (each format's test saves it
in that format's files)."""

from __future__ import annotations

import torch


def small_network(obs_size: int, seed: int) -> torch.nn.Module:
    """An MLP ``obs_size -> 12`` whose actions are of order 1, so the joint targets stay
    inside our joint_pos range and the comparisons are not clipped."""
    torch.manual_seed(seed)
    net = torch.nn.Sequential(torch.nn.Linear(obs_size, 64), torch.nn.ELU(), torch.nn.Linear(64, 12))
    with torch.no_grad():
        net[2].weight.mul_(0.3)
    return net.eval()
