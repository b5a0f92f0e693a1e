"""TorchScript export of a :class:`~sim2real.policies.networks.DeterministicActor`
(for C++ deployments with libtorch). PyTorch deprecates TorchScript in favour of
``torch.export``; ONNX is the recommended format, this one is kept for libtorch
users and emits no deprecation noise."""

from __future__ import annotations

import io
import warnings
from pathlib import Path

import numpy as np
import torch

from sim2real.policies.common import atomic


def export_torchscript(actor: torch.nn.Module, obs_size: int, path: str | Path) -> None:
    """Trace ``actor`` and save it (atomically); input ``[batch, O]`` float32."""
    actor = actor.eval()
    buf = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        traced = torch.jit.trace(actor, torch.zeros(2, obs_size))
        torch.jit.save(traced, buf)
    atomic.write_bytes(path, buf.getvalue())


def parity(actor: torch.nn.Module, path: str | Path, obs: np.ndarray) -> float:
    """Largest absolute difference between the saved module and ``actor`` on ``obs``."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        loaded = torch.jit.load(str(path))
    x = torch.from_numpy(np.asarray(obs, dtype=np.float32))
    with torch.no_grad():
        return float((loaded(x) - actor(x)).abs().max())
