"""Importing an Isaac Lab run: env.yaml written as Isaac Lab dumps it (``yaml.dump`` of the
configclasses: ``!!python/tuple``, slices, ``module:name`` functions, regex-keyed joint
tables), the network as ``policy.pt`` or ``policy.onnx``; the imported graph commands the
joint targets Isaac Lab's observation and action managers would, reimplemented here
(clip then scale per term, CircularBuffer history oldest first term by term, regex
resolution, preserve_order, JointPositionAction); mistakes are refused with one line."""

from __future__ import annotations

import contextlib
import copy
import sys
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
import yaml
from foreign_policy import small_network

from sim2real.cli import main
from sim2real.policies.deploy import OnnxPolicy
from sim2real.policies.importers import READERS
from sim2real.policies.importers.writer import ACTION_SCALE, import_policy
from sim2real.sim import make_vec
from sim2real.sim.core.errors import ConfigError
from sim2real.sim.quadruped import constants as c
from sim2real.sim.quadruped.velocity import Velocity

MDP = "isaaclab.envs.mdp.observations:"
ISAAC_ORDER = [f"{leg}_{j}_joint" for j in ("hip", "thigh", "calf") for leg in ("FL", "FR", "RL", "RR")]
SDK_ORDER = list(c.JOINT_NAMES)  # robot_lab's preserve_order list for the Go2
DEFAULT = {"FL_hip_joint": 0.1, "RL_hip_joint": 0.1, "FR_hip_joint": -0.1, "RR_hip_joint": -0.1,
           "FL_thigh_joint": 0.8, "FR_thigh_joint": 0.8, "RL_thigh_joint": 1.0, "RR_thigh_joint": 1.0}
ALL = slice(None)  # SceneEntityCfg's joint_ids default, dumped as !!python/object/apply:builtins.slice


def asset_cfg(joint_names: Any = None, preserve_order: bool = False) -> dict[str, Any]:
    return {"name": "robot", "joint_names": joint_names, "joint_ids": ALL, "fixed_tendon_names": None,
            "fixed_tendon_ids": ALL, "body_names": None, "body_ids": ALL, "preserve_order": preserve_order}


def term(func: str, scale: Any = None, clip: Any = None, params: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"func": MDP + func, "params": params or {}, "modifiers": None,
            "noise": {"func": "isaaclab.utils.noise.noise_model:uniform_noise", "operation": "add", "n_min": -0.1,
                      "n_max": 0.1}, "clip": clip, "scale": scale, "history_length": 0, "flatten_history_dim": True}


def env_cfg(robot_lab: bool) -> dict[str, Any]:
    """Isaac Lab's Go2 flat velocity task (``robot_lab``: robot_lab's Go2 changes: SDK joint
    order preserved, no linear velocity, per-joint action scale, clips, a history of 3)."""
    joints = asset_cfg(SDK_ORDER, True) if robot_lab else asset_cfg()
    policy = {
        "concatenate_terms": True, "concatenate_dim": -1, "enable_corruption": True,
        "history_length": 3 if robot_lab else None, "flatten_history_dim": True,
        "base_lin_vel": None if robot_lab else term("base_lin_vel", clip=(-100.0, 100.0)),
        "base_ang_vel": term("base_ang_vel", scale=0.25, clip=(-100.0, 100.0)),
        "projected_gravity": term("projected_gravity"),
        "velocity_commands": term("generated_commands", params={"command_name": "base_velocity"}),
        "joint_pos": term("joint_pos_rel", params={"asset_cfg": joints}),
        "joint_vel": term("joint_vel_rel", scale=0.05, clip=(-0.3, 0.3), params={"asset_cfg": joints}),
        "actions": term("last_action", clip=(-100.0, 100.0)),
        "height_scan": None,
    }
    action = {"class_type": "isaaclab.envs.mdp.actions.joint_actions:JointPositionAction", "asset_name": "robot",
              "debug_vis": False, "clip": None, "joint_names": [".*"], "scale": 0.25, "offset": 0.0,
              "preserve_order": False, "use_default_offset": True}
    if robot_lab:
        action.update(joint_names=SDK_ORDER, preserve_order=True, clip={".*": (-100.0, 100.0)},
                      scale={".*_hip_joint": 0.125, "^(?!.*_hip_joint).*": 0.25})
    return {
        "viewer": {"eye": (7.5, 7.5, 7.5), "resolution": (1280, 720)},
        "sim": {"physics_prim_path": "/physicsScene", "dt": 0.005, "render_interval": 4, "gravity": (0.0, 0.0, -9.81)},
        "decimation": 4,
        "scene": {"num_envs": 4096, "robot": {
            "class_type": "isaaclab.assets.articulation.articulation:Articulation",
            "init_state": {"pos": (0.0, 0.0, 0.4), "rot": (1.0, 0.0, 0.0, 0.0),
                           "joint_pos": {".*L_hip_joint": 0.1, ".*R_hip_joint": -0.1, "F[L,R]_thigh_joint": 0.8,
                                         "R[L,R]_thigh_joint": 1.0, ".*_calf_joint": -1.5},
                           "joint_vel": {".*": 0.0}},
            "soft_joint_pos_limit_factor": 0.9,
            "actuators": {"base_legs": {
                "class_type": "isaaclab.actuators.actuator_pd:DCMotor",
                "joint_names_expr": [".*_hip_joint", ".*_thigh_joint", ".*_calf_joint"],
                "effort_limit": 23.5, "velocity_limit": 30.0, "control_mode": "position",
                "stiffness": {".*_hip_joint": 20.0, ".*_(thigh|calf)_joint": 25.0} if robot_lab else 25.0,
                "damping": 0.5, "armature": None, "friction": 0.0, "saturation_effort": 23.5}}}},
        "observations": {"policy": policy},
        "actions": {"joint_pos": action},
        "events": {"reset_base": {"func": "isaaclab.envs.mdp.events:reset_root_state_uniform",
                                  "params": {"pose_range": {"x": (-0.5, 0.5)}, "asset_cfg": asset_cfg()}}},
        "commands": {"base_velocity": {
            "class_type": "isaaclab.envs.mdp.commands.velocity_command:UniformVelocityCommand",
            "resampling_time_range": (10.0, 10.0), "heading_command": True,
            "ranges": {"lin_vel_x": (-1.0, 1.0), "lin_vel_y": (-1.0, 1.0), "ang_vel_z": (-1.0, 1.0)}}},
    }


