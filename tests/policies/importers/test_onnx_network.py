"""Foreign ONNX networks rebuilt as torch modules: the rebuilt module computes what
onnxruntime computes on the same file (MLPs with and without an observation normalizer,
as Isaac Lab's ``export_policy_as_onnx`` writes them), scripts with TorchScript, and a
graph it cannot rebuild is refused with one line naming the op."""

from __future__ import annotations

import contextlib
import sys
import warnings
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest
import torch
from torch import nn

from sim2real.policies.errors import PolicyFileError
from sim2real.policies.importers import onnx_network

OBS = 45


class Normalizer(nn.Module):
    """rsl_rl's EmpiricalNormalization in eval mode: ``(x - mean) / (std + eps)``."""

    mean: torch.Tensor
    std: torch.Tensor

    def __init__(self) -> None:
        super().__init__()
        generator = torch.Generator().manual_seed(3)
        self.register_buffer("mean", torch.randn(OBS, generator=generator))
        self.register_buffer("std", torch.rand(OBS, generator=generator) + 0.5)
        self.eps = 1e-2

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return (x - self.mean) / (self.std + self.eps)


class Exported(nn.Module):
    """Isaac Lab's _OnnxPolicyExporter: ``actor(normalizer(obs))``."""

    def __init__(self, actor: nn.Module, normalizer: nn.Module) -> None:
        super().__init__()
        self.normalizer = normalizer
        self.actor = actor

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.actor(self.normalizer(x))


class Residual(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.layer = nn.Linear(OBS, OBS)
        self.head = nn.Linear(OBS, 12)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(x + self.layer(x))


class Recurrent(nn.Module):
    """Isaac Lab's recurrent export: ``(obs, h_in, c_in) -> (actions, h_out, c_out)``."""

    def __init__(self) -> None:
        super().__init__()
        self.rnn = nn.LSTM(OBS, 16)
        self.head = nn.Linear(16, 12)

    def forward(self, x: torch.Tensor, h: torch.Tensor, c: torch.Tensor) -> tuple[torch.Tensor, ...]:
        y, (h, c) = self.rnn(x.unsqueeze(0), (h, c))
        return self.head(y.squeeze(0)), h, c


def export(module: nn.Module, path: Path, *args: torch.Tensor, opset: int = 11, names: tuple[str, ...] = ("obs",),
           outputs: tuple[str, ...] = ("actions",)) -> Path:
    """torch.onnx.export as Isaac Lab calls it (fixed batch of one, opset 11)."""
    with contextlib.redirect_stdout(sys.stderr), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(module.eval(), args or (torch.zeros(1, OBS),), str(path), input_names=list(names),
                          output_names=list(outputs), opset_version=opset, dynamo=False)
    return path


def mlp(activation: type[nn.Module], seed: int) -> nn.Sequential:
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(OBS, 64), activation(), nn.Linear(64, 32), activation(), nn.Linear(32, 12))


@pytest.mark.parametrize(("activation", "normalized", "opset"), [
    (nn.ELU, False, 11), (nn.ELU, True, 11), (nn.ReLU, True, 17), (nn.Tanh, False, 17), (nn.LeakyReLU, True, 11),
])
def test_the_rebuilt_network_computes_what_onnxruntime_does(tmp_path: Path, activation: type[nn.Module],
                                                            normalized: bool, opset: int) -> None:
    module = Exported(mlp(activation, seed=opset), Normalizer() if normalized else nn.Identity())
    path = export(module, tmp_path / "policy.onnx", opset=opset)
    network = onnx_network.load(path)
    assert any(isinstance(m, onnx_network.Elementwise) for m in network.modules()) == normalized
    rebuilt = torch.jit.script(network)  # the importer scripts it inside its adapter
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    obs = np.random.default_rng(0).normal(scale=2.0, size=(64, OBS)).astype(np.float32)
    want = np.concatenate([np.asarray(session.run(None, {"obs": row[None]})[0]) for row in obs])  # a batch of one
    with torch.no_grad():
        got = rebuilt(torch.as_tensor(obs)).numpy()
    np.testing.assert_allclose(got, want, atol=1e-5, rtol=0)


def test_matmul_add_and_clip_graphs_are_rebuilt(tmp_path: Path) -> None:
    """A 1-D input exports Linear as MatMul + Add; a clamp as Clip."""
    torch.manual_seed(1)
    module = nn.Sequential(nn.Linear(OBS, 12), nn.Hardtanh(-0.5, 0.5))
    path = export(module, tmp_path / "policy.onnx", torch.zeros(OBS))
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    x = np.random.default_rng(1).normal(size=OBS).astype(np.float32)
    with torch.no_grad():
        got = onnx_network.load(path)(torch.as_tensor(x)).numpy()
    np.testing.assert_allclose(got, np.asarray(session.run(None, {"obs": x})[0]), atol=1e-6, rtol=0)


@pytest.mark.parametrize(("build", "message"), [
    (lambda p: export(nn.Sequential(nn.Conv1d(1, 2, 3), nn.Flatten(), nn.Linear(86, 12)), p, torch.zeros(1, 1, OBS)),
     "'Conv', 'Flatten'"),
    (lambda p: export(Residual(), p), "not one chain"),
    (lambda p: export(Recurrent(), p, torch.zeros(1, OBS), torch.zeros(1, 1, 16), torch.zeros(1, 1, 16),
                      names=("obs", "h_in", "c_in"), outputs=("actions", "h_out", "c_out")), "h_in"),
])
def test_graphs_it_cannot_rebuild_are_refused_with_the_op(tmp_path: Path, build, message: str) -> None:
    with pytest.raises(PolicyFileError, match=message) as info:
        onnx_network.load(build(tmp_path / "policy.onnx"))
    assert "\n" not in str(info.value) and "TorchScript" in str(info.value)


def test_an_lstm_op_is_named(tmp_path: Path) -> None:
    class Lstm(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.rnn = nn.LSTM(OBS, 12)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.rnn(x)[0]

    with pytest.raises(PolicyFileError, match="'LSTM'"):
        onnx_network.load(export(Lstm(), tmp_path / "lstm.onnx", torch.zeros(1, 1, OBS)))


def test_a_file_that_is_not_onnx_is_refused(tmp_path: Path) -> None:
    (tmp_path / "policy.onnx").write_bytes(b"not a protobuf")
    with pytest.raises(PolicyFileError, match="not a loadable ONNX file"):
        onnx_network.load(tmp_path / "policy.onnx")
