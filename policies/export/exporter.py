"""``sim2real export``: a run's checkpoint -> a deployable policy file + metadata.

The exported file is verified before the metadata is written: on random
observations it must reproduce the torch module within ``TOLERANCE``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from sim2real.policies.common import atomic, session
from sim2real.policies.common.checkpoint import sha256_file
from sim2real.policies.errors import PolicyFileError
from sim2real.policies.export.metadata import build_metadata
from sim2real.policies.loading import LoadedRun, load_run

FORMATS = {"onnx": "policy.onnx", "torchscript": "policy.pt"}
TOLERANCE = 1e-5
"""Largest absolute action difference accepted between the file and torch."""


@dataclass
class ExportResult:
    policy_path: Path
    metadata_path: Path
    metadata: dict[str, Any]


def metadata_path_for(policy_path: str | Path) -> Path:
    """The metadata JSON of a policy file: ``policy.onnx`` -> ``policy.onnx.json``."""
    p = Path(policy_path)
    return p.with_name(p.name + ".json")


def random_observations(loaded: LoadedRun, n: int = 256, seed: int = 0) -> np.ndarray:
    """Observations spread around the training distribution, some beyond the clip range."""
    mean, var = _statistics(loaded)
    rng = np.random.default_rng(seed)
    std = np.sqrt(var + loaded.config.normalize.epsilon)
    scale = rng.choice([0.5, 2.0, 20.0], size=(n, 1))
    return (mean + std * scale * rng.standard_normal((n, mean.shape[0]))).astype(np.float32)


def _statistics(loaded: LoadedRun) -> tuple[np.ndarray, np.ndarray]:
    """Normalization mean and variance; zeros and ones when normalization is off."""
    stats = session.obs_statistics(loaded.vecnorm)
    size = int(loaded.state["obs_size"])
    if stats is None:
        return np.zeros(size), np.ones(size)
    # Beyond `size`: an asymmetric critic's privileged state, which the exported actor never takes.
    return stats[0][:size], stats[1][:size]


def export_policy(
    run_path: str | Path, fmt: str = "onnx", out_dir: str | Path | None = None, which: str = "auto"
) -> ExportResult:
    """Export ``which`` checkpoint of a run (``auto``: best, else last) to ``out_dir``
    (default ``RUN/export``); returns the written paths and the metadata."""
    if fmt not in FORMATS:
        raise PolicyFileError(f"unknown export format {fmt!r}; choose one of {list(FORMATS)}")
    loaded = load_run(run_path, which)
    out = Path(out_dir) if out_dir is not None else loaded.run.export_dir
    out.mkdir(parents=True, exist_ok=True)
    policy_path = out / FORMATS[fmt]
    actor = loaded.actor()
    obs_size = int(loaded.state["obs_size"])
    if fmt == "onnx":
        from sim2real.policies.export import onnx as onnx_backend

        onnx_backend.export_onnx(actor, obs_size, policy_path)
        parity = onnx_backend.parity
    else:
        from sim2real.policies.export import torchscript as ts_backend

        ts_backend.export_torchscript(actor, obs_size, policy_path)
        parity = ts_backend.parity
    obs = random_observations(loaded)
    diff = parity(actor, policy_path, obs)
    if not diff <= TOLERANCE:
        raise PolicyFileError(f"exported {policy_path} differs from the torch policy by {diff:.3g} > {TOLERANCE}")
    metadata = build_metadata(
        fmt=fmt,
        file=policy_path.name,
        sha256=sha256_file(policy_path),
        state=loaded.state,
        normalization=_normalization(loaded),
        action_scaling=_action_scaling(loaded),
        training=_training(loaded),
        verification={"max_abs_diff": diff, "samples": int(obs.shape[0]), "tolerance": TOLERANCE},
        task_options=loaded.config.task_options,
    )
    meta_path = metadata_path_for(policy_path)
    atomic.write_json(meta_path, metadata)
    return ExportResult(policy_path, meta_path, metadata)


def _normalization(loaded: LoadedRun) -> dict[str, Any]:
    n = loaded.config.normalize
    enabled = bool(loaded.vecnorm.norm_obs)
    mean, var = _statistics(loaded)
    return {
        "enabled": enabled,
        "mean": [float(x) for x in mean],
        "var": [float(x) for x in var],
        "epsilon": float(n.epsilon),
        "clip": float(n.clip_obs),
        "formula": "clip((obs - mean) / sqrt(var + epsilon), -clip, clip)" if enabled else "identity",
    }


def _action_scaling(loaded: LoadedRun) -> dict[str, Any]:
    """How [-1, 1] becomes an actuator command. The task contract has no field for
    it, so a task may describe it with an optional ``action_scaling()`` method."""
    s = loaded.state
    task = loaded.task_cls(num_envs=1, action_mode=s["action_mode"], **loaded.config.task_options)
    hook = getattr(task, "action_scaling", None)
    return {
        "applied_by": f"{s['task']} action_to_ctrl, action mode {s['action_mode']!r}",
        "parameters": hook() if callable(hook) else None,
    }


def _training(loaded: LoadedRun) -> dict[str, Any]:
    prov = loaded.run.read_provenance()
    ev = loaded.state.get("eval") or loaded.state.get("last_eval") or {}
    return {
        "run": loaded.run.name,
        "checkpoint": loaded.kind,
        "step": loaded.step,
        "config_hash": loaded.state.get("config_hash"),
        "seed": loaded.config.seed,
        "git_commit": prov.get("git_commit"),
        "eval": {k: ev[k] for k in ("step", "success_rate", "ci_low", "ci_high", "mean_return") if k in ev},
    }