def write_run(root: Path, cfg: dict[str, Any], network: torch.nn.Module, onnx: bool,
              agent: dict[str, Any] | None = None, flow_style: bool | None = False) -> Path:
    """A run folder as Isaac Lab's train.py and play.py leave it; returns the exported policy."""
    (root / "params").mkdir(parents=True, exist_ok=True)
    (root / "exported").mkdir(exist_ok=True)
    text = yaml.dump(cfg, default_flow_style=flow_style, sort_keys=False)  # isaaclab.utils.io.dump_yaml
    assert "!!python/tuple" in text and "!!python/object/apply:builtins.slice" in text
    (root / "params" / "env.yaml").write_text(text)
    (root / "params" / "agent.yaml").write_text(yaml.dump(agent or {"seed": 42, "clip_actions": None}))
    path = root / "exported" / ("policy.onnx" if onnx else "policy.pt")
    if onnx:  # as isaaclab_rl's _OnnxPolicyExporter: opset 11, a batch of one, obs -> actions
        with contextlib.redirect_stdout(sys.stderr), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            obs = torch.zeros(1, next(network.parameters()).shape[1])
            torch.onnx.export(network, (obs,), str(path), opset_version=11, input_names=["obs"],
                              output_names=["actions"], dynamo=False)
    else:
        torch.jit.save(torch.jit.script(network), str(path))
    return path


class IsaacLabReference:
    """Isaac Lab's ObservationManager and JointPositionAction for one robot, from our state."""

    def __init__(self, robot_lab: bool, network: torch.nn.Module, clip_actions: float | None) -> None:
        self.order = SDK_ORDER if robot_lab else ISAAC_ORDER  # actions, joint_pos and joint_vel
        self.ours = np.array([c.JOINT_NAMES.index(n) for n in self.order])
        self.default = np.array([DEFAULT.get(n, -1.5) for n in self.order])
        self.scale = np.array([0.125 if "hip" in n else 0.25 for n in self.order]) if robot_lab else 0.25
        # (name, clip, scale) in the group's order
        self.terms = [("lin_vel", 100.0, 1.0)] * (not robot_lab) + [
            ("ang_vel", 100.0, 0.25), ("gravity", None, 1.0), ("command", None, 1.0), ("joint_pos", None, 1.0),
            ("joint_vel", 0.3, 0.05), ("actions", 100.0, 1.0)]
        self.history = 3 if robot_lab else 0
        self.buffers: dict[str, list[np.ndarray]] = {}
        self.network, self.clip_actions, self.raw = network, clip_actions, np.zeros(12)

    def targets(self, st: Any, i: int, command: np.ndarray) -> np.ndarray:
        values = {"lin_vel": st.lin_vel[i], "ang_vel": st.ang_vel[i], "gravity": st.gravity[i], "command": command,
                  "joint_pos": st.joint_pos[i][self.ours] - self.default, "joint_vel": st.joint_vel[i][self.ours],
                  "actions": self.raw}
        parts = []
        for name, clip, scale in self.terms:
            x = values[name] if clip is None else np.clip(values[name], -clip, clip)
            x = x * scale
            if self.history:  # CircularBuffer: oldest first; the first push after a reset fills it
                buffer = self.buffers.get(name) or [x] * self.history
                self.buffers[name] = buffer = [*buffer[1:], x]
                x = np.concatenate(buffer)
            parts.append(x)
        with torch.no_grad():
            raw = self.network(torch.as_tensor(np.concatenate(parts), dtype=torch.float32)[None])[0].numpy()
        if self.clip_actions is not None:  # RslRlVecEnvWrapper
            raw = np.clip(raw, -self.clip_actions, self.clip_actions)
        self.raw = raw
        processed = np.clip(raw * self.scale + self.default, -100.0, 100.0)
        target = np.empty(12)
        target[self.ours] = processed
        return target


