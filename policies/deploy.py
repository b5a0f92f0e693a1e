"""Running an exported policy without torch: :class:`OnnxPolicy`.

This module's import chain is numpy, json, hashlib and onnxruntime (plus the
``Sim2RealError`` base class); it never imports torch or stable-baselines3, so a
robot computer needs neither. The ROS 2 deployment layer builds on it::

    policy = OnnxPolicy("runs/reach/export/policy.onnx")
    policy.check_observation_layout(my_layout)   # fail early on a layout change
    action = policy(obs)                          # [O] -> [A] or [B, O] -> [B, A]
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import numpy as np

from sim2real.policies.errors import ObservationError, PolicyFileError

SCHEMA = "sim2real.policy/1"  # equal to sim2real.policies.export.metadata.SCHEMA (tested)


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def resolve_policy_paths(path: str | Path) -> tuple[Path, Path]:
    """``(policy.onnx, policy.onnx.json)`` from the ONNX file, its metadata JSON, the export
    folder or a shipped policy's name (:func:`sim2real.policies.shipped.resolve_policy`)."""
    from sim2real.policies.shipped import resolve_policy

    p = resolve_policy(path)
    if p.is_dir():
        p = p / "policy.onnx"
    if p.suffix == ".json":
        meta_path = p
        try:
            name = json.loads(p.read_text())["file"]
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise PolicyFileError(f"{p} is not readable policy metadata ({exc})") from None
        return p.parent / name, meta_path
    return p, p.with_name(p.name + ".json")


