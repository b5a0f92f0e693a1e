"""An imported policy's cost per control step: the adapter (the foreign observation built
from ours, its action mapped to our joint targets) and the foreign network, one ONNX
graph, called on one observation as the deployed policy node calls it, against the
shipped QuadrupedVelocity policy's graph in the same run. The target: <= 0.2 ms per step
on average (p99 is reported too; on a shared 2-core host it is the scheduler's).

Without POLICY, a stand-in is imported first: a random network of the robot_lab Go2
policy's shape (45 -> 512 -> 256 -> 128 -> 12, ELU), through the rl_sar reader;
inference time does not depend on the weights.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from sim2real.commands.output import add_json_flag, console, emit_json, stdout

HELP = "imported policy: adapter + ONNX inference per control step vs the shipped quadruped policy"
TARGET_MS = 0.2


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("policy", nargs="?", type=Path, help="an imported policy folder (default: a stand-in "
                                                              "of robot_lab's Go2 policy's shape)")
    parser.add_argument("--calls", type=int, default=5000, help="timed calls per policy")
    add_json_flag(parser)


def per_step_ms(policy: Any, obs: np.ndarray, calls: int) -> dict[str, float]:
    """Milliseconds per call of ``policy`` on one observation (rows of ``obs`` in turn):
    mean, p50 and p99 after a warm-up."""
    for row in obs[:50]:
        policy(row)
    times = np.empty(calls)
    for k in range(calls):
        t0 = time.perf_counter()
        policy(obs[k % len(obs)])
        times[k] = time.perf_counter() - t0
    ms = 1e3 * times
    return {"mean": round(float(ms.mean()), 4), "p50": round(float(np.percentile(ms, 50)), 4),
            "p99": round(float(np.percentile(ms, 99)), 4)}


def resized(obs: np.ndarray, size: int) -> np.ndarray:
    """Rows of ``obs`` cut or zero-padded to ``size`` values: the same data for a policy
    that reads other blocks (the shipped one's gait clock; an imported one's history)."""
    out = np.zeros((len(obs), size), np.float32)
    width = min(size, obs.shape[1])
    out[:, :width] = obs[:, :width]
    return out


def stand_in(folder: Path, kp: float = 20.0, kd: float = 0.5) -> Path:
    """Import a random network of robot_lab's Go2 policy's shape (its gains by default)
    into ``folder/imported``, without the sim check (an untrained network falls)."""
    import torch
    import yaml

    from sim2real.policies.importers import READERS
    from sim2real.policies.importers.writer import import_policy
    from sim2real.sim.quadruped import constants as c

    torch.manual_seed(0)
    layers: list[torch.nn.Module] = []
    for n_in, n_out in ((45, 512), (512, 256), (256, 128)):
        layers += [torch.nn.Linear(n_in, n_out), torch.nn.ELU()]
    network = torch.nn.Sequential(*layers, torch.nn.Linear(128, 12)).eval()
    policy_folder = folder / "go2" / "stand_in"
    policy_folder.mkdir(parents=True)
    torch.jit.save(torch.jit.script(network), str(policy_folder / "policy.pt"))
    (folder / "go2" / "base.yaml").write_text(yaml.safe_dump({"go2": {
        "dt": 0.005, "decimation": 4, "joint_names": list(c.JOINT_NAMES)}}))
    (policy_folder / "config.yaml").write_text(yaml.safe_dump({"go2/stand_in": {
        "model_name": "policy.pt", "num_observations": 45,
        "observations": ["ang_vel", "gravity_vec", "commands", "dof_pos", "dof_vel", "actions"],
        "clip_obs": 100.0, "clip_actions_lower": [-100.0] * 12, "clip_actions_upper": [100.0] * 12,
        "rl_kp": [kp] * 12, "rl_kd": [kd] * 12, "action_scale": [0.125, 0.25, 0.25] * 4,
        "ang_vel_scale": 0.25, "dof_pos_scale": 1.0, "dof_vel_scale": 0.05, "commands_scale": [1.0, 1.0, 1.0],
        "default_dof_pos": [0.0, 0.8, -1.5] * 4, "joint_mapping": list(range(12))}}))
    import_policy(READERS["rl_sar"].read(policy_folder), folder / "imported", check=False)
    return folder / "imported"


def run(args: argparse.Namespace) -> int:
    from sim2real.policies import BASELINES_DIR
    from sim2real.policies.deploy import OnnxPolicy
    from sim2real.policies.importers.writer import recorded_observations

    with tempfile.TemporaryDirectory() as tmp, console.status("importing and timing"):
        path = args.policy or stand_in(Path(tmp))
        imported, shipped = OnnxPolicy(path), OnnxPolicy(BASELINES_DIR / "QuadrupedVelocity")
        obs = recorded_observations(imported, dict(imported.metadata.get("task_options") or {}), steps=50)
        a, b = per_step_ms(imported, obs, args.calls), per_step_ms(shipped, resized(obs, shipped.obs_size), args.calls)
    report = {"policy": str(args.policy) if args.policy else "stand-in: robot_lab Go2 shape (45-512-256-128-12)",
              "imported_ms": a, "shipped_QuadrupedVelocity_ms": b, "ratio_mean": round(a["mean"] / b["mean"], 3),
              "target_ms": TARGET_MS, "meets_target": a["mean"] <= TARGET_MS}
    if args.json:
        emit_json(report)
        return 0
    stdout.print(f"{report['policy']}: {a['mean']:.4f} ms per step (p50 {a['p50']:.4f}, p99 {a['p99']:.4f}); "
                 f"shipped QuadrupedVelocity {b['mean']:.4f} ms; ratio {report['ratio_mean']:.2f}; "
                 f"target <= {TARGET_MS} ms: {'met' if report['meets_target'] else 'NOT met'}")
    return 0