@pytest.mark.parametrize(("robot_lab", "onnx"), [(False, False), (True, True)])
def test_the_imported_graph_commands_what_isaac_labs_managers_would(tmp_path: Path, robot_lab: bool,
                                                                    onnx: bool) -> None:
    obs_size = 45 * 3 if robot_lab else 48
    network = small_network(obs_size, seed=obs_size)
    clip_actions = 0.1 if robot_lab else None  # active at times, as the joint velocity clip
    policy_file = write_run(tmp_path / "run", env_cfg(robot_lab), network, onnx,
                            agent={"seed": 42, "clip_actions": clip_actions}, flow_style=None if robot_lab else False)
    spec = READERS["isaac_lab"].read(policy_file)
    assert spec.joint_names == (SDK_ORDER if robot_lab else ISAAC_ORDER)
    assert spec.history == ([2, 1, 0] if robot_lab else [0]) and spec.control_dt == pytest.approx(0.02)
    if robot_lab:
        meta = import_policy(spec, tmp_path / "out", check=False)
    else:  # through the command line, the run folder found from the policy file
        assert main(["import", "isaac_lab", str(policy_file), "--out", str(tmp_path / "out"), "--no-sim-check"]) == 0
        meta = OnnxPolicy(tmp_path / "out").metadata
    kp = np.array([20.0 if "hip" in n else 25.0 for n in c.JOINT_NAMES]) if robot_lab else np.full(12, 25.0)
    np.testing.assert_allclose(meta["task_options"]["servo_kp"], kp)
    policy = OnnxPolicy(tmp_path / "out")
    env = make_vec("QuadrupedVelocity", 3, seed=1, dr="none", **meta["task_options"])
    task = env.task
    assert isinstance(task, Velocity)
    references = [IsaacLabReference(robot_lab, network, clip_actions) for _ in range(3)]
    obs, worst = env.reset(), 0.0
    for k in range(60):
        action = policy(np.asarray(obs))
        st = task.base_state(env.engine.phys)
        for i, reference in enumerate(references):
            want = reference.targets(st, i, task.command[i])
            # At a reset our previous action is our default pose, Isaac Lab's a zero action (and
            # its history holds that); the two closed loops converge within ~20 steps.
            if k >= 30:
                worst = max(worst, float(np.max(np.abs(c.DEFAULT_POSE + ACTION_SCALE * action[i] - want))))
        obs, *_ = env.step(action)
    assert worst <= 1e-5, worst


def _with(cfg: dict[str, Any], where: str, value: Any) -> dict[str, Any]:
    """``cfg`` with the setting at ``where`` (dotted; ``/`` separates a key holding dots) set to ``value``."""
    out = copy.deepcopy(cfg)
    *path, last = where.split("/") if "/" in where else where.split(".")
    node = out
    for key in path:
        node = node[key]
    node[last] = value
    return out


BASE = env_cfg(robot_lab=False)


@pytest.mark.parametrize(("cfg", "field"), [
    (_with(BASE, "observations.policy.height_scan", {**term("height_scan"), "clip": (-1.0, 1.0)}), "height_scan"),
    (_with(BASE, "scene.robot.actuators.base_legs.joint_names_expr", [".*_hip_joint", ".*_knee_joint"]),
     "knee_joint.*match none"),
    (_with(BASE, "scene/robot/init_state/joint_pos/.*_calf_joint", 1.5), "default_dof_pos"),  # a sign mistake
    (_with(BASE, "scene.robot.actuators.base_legs.stiffness", None), "stiffness"),
    (_with(BASE, "observations.policy.joint_vel.clip", (-0.2, 0.3)), "symmetric"),
    (_with(BASE, "observations.policy.joint_pos.params", {"asset_cfg": asset_cfg(SDK_ORDER, True)}), "joint order"),
    (_with(BASE, "actions.joint_pos.use_default_offset", False), "offset"),
    (_with(BASE, "observations.policy.joint_pos.func", "robot_lab.mdp:joint_pos_rel_with_bias"), "not supported"),
    (_with(BASE, "observations.policy.base_lin_vel.history_length", 2), "different histories"),
])
def test_mistakes_in_env_yaml_are_refused(tmp_path: Path, cfg: dict[str, Any], field: str) -> None:
    policy_file = write_run(tmp_path, cfg, small_network(48, seed=0), onnx=False)
    with pytest.raises(ConfigError, match=field) as info:
        READERS["isaac_lab"].read(policy_file)
    assert "\n" not in str(info.value)