class OnnxPolicy:
    """An exported ONNX policy and its metadata, run with onnxruntime on the CPU.

    Args:
        path: The ``.onnx`` file, its ``.onnx.json`` metadata, or the export folder.
        threads: onnxruntime intra-op threads (1 keeps latency predictable next to
            a control loop).

    Raises:
        PolicyFileError: a file is missing, the metadata is invalid, the file does
            not match the metadata's hash, or the graph's sizes differ from it.
    """

    def __init__(self, path: str | Path, threads: int = 1) -> None:
        import onnxruntime as ort

        self.path, self.metadata_path = resolve_policy_paths(path)
        for p in (self.path, self.metadata_path):
            if not p.is_file():
                raise PolicyFileError(f"{p} does not exist (export a run with `sim2real export RUN`)")
        self.metadata: dict[str, Any] = self._read_metadata()
        if _sha256(self.path) != self.metadata["sha256"]:
            raise PolicyFileError(f"{self.path} does not match {self.metadata_path} (SHA-256 differs)")
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        try:
            self._session = ort.InferenceSession(str(self.path), options, providers=["CPUExecutionProvider"])
        except Exception as exc:  # onnxruntime raises its own exception types for bad graphs
            raise PolicyFileError(f"{self.path} is not a loadable ONNX graph ({exc})") from None
        io = self.metadata["io"]
        self._input, self._output = io["input"], io["output"]
        inputs = {i.name: i.shape for i in self._session.get_inputs()}
        outputs = {o.name: o.shape for o in self._session.get_outputs()}
        if self._input not in inputs or self._output not in outputs:
            raise PolicyFileError(f"{self.path} has inputs {list(inputs)} / outputs {list(outputs)}, not {io}")
        for what, shape, size in (
            ("input", inputs[self._input], self.obs_size),
            ("output", outputs[self._output], self.action_size),
        ):
            if shape[-1] != size:
                raise PolicyFileError(f"{self.path}: graph {what} has size {shape[-1]}, the metadata says {size}")

    def _read_metadata(self) -> dict[str, Any]:
        try:
            meta = json.loads(self.metadata_path.read_text())
        except (OSError, ValueError) as exc:
            raise PolicyFileError(f"{self.metadata_path} is not valid JSON ({exc})") from None
        if not isinstance(meta, dict) or meta.get("schema") != SCHEMA:
            raise PolicyFileError(f"{self.metadata_path} is not {SCHEMA} metadata")
        if meta.get("format") != "onnx":
            raise PolicyFileError(f"{self.metadata_path} describes a {meta.get('format')!r} file, not ONNX")
        for key in ("sha256", "io", "observation", "action", "control", "robot", "task", "action_mode"):
            if key not in meta:
                raise PolicyFileError(f"{self.metadata_path} lacks the field {key!r}")
        if not isinstance(meta["robot"], str) or not isinstance(meta["task"], str):
            raise PolicyFileError(f"{self.metadata_path}: robot and task must be strings")
        return meta

    def require_robot(self, robot: str) -> None:
        """Refuse to drive ``robot`` with a policy exported for another robot: the layouts
        could even match by chance, the meaning of every number would not."""
        if self.metadata["robot"] != robot:
            raise PolicyFileError(f"{self.metadata_path} is a policy for robot {self.metadata['robot']!r}, "
                                  f"but task {self.metadata['task']!r} is a {robot!r} task")

    # -- description -------------------------------------------------------------
    @property
    def obs_size(self) -> int:
        return int(self.metadata["observation"]["size"])

    @property
    def action_size(self) -> int:
        return int(self.metadata["action"]["size"])

    @property
    def observation_layout(self) -> list[tuple[str, int]]:
        return [(b["name"], int(b["size"])) for b in self.metadata["observation"]["layout"]]

    @property
    def action_layout(self) -> list[tuple[str, int]]:
        return [(b["name"], int(b["size"])) for b in self.metadata["action"]["layout"]]

    @property
    def control_dt(self) -> float:
        return float(self.metadata["control"]["control_dt"])

    @property
    def task(self) -> str:
        return str(self.metadata["task"])

    @property
    def action_mode(self) -> str:
        return str(self.metadata["action_mode"])

    @property
    def privileged_inputs(self) -> bool:
        """A privileged teacher: it also reads simulator state no robot measures
        (blocks ``privileged.*``), so it runs in simulation only."""
        return any(name.startswith("privileged.") for name, _ in self.observation_layout)

    def check_observation_layout(self, layout: list[tuple[str, int]]) -> None:
        """Raise :class:`PolicyFileError` unless ``layout`` equals the trained one
        (a privileged teacher never matches a robot's measurements: said so first)."""
        if self.privileged_inputs:
            raise PolicyFileError(
                f"{self.path} is a privileged teacher: it reads simulator state no robot measures "
                f"({', '.join(n for n, _ in self.observation_layout if n.startswith('privileged.'))}); "
                "deploy a student distilled from it (algo: distill)"
            )
        given = [(str(n), int(s)) for n, s in layout]
        if given != self.observation_layout:
            raise PolicyFileError(
                f"observation layout {given} differs from the one {self.path.name} was trained with: "
                f"{self.observation_layout}"
            )

    # -- inference -----------------------------------------------------------------
    def __call__(self, obs: np.ndarray) -> np.ndarray:
        """Deterministic action(s) in [-1, 1] for raw observation(s) ``[O]`` or ``[B, O]``."""
        x = np.asarray(obs, dtype=np.float32)
        single = x.ndim == 1
        if single:
            x = x[None]
        if x.ndim != 2 or x.shape[1] != self.obs_size:
            raise ObservationError(
                f"observation has shape {np.shape(obs)}, expected ({self.obs_size},) or (B, {self.obs_size}) "
                f"for {self.task} (layout {self.observation_layout})"
            )
        if not np.all(np.isfinite(x)):
            bad = np.argwhere(~np.isfinite(x))[0]
            raise ObservationError(f"observation has a non-finite value at index {tuple(int(i) for i in bad)}")
        (action,) = self._session.run([self._output], {self._input: x})
        if not isinstance(action, np.ndarray):  # a tensor output is a numpy array; sequences, maps are not
            raise PolicyFileError(f"{self.path}: output {self._output!r} is a {type(action).__name__}, not a tensor")
        return action[0] if single else action
