"""The metadata JSON written next to every exported policy file.

Schema ``sim2real.policy/1`` (docs/training.md shows a complete example)::

    schema            "sim2real.policy/1"
    sim2real_version  package version that exported it
    format            "onnx" | "torchscript"
    file, sha256      the policy file (name relative to this JSON) and its hash
    robot, task, task_name, action_mode, algo, task_options
    io                {input, output, dtype, batch: "dynamic"}
    observation       {size, layout: [{name, size, start}], normalization:
                       {enabled, mean, var, epsilon, clip, in_graph: true}}
    action            {size, layout: [{name, size, start}], low, high,
                       clipped_in_graph: true, scaling}
    control           {control_dt, control_hz, physics_dt}
    training          {run, checkpoint, step, config_hash, seed, git_commit, eval}
    verification      {max_abs_diff, samples}: exported file vs torch on random inputs
    created           UTC timestamp

The graph already normalizes observations and clips actions; the statistics
are repeated here for inspection and for deployments that rebuild them.
"""

from __future__ import annotations

import datetime as _dt
from typing import Any

import sim2real

SCHEMA = "sim2real.policy/1"


def with_offsets(layout: list[list[Any]] | list[tuple[str, int]]) -> list[dict[str, Any]]:
    """``[(name, size)]`` -> ``[{name, size, start}]`` (start: index of the first element)."""
    out, start = [], 0
    for name, size in layout:
        out.append({"name": str(name), "size": int(size), "start": start})
        start += int(size)
    return out


def build_metadata(
    *,
    fmt: str,
    file: str,
    sha256: str,
    state: dict[str, Any],
    normalization: dict[str, Any],
    action_scaling: dict[str, Any] | None,
    training: dict[str, Any],
    verification: dict[str, Any],
    task_options: dict[str, Any] | None = None,
    io_names: tuple[str, str] = ("obs", "action"),
) -> dict[str, Any]:
    """The metadata dict of one exported policy (see the module docstring)."""
    return {
        "schema": SCHEMA,
        "sim2real_version": sim2real.__version__,
        "format": fmt,
        "file": file,
        "sha256": sha256,
        "robot": state["robot"],
        "task": state["task"],
        "task_name": state["task_name"],
        "action_mode": state["action_mode"],
        "algo": state["algo"],
        "task_options": dict(task_options or {}),
        "io": {"input": io_names[0], "output": io_names[1], "dtype": "float32", "batch": "dynamic"},
        "observation": {
            "size": int(state["obs_size"]),
            "layout": with_offsets(state["observation_layout"]),
            "normalization": {**normalization, "in_graph": True},
        },
        "action": {
            "size": int(state["action_size"]),
            "layout": with_offsets(state["action_layout"]),
            "low": -1.0,
            "high": 1.0,
            "clipped_in_graph": True,
            "scaling": action_scaling,
        },
        "control": {
            "control_dt": float(state["control_dt"]),
            "control_hz": round(1.0 / float(state["control_dt"]), 6),
            "physics_dt": float(state["physics_dt"]),
        },
        "training": training,
        "verification": verification,
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
    }
