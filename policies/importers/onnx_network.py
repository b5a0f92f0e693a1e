"""Foreign policy networks given as ONNX (Isaac Lab's ``export_policy_as_onnx``:
input ``obs [batch, N]``, output ``actions [batch, 12]``) rebuilt as a torch module with
the graph's exact weights, so the importer wraps and verifies them like a TorchScript
network.

What is rebuilt: one chain from the input to the output of Gemm or MatMul layers,
element-wise Add/Sub/Mul/Div with a constant (an observation normalizer, a bias),
Elu, Relu, Tanh, Sigmoid, LeakyRelu, Selu, Clip and Identity; constants may come from
initializers or Constant nodes, and constant-only arithmetic is folded. Anything else
(branches, recurrent state inputs such as ``h_in``, convolutions, unknown ops) is
refused with one line naming it: the policy's TorchScript export imports instead.
"""

# No `from __future__ import annotations` here: TorchScript reads the modules' annotations as types.
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from sim2real.policies.errors import PolicyFileError

ACTIVATIONS = ("Elu", "Relu", "Tanh", "Sigmoid", "LeakyRelu", "Selu")
ELEMENTWISE = ("Add", "Sub", "Mul", "Div")
SUPPORTED = ("Gemm", "MatMul", *ELEMENTWISE, *ACTIVATIONS, "Clip", "Identity", "Constant")
FOLDABLE = ("Sqrt", "Neg", "Reciprocal", "Cast")
"""Ops accepted on constants only (folded while reading)."""
SELU_ALPHA, SELU_GAMMA = 1.67326319217681884765625, 1.05070102214813232421875
"""ONNX's Selu defaults, the constants of torch's ``nn.SELU`` (other values cannot be rebuilt)."""
FLOAT = 1
"""ONNX's element type of float32 tensors."""


class Elementwise(nn.Module):
    """``x op value`` (``value op x`` when the constant comes first) for Add/Sub/Mul/Div."""

    value: torch.Tensor

    def __init__(self, op: str, value: np.ndarray, constant_first: bool) -> None:
        super().__init__()
        self.op = op
        self.constant_first = constant_first
        self.register_buffer("value", torch.from_numpy(np.array(value, dtype=np.float32)))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.op == "Add":
            return x + self.value
        if self.op == "Mul":
            return x * self.value
        if self.op == "Sub":
            return self.value - x if self.constant_first else x - self.value
        return self.value / x if self.constant_first else x / self.value


class Clamp(nn.Module):
    """ONNX Clip with constant bounds."""

    def __init__(self, low: float, high: float) -> None:
        super().__init__()
        self.low = low
        self.high = high

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.clamp(x, self.low, self.high)


def _refuse(path: Path, what: str) -> PolicyFileError:
    return PolicyFileError(f"{path}: {what}; import the policy's TorchScript export (policy.pt) instead")


def _attributes(node: Any) -> dict[str, Any]:
    import onnx

    return {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}


def _constant_node(path: Path, node: Any) -> np.ndarray:
    """The value of a Constant node (a tensor, or a float / floats attribute)."""
    from onnx import numpy_helper

    attrs = _attributes(node)
    if "value" in attrs:
        return numpy_helper.to_array(attrs["value"])
    if "value_float" in attrs or "value_floats" in attrs:
        return np.asarray(attrs.get("value_float", attrs.get("value_floats")), dtype=np.float32)
    raise _refuse(path, f"Constant node {node.name!r} holds {sorted(attrs)}, not a float tensor")


def _fold(path: Path, node: Any, values: list[np.ndarray]) -> np.ndarray:
    """Constant-only arithmetic (e.g. a normalizer's ``std + eps`` left unfolded by the exporter)."""
    op, a = node.op_type, values[0]
    with np.errstate(all="ignore"):
        if op in ELEMENTWISE and len(values) == 2:
            b = values[1]
            return {"Add": a + b, "Sub": a - b, "Mul": a * b, "Div": a / b}[op]
        if op == "Identity":
            return a
        if op == "Sqrt":
            return np.sqrt(a)
        if op == "Neg":
            return -a
        if op == "Reciprocal":
            return 1.0 / a
        if op == "Cast" and _attributes(node).get("to") == FLOAT:
            return a.astype(np.float32)
    raise _refuse(path, f"ONNX op {op!r} on constants (node {node.name!r}) cannot be folded")


def _linear(weight: np.ndarray, bias: np.ndarray | None) -> nn.Linear:
    """``nn.Linear`` holding ``weight [out, in]`` and ``bias [out]`` exactly."""
    layer = nn.Linear(weight.shape[1], weight.shape[0], bias=bias is not None)
    with torch.no_grad():
        layer.weight.copy_(torch.from_numpy(np.array(weight, dtype=np.float32)))
        if bias is not None and layer.bias is not None:
            layer.bias.copy_(torch.from_numpy(np.array(bias, dtype=np.float32)))
    return layer


