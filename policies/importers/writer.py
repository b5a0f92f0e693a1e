"""Writing an imported policy: the foreign TorchScript network inside the adapter,
scripted and exported to ONNX, verified against torch on observations recorded from our
simulator, with our standard metadata plus the declarative ``adapter``.

The imported policy is then an ordinary exported policy of ``QuadrupedVelocity`` in the
``joint_pos`` action mode, with the policy's own servo gains as task options: ``eval``,
``robustness``, ``deploy`` and the pre-flight check run it unchanged.
"""

from __future__ import annotations

import contextlib
import sys
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from sim2real.policies.common import atomic
from sim2real.policies.common.checkpoint import sha256_file
from sim2real.policies.errors import PolicyFileError
from sim2real.policies.importers.spec import ForeignSpec

TASK = "QuadrupedVelocity"
ACTION_MODE = "joint_pos"
ACTION_SCALE = 2.0
"""Our joint_pos scale for imported policies: targets within 2 rad of our default pose
(the joint limits clip first; at 1 rad, 7 % of the robot_lab Go2 policy's targets were cut)."""
TOLERANCE = 1e-5


def task_options(spec: ForeignSpec) -> dict[str, Any]:
    """Our task's options for the policy: its servo gains (in our joint order) and our action scale."""
    from sim2real.policies.importers.adapter import history_blocks
    from sim2real.sim.quadruped import constants as c

    order = [spec.joint_names.index(n) for n in c.JOINT_NAMES]
    options: dict[str, Any] = {"action_scale": ACTION_SCALE, "servo_kp": spec.kp[order].tolist(),
                               "servo_kd": spec.kd[order].tolist()}
    if spec.history_steps:  # the past frames it reads come from our task's history of the same blocks
        options.update(history_steps=spec.history_steps, history_blocks=history_blocks(spec))
    return options


def load_network(spec: ForeignSpec) -> Any:
    import torch

    if spec.policy_file.suffix.lower() == ".onnx":  # rebuilt as torch modules, so it is wrapped and verified alike
        from sim2real.policies.importers import onnx_network

        network = onnx_network.load(spec.policy_file)
    else:
        try:
            network = torch.jit.load(str(spec.policy_file), map_location="cpu").eval()
        except Exception as exc:  # torch raises RuntimeError or its own error types for a bad archive
            raise PolicyFileError(f"{spec.policy_file} is not a loadable TorchScript file ({exc})") from None
    with torch.no_grad():
        try:
            out = network(torch.zeros(2, spec.obs_size))
        except Exception as exc:
            raise PolicyFileError(f"{spec.policy_file} does not take {spec.obs_size} observations ({exc})") from None
    if tuple(out.shape) != (2, 12):
        raise PolicyFileError(f"{spec.policy_file} returns shape {tuple(out.shape)[1:]}, not 12 joint actions")
    return network


def recorded_observations(act: Callable[[np.ndarray], np.ndarray], options: dict[str, Any], steps: int = 100,
                          n_envs: int = 4) -> np.ndarray:
    """Observations of our simulator with ``act`` (the imported policy) acting."""
    from sim2real.sim import make_vec

    env = make_vec(TASK, n_envs, seed=0, action_mode=ACTION_MODE, dr="train", **options)
    obs, rows = env.reset(), []
    for _ in range(steps):
        rows.append(obs)
        obs, *_ = env.step(act(np.asarray(obs, dtype=np.float32)))
    return np.concatenate(rows).astype(np.float32)


def import_policy(spec: ForeignSpec, out: Path, check: bool = True) -> dict[str, Any]:
    """Write ``out/policy.onnx`` and its metadata; returns the metadata. ``check``: run the
    policy in our simulator (:mod:`~sim2real.policies.importers.sim_check`, a few seconds)."""
    import onnxruntime as ort
    import torch

    from sim2real.policies.common.envs import task_class, task_description
    from sim2real.policies.export.metadata import build_metadata
    from sim2real.policies.export.onnx import INPUT_NAME, OUTPUT_NAME
    from sim2real.policies.importers.adapter import ImportedPolicy
    from sim2real.sim.quadruped.base import QuadrupedTask

    task_cls = task_class(TASK)
    if abs(spec.control_dt - task_cls.control_dt) > 1e-9:
        raise PolicyFileError(f"{spec.policy_file} runs at {spec.control_dt * 1e3:g} ms per step; "
                              f"{TASK} at {task_cls.control_dt * 1e3:g} ms")
    options = task_options(spec)
    state = {**task_description(task_cls, ACTION_MODE, options), "algo": f"imported:{spec.source_format}"}
    layout = [(str(n), int(s)) for n, s in state["observation_layout"]]
    module = torch.jit.script(ImportedPolicy(load_network(spec), spec, layout, ACTION_SCALE).eval())
    out.mkdir(parents=True, exist_ok=True)
    path = out / "policy.onnx"
    with contextlib.redirect_stdout(sys.stderr), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the TorchScript exporter's deprecation notice
        torch.onnx.export(module, (torch.zeros(2, state["obs_size"]),), str(path), input_names=[INPUT_NAME],
                          output_names=[OUTPUT_NAME], dynamo=False,
                          dynamic_axes={INPUT_NAME: {0: "batch"}, OUTPUT_NAME: {0: "batch"}})
    def act(obs: np.ndarray) -> np.ndarray:
        with torch.no_grad():
            return module(torch.as_tensor(obs)).numpy()

    obs = recorded_observations(act, options)
    (ours,) = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run([OUTPUT_NAME], {INPUT_NAME: obs})
    with torch.no_grad():
        diff = float(np.max(np.abs(ours - module(torch.as_tensor(obs)).numpy())))
    if not diff <= TOLERANCE:
        path.unlink()
        raise PolicyFileError(f"the ONNX graph differs from TorchScript by {diff:.3g} > {TOLERANCE}")
    task = task_cls(num_envs=1, action_mode=ACTION_MODE, **options)
    assert isinstance(task, QuadrupedTask)
    meta = build_metadata(
        fmt="onnx", file=path.name, sha256=sha256_file(path), state=state,
        normalization={"enabled": False, "formula": "identity (the foreign network's own, if any, is inside it)"},
        action_scaling=task.action_scaling(),
        training={"imported_from": str(spec.policy_file), "source_sha256": sha256_file(spec.policy_file),
                  "format": spec.source_format},
        verification={"max_abs_diff": diff, "samples": int(obs.shape[0]), "tolerance": TOLERANCE,
                      "against": "the scripted TorchScript adapter on observations recorded in our simulator"},
        task_options=options,
    )
    meta["adapter"] = spec.describe()
    atomic.write_json(out / "policy.onnx.json", meta)
    if check:  # on the written files, as every later user of the policy will load them
        from sim2real.policies.deploy import OnnxPolicy
        from sim2real.policies.importers.sim_check import sim_check

        meta["verification"]["sim_check"] = sim_check(OnnxPolicy(out))
        atomic.write_json(out / "policy.onnx.json", meta)
    return meta
