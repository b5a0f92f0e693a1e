"""Round trips: one of our own quadruped policies (trained and exported by our pipeline,
in the joint_pos action mode) written in each foreign format by these tests, then
imported back. The imported policy must command the same joint targets as ours on
recorded observations (max abs diff <= 1e-5 rad) and give the same sim2sim table.

The foreign files are written from each format's own semantics (round_trip.py), so a
misread joint order, scale, default pose or sign in a reader breaks the round trip."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
import yaml
from round_trip import ISAAC_GYM, ISAAC_LAB, Convention, ForeignNetwork
from test_isaac_lab_import import env_cfg, write_run

from sim2real.cli import main
from sim2real.policies import BASELINES_DIR
from sim2real.policies.deploy import OnnxPolicy
from sim2real.policies.importers import READERS
from sim2real.policies.importers.onnx_network import load as load_onnx
from sim2real.policies.importers.writer import ACTION_SCALE, import_policy, recorded_observations
from sim2real.policies.studies.tracking import tracking_table
from sim2real.sim.core.layout import layout_slices
from sim2real.sim.quadruped import constants as c

TOLERANCE = 1e-5


@pytest.fixture(scope="module")
def ours(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A QuadrupedVelocity joint_pos policy of our own: a short PPO run, exported to ONNX
    (observation normalization inside the graph)."""
    run = tmp_path_factory.mktemp("ours") / "run"
    assert main(["train", "QuadrupedVelocity", "--action-mode", "joint_pos", "--steps", "1024", "--n-envs", "8",
                 "--out", str(run), "--no-progress", "--set", "ppo.n_steps=64", "--set", "ppo.batch_size=256",
                 "--set", "net.pi=[64,64]", "--set", "net.vf=[64,64]", "--set", "eval.every_steps=100000",
                 "--set", "eval.episodes=1", "--set", "eval.n_envs=1", "--set", "checkpoint.every_steps=1024"]) == 0
    assert main(["export", str(run)]) == 0
    return run / "export"


WALKING = BASELINES_DIR / "QuadrupedVelocityClockFree"


def our_scale(policy: Path) -> float:
    return float((OnnxPolicy(policy).metadata.get("task_options") or {}).get("action_scale", c.ACTION_SCALE))


def past_frames(policy: Path) -> int:
    """How many past frames the policy reads (whole frames of our seven blocks, newest first)."""
    options = OnnxPolicy(policy).metadata.get("task_options") or {}
    steps = int(options.get("history_steps", 0))
    assert not steps or options["history_blocks"] == [b for b, _ in OnnxPolicy(policy).observation_layout[:7]]
    return steps


def foreign_network(policy: Path, conv: Convention, oldest_first: bool = False) -> torch.nn.Module:
    """Our policy as the foreign network: frame by frame newest first (rl_sar's time
    priority), or term by term oldest first (Isaac Lab's CircularBuffer)."""
    h = past_frames(policy)
    frames = tuple(range(h, -1, -1)) if oldest_first else tuple(range(h + 1))
    net = ForeignNetwork(load_onnx(policy / "policy.onnx"), conv, our_scale(policy), frames,
                         "term" if oldest_first else "time")
    return net.eval()


def write_rl_sar(root: Path, ours: Path, conv: Convention) -> Path:
    """An rl_sar policy folder: base.yaml (the robot's joint order: Unitree's SDK order, ours)
    and config.yaml with ``joint_mapping`` (policy joint i is the robot's joint mapping[i])."""
    folder = root / "go2" / "ours"
    folder.mkdir(parents=True)
    base = {"dt": c.PHYSICS_DT, "decimation": int(round(c.CONTROL_DT / c.PHYSICS_DT)), "num_of_dofs": 12,
            "joint_names": list(c.JOINT_NAMES), "wheel_indices": []}
    keys = {"lin_vel": "lin_vel_scale", "ang_vel": "ang_vel_scale", "commands": "commands_scale",
            "dof_pos": "dof_pos_scale", "dof_vel": "dof_vel_scale"}
    config: dict[str, Any] = {
        "model_name": "policy.pt", "num_observations": 48, "observations": conv.terms,
        "observations_history": list(range(past_frames(ours) + 1)), "observations_history_priority": "time",
        "clip_obs": 100.0, "clip_actions_lower": [-100.0] * 12, "clip_actions_upper": [100.0] * 12,
        "rl_kp": [conv.kp] * 12, "rl_kd": [conv.kd] * 12, "action_scale": conv.action_scale.tolist(),
        "default_dof_pos": conv.default_pos.tolist(), "joint_mapping": conv.ours.tolist(),
        **{keys[t]: (conv.scale(t).tolist() if t == "commands" else float(conv.scale(t)[0])) for t in keys},
    }
    (root / "go2" / "base.yaml").write_text(yaml.safe_dump({"go2": base}))
    (folder / "config.yaml").write_text(yaml.safe_dump({"go2/ours": config}))
    torch.jit.save(torch.jit.script(foreign_network(ours, conv)), str(folder / "policy.pt"))
    return folder


