"""ONNX export of a :class:`~sim2real.policies.networks.DeterministicActor`.

The graph takes ``obs`` (float32 ``[batch, O]``, raw observations) and returns
``action`` (float32 ``[batch, A]`` in [-1, 1]); normalization and clipping are
inside it. Weights are embedded (no external data file), so one file deploys.
"""

from __future__ import annotations

import contextlib
import sys
import warnings
from pathlib import Path

import numpy as np
import torch

from sim2real.policies.common import atomic

INPUT_NAME = "obs"
OUTPUT_NAME = "action"


def export_onnx(actor: torch.nn.Module, obs_size: int, path: str | Path) -> None:
    """Write ``actor`` as an ONNX graph with a dynamic batch dimension (atomically)."""
    actor = actor.eval()
    # Batch 2, not 1: torch.export specializes a size-1 dimension that a reshape touches.
    example = torch.zeros(2, obs_size)
    # The exporter reports progress on stdout; keep stdout clean for `--json`.
    with contextlib.redirect_stdout(sys.stderr), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        program = torch.onnx.export(
            actor,
            (example,),
            input_names=[INPUT_NAME],
            output_names=[OUTPUT_NAME],
            dynamic_shapes=({0: torch.export.Dim("batch")},),
            dynamo=True,
            external_data=False,
            verbose=False,
        )
    # Only the legacy TorchScript exporter (dynamo=False) returns None; dynamo=True always
    # returns the ONNXProgram.
    assert program is not None
    atomic.write_bytes(path, program.model_proto.SerializeToString())


def parity(actor: torch.nn.Module, path: str | Path, obs: np.ndarray) -> float:
    """Largest absolute difference between onnxruntime on ``path`` and torch on ``obs``."""
    import onnxruntime as ort

    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    x = np.asarray(obs, dtype=np.float32)
    (ours,) = session.run([OUTPUT_NAME], {INPUT_NAME: x})
    with torch.no_grad():
        ref = actor(torch.from_numpy(x)).numpy()
    return float(np.max(np.abs(ours - ref)))