def test_unreadable_files_and_a_wrong_joint_order_are_refused(tmp_path: Path) -> None:
    policy_file = write_run(tmp_path, BASE, small_network(48, seed=0), onnx=False)
    with pytest.raises(ConfigError, match="--joint-order"):
        READERS["isaac_lab"].read(policy_file, joint_order="FL_hip_joint,FR_hip_joint")
    (tmp_path / "params" / "env.yaml").write_text("observations:\n  policy: [unclosed\n")
    with pytest.raises(ConfigError, match="not readable YAML") as info:
        READERS["isaac_lab"].read(policy_file)
    assert "\n" not in str(info.value)
    with pytest.raises(ConfigError, match="--env-yaml"):
        READERS["isaac_lab"].read(policy_file, env_yaml=tmp_path / "missing.yaml")
    (tmp_path / "params" / "env.yaml").write_text("a: !!python/object/apply:os.system ['echo unsafe']\n")
    with pytest.raises(ConfigError, match="scene"):  # the tag read as data: nothing runs
        READERS["isaac_lab"].read(policy_file)


def test_a_run_with_only_its_hydra_dump_imports_as_with_params_env_yaml(tmp_path: Path) -> None:
    """Isaac Lab's Hydra entry points leave ``.hydra/config.yaml`` with the env config under
    ``env`` and the agent's under ``agent``; a run that ships only that failed with "scene:
    missing or not a mapping"."""
    network = small_network(48, seed=0)
    reference = READERS["isaac_lab"].read(write_run(tmp_path / "params_run", BASE, network, onnx=False))
    policy_file = write_run(tmp_path / "hydra_run", BASE, network, onnx=False)
    params = tmp_path / "hydra_run" / "params"
    for f in params.iterdir():
        f.unlink()
    params.rmdir()
    hydra = tmp_path / "hydra_run" / ".hydra"
    hydra.mkdir()
    (hydra / "config.yaml").write_text(yaml.dump({"env": BASE, "agent": {"seed": 42, "clip_actions": 0.1}},
                                                 sort_keys=False))
    for spec in (READERS["isaac_lab"].read(policy_file),  # found from the policy, as params/env.yaml is
                 READERS["isaac_lab"].read(policy_file, env_yaml=hydra / "config.yaml")):
        assert spec.joint_names == reference.joint_names and spec.terms == reference.terms
        np.testing.assert_array_equal(spec.kp, reference.kp)
        np.testing.assert_array_equal(spec.default_pos, reference.default_pos)
        assert spec.action_clip[1].max() == pytest.approx(0.1)  # the agent's clip_actions, from the same dump
        assert any(".hydra/config.yaml" in n for n in spec.notes)


UNITREE_GO2HV = {  # unitree_rl_lab's UnitreeActuatorCfg_Go2HV as its Go2 config sets it, dumped
    "class_type": "unitree_rl_lab.assets.robots.unitree_actuators:UnitreeActuator",
    "joint_names_expr": [".*"], "effort_limit": 23.5, "velocity_limit": 30.0, "effort_limit_sim": None,
    "velocity_limit_sim": None, "stiffness": 25.0, "damping": 0.5, "armature": None, "friction": None,
    "min_delay": 0, "max_delay": 0, "X1": 13.5, "X2": 30, "Y1": 20.2, "Y2": 23.4, "Fs": 0.2, "Fd": 0.1, "Va": 0.01}


def test_unitrees_own_actuator_is_read_with_its_torque_speed_limits(tmp_path: Path) -> None:
    cfg = _with(BASE, "scene.robot.actuators.base_legs", UNITREE_GO2HV)
    spec = READERS["isaac_lab"].read(write_run(tmp_path, cfg, small_network(48, seed=0), onnx=False))
    np.testing.assert_array_equal(spec.kp, np.full(12, 25.0))
    np.testing.assert_array_equal(spec.kd, np.full(12, 0.5))
    note = next(n for n in spec.notes if "UnitreeActuator" in n)
    for figure in ("20.2", "23.4", "13.5", "30", "23.5"):
        assert figure in note
    with pytest.raises(ConfigError, match="Y1"):
        READERS["isaac_lab"].read(write_run(tmp_path / "bad", _with(cfg, "scene.robot.actuators.base_legs.Y1", "x"),
                                            small_network(48, seed=0), onnx=False))