def write_unitree_deploy(root: Path, ours: Path, conv: Convention) -> Path:
    """unitree_rl_gym's deploy YAML (its Go2 variant, 48 values with the linear velocity
    first; the joint order is its MJCF's, legged_gym's) and the TorchScript it points to."""
    assert past_frames(ours) == 0  # deploy_mujoco.py stacks no history
    configs = root / "deploy" / "deploy_mujoco" / "configs"
    configs.mkdir(parents=True)
    (root / "deploy" / "pre_train" / "go2").mkdir(parents=True)
    torch.jit.save(torch.jit.script(foreign_network(ours, conv)),
                   str(root / "deploy" / "pre_train" / "go2" / "ours.pt"))
    config = {"policy_path": "{LEGGED_GYM_ROOT_DIR}/deploy/pre_train/go2/ours.pt",
              "xml_path": "{LEGGED_GYM_ROOT_DIR}/resources/robots/go2/scene.xml", "simulation_duration": 60.0,
              "simulation_dt": c.PHYSICS_DT, "control_decimation": int(round(c.CONTROL_DT / c.PHYSICS_DT)),
              "kps": [conv.kp] * 12, "kds": [conv.kd] * 12, "default_angles": conv.default_pos.tolist(),
              "lin_vel_scale": float(conv.scale("lin_vel")[0]), "ang_vel_scale": float(conv.scale("ang_vel")[0]),
              "dof_pos_scale": float(conv.scale("dof_pos")[0]), "dof_vel_scale": float(conv.scale("dof_vel")[0]),
              "action_scale": float(conv.action_scale[0]), "cmd_scale": conv.scale("commands").tolist(),
              "num_actions": 12, "num_obs": 48, "cmd_init": [0.5, 0.0, 0.0]}
    path = configs / "go2.yaml"
    path.write_text(yaml.safe_dump(config, default_flow_style=None, sort_keys=False))
    return path


def write_isaac_lab(root: Path, ours: Path, conv: Convention) -> Path:
    """An Isaac Lab run folder (params/env.yaml as Isaac Lab dumps it, exported/policy.onnx)
    of its Go2 flat velocity task, with our servo gains and no clip that binds."""
    cfg = env_cfg(robot_lab=False)
    group = cfg["observations"]["policy"]
    group["joint_vel"]["clip"] = (-100.0, 100.0)
    group["history_length"] = past_frames(ours) + 1 if past_frames(ours) else None
    legs = cfg["scene"]["robot"]["actuators"]["base_legs"]
    legs.update(stiffness=conv.kp, damping=conv.kd)
    return write_run(root, cfg, foreign_network(ours, conv, oldest_first=True), onnx=True)


def joint_targets(policy: OnnxPolicy, obs: np.ndarray, action_scale: float) -> np.ndarray:
    """The servo targets a joint_pos policy commands for observations taken with
    ``last_action`` in units of ``action_scale``."""
    return c.DEFAULT_POSE + action_scale * policy(obs)


def columns(policy: OnnxPolicy) -> dict[tuple[int, str], np.ndarray]:
    """(frame, block) -> the policy's observation columns: frame 0 the present blocks,
    frame k the k-th entry of its history (the blocks of ``history_blocks``, in order)."""
    layout = policy.observation_layout
    slices = layout_slices(layout)
    out = {(0, b): np.arange(slices[b].start, slices[b].stop) for b, _ in layout if b != "history"}
    options = policy.metadata.get("task_options") or {}
    sizes, start = dict(layout), slices["history"].start if "history" in slices else 0
    for k in range(1, int(options.get("history_steps", 0)) + 1):
        for b in options["history_blocks"]:
            out[(k, b)] = np.arange(start, start + sizes[b])
            start += sizes[b]
    return out


def assert_same_policy(imported: OnnxPolicy, ours: OnnxPolicy, options: dict[str, Any]) -> None:
    obs = recorded_observations(imported, options)  # under the train randomization: noise, pushes, resets
    theirs, mine = columns(imported), columns(ours)
    assert set(theirs) == set(mine)
    as_ours = np.zeros((len(obs), ours.obs_size), np.float32)
    scale = our_scale(ours.path.parent)
    for key, cols in mine.items():  # the same values, last actions in our policy's units
        as_ours[:, cols] = obs[:, theirs[key]] * (ACTION_SCALE / scale if key[1] == "last_action" else 1.0)
    diff = np.abs(joint_targets(imported, obs, ACTION_SCALE) - joint_targets(ours, as_ours, scale))
    assert float(diff.max()) <= TOLERANCE, float(diff.max())


def assert_same_sim2sim(imported: OnnxPolicy, ours: OnnxPolicy) -> None:
    a = tracking_table(imported, episodes=4, seconds=2.0, dr="none")
    b = tracking_table(ours, episodes=4, seconds=2.0, dr="none")
    for x, y in zip(a, b, strict=True):
        assert x.falls == y.falls, (x, y)
        np.testing.assert_allclose(x.achieved, y.achieved, atol=1e-3, err_msg=x.command)


UNITREE = dataclasses.replace(ISAAC_GYM, action_scale=np.full(12, 0.25))
"""unitree_rl_gym's deploy YAML has one action scale."""
CASES = {
    "rl_sar": (write_rl_sar, ISAAC_LAB, True),  # robot_lab's policies: Isaac Lab's order through joint_mapping
    "unitree_deploy": (write_unitree_deploy, UNITREE, False),
    "isaac_lab": (write_isaac_lab, ISAAC_LAB, True),
}
"""format -> its writer, its conventions, whether the walking policy (with its history) fits it."""


@pytest.mark.heavy
@pytest.mark.parametrize("fmt", list(CASES))
def test_our_policy_survives_a_round_trip_through_each_foreign_format(ours: Path, tmp_path: Path, fmt: str) -> None:
    write, conv, walking = CASES[fmt]
    policy = WALKING if walking else ours
    spec = READERS[fmt].read(write(tmp_path / "foreign", policy, conv))
    assert spec.joint_names == conv.joint_names
    meta = import_policy(spec, tmp_path / "out", check=False)
    imported, own = OnnxPolicy(tmp_path / "out"), OnnxPolicy(policy)
    assert meta["task_options"]["servo_kp"] == [c.KP] * 12
    assert meta["task_options"].get("history_steps", 0) == past_frames(policy)
    assert_same_policy(imported, own, meta["task_options"])
    assert_same_sim2sim(imported, own)