def _layer(path: Path, node: Any, constants: dict[str, np.ndarray], current: str) -> nn.Module | None:
    """The torch module of one chain node reading ``current`` (None for Identity)."""
    op, attrs = node.op_type, _attributes(node)
    consts = [constants.get(n) for n in node.input]  # None: the live input (or an omitted optional one)
    if op == "Gemm":
        if node.input[0] != current or attrs.get("transA", 0) or consts[1] is None or consts[1].ndim != 2:
            raise _refuse(path, f"Gemm node {node.name!r} is not input @ constant weight")
        alpha, beta = float(attrs.get("alpha", 1.0)), float(attrs.get("beta", 1.0))
        weight = (consts[1] if attrs.get("transB", 0) else consts[1].T) * alpha
        bias = consts[2] if len(consts) > 2 else None  # the chain check made a given C constant
        if bias is not None and bias.size not in (1, weight.shape[0]):
            raise _refuse(path, f"Gemm node {node.name!r} has a bias of shape {bias.shape}")
        return _linear(weight, None if bias is None else np.broadcast_to(bias.reshape(-1) * beta, (weight.shape[0],)))
    if op == "MatMul":
        if node.input[0] != current or consts[1] is None or consts[1].ndim != 2:
            raise _refuse(path, f"MatMul node {node.name!r} is not input @ constant weight")
        return _linear(consts[1].T, None)
    if op in ELEMENTWISE:
        constant_first = node.input[0] != current
        value = consts[0] if constant_first else consts[1]
        if value is None or value.ndim > 2 or (value.ndim == 2 and value.shape[0] != 1):
            raise _refuse(path, f"{op} node {node.name!r} does not combine the input with a vector constant")
        return Elementwise(op, value, constant_first)
    if op == "Clip":  # bounds as inputs (opset >= 11) or attributes (older)
        bounds = [attrs.get("min", -np.inf), attrs.get("max", np.inf)]
        for k, value in enumerate(consts[1:3]):
            if value is not None:
                if value.size != 1:
                    raise _refuse(path, f"Clip node {node.name!r} has bounds of shape {value.shape}")
                bounds[k] = value.reshape(-1)[0]
        return Clamp(float(bounds[0]), float(bounds[1]))
    if op == "Elu":
        return nn.ELU(alpha=float(attrs.get("alpha", 1.0)))
    if op == "LeakyRelu":
        return nn.LeakyReLU(negative_slope=float(attrs.get("alpha", 0.01)))
    if op == "Selu":
        alpha, gamma = attrs.get("alpha", SELU_ALPHA), attrs.get("gamma", SELU_GAMMA)
        if abs(alpha - SELU_ALPHA) > 1e-6 or abs(gamma - SELU_GAMMA) > 1e-6:
            raise _refuse(path, f"Selu node {node.name!r} has non-standard alpha/gamma {attrs}")
        return nn.SELU()
    if op == "Relu":
        return nn.ReLU()
    if op == "Tanh":
        return nn.Tanh()
    if op == "Sigmoid":
        return nn.Sigmoid()
    return None  # Identity


def load(path: Path) -> nn.Module:
    """The ONNX network at ``path`` as a TorchScript-scriptable ``nn.Sequential`` (eval mode)."""
    import onnx
    from onnx import numpy_helper

    try:
        model = onnx.load(str(path))
    except Exception as exc:  # onnx raises DecodeError, OSError, ... for a bad file
        raise PolicyFileError(f"{path} is not a loadable ONNX file ({exc})") from None
    graph = model.graph
    constants = {t.name: numpy_helper.to_array(t) for t in graph.initializer}
    inputs = [i for i in graph.input if i.name not in constants]  # old IR versions list initializers as inputs
    if len(inputs) != 1:
        raise _refuse(path, f"the graph has inputs {[i.name for i in inputs]}, not one observation input "
                            "(recurrent state inputs such as h_in cannot be rebuilt)")
    if len(graph.output) != 1:
        raise _refuse(path, f"the graph has outputs {[o.name for o in graph.output]}, not one action output")
    if inputs[0].type.tensor_type.elem_type != FLOAT:
        raise _refuse(path, f"the input {inputs[0].name!r} is not float32")
    unknown = list(dict.fromkeys(n.op_type for n in graph.node if n.op_type not in SUPPORTED + FOLDABLE))
    if unknown:  # all of them, so an LSTM is named rather than the Shape plumbing in front of it
        raise _refuse(path, f"ONNX op(s) {', '.join(map(repr, unknown))} cannot be rebuilt as torch modules "
                            f"(supported: {', '.join(SUPPORTED)})")
    current, layers = inputs[0].name, []
    for node in graph.node:
        op = node.op_type
        if node.domain not in ("", "ai.onnx"):
            raise _refuse(path, f"ONNX op {node.domain}.{op} (node {node.name!r}) cannot be rebuilt")
        if len([o for o in node.output if o]) != 1:
            raise _refuse(path, f"ONNX op {op!r} (node {node.name!r}) has several outputs")
        if op == "Constant":
            constants[node.output[0]] = _constant_node(path, node)
            continue
        live = [n for n in node.input if n and n not in constants]
        if not live:
            constants[node.output[0]] = _fold(path, node, [constants[n] for n in node.input if n])
            continue
        if op not in SUPPORTED:
            raise _refuse(path, f"ONNX op {op!r} (node {node.name!r}) is supported on constants only")
        if live != [current]:  # a second live tensor: a branch, a skip connection or a state input
            raise _refuse(path, f"ONNX op {op!r} (node {node.name!r}) reads {live}: the graph is not one chain")
        layer = _layer(path, node, constants, current)
        if layer is not None:
            layers.append(layer)
        current = node.output[0]
    if current != graph.output[0].name:
        raise _refuse(path, f"the output {graph.output[0].name!r} is not the end of the chain from the input")
    return nn.Sequential(*layers).eval()
