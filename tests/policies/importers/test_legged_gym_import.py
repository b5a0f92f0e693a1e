"""Importing a legged_gym / unitree_rl_gym policy: the configs are parsed (not run), the
joint order comes from the URDF as Isaac Gym orders it (depth-first: FL, FR, RL, RR for
the Go2), and the imported graph commands what legged_gym's ``compute_observations`` and
action scaling would, reimplemented here."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from foreign_policy import small_network

from sim2real.policies.deploy import OnnxPolicy
from sim2real.policies.importers import READERS
from sim2real.policies.importers.writer import ACTION_SCALE, import_policy
from sim2real.sim import make_vec
from sim2real.sim.core.errors import ConfigError
from sim2real.sim.quadruped import constants as c

ISAAC_ORDER = [f"{leg}_{j}_joint" for leg in ("FL", "FR", "RL", "RR") for j in ("hip", "thigh", "calf")]
BASE = '''
from posixpath import join
class BaseConfig:
    pass
class LeggedRobotCfg(BaseConfig):
    class env:
        num_envs = 4096
        num_observations = 48
    class init_state:
        default_joint_angles = {"joint_a": 0.0, "joint_b": 0.0}
    class control:
        stiffness = {"joint_a": 10.0, "joint_b": 15.0}
        damping = {"joint_a": 1.0, "joint_b": 1.5}
        action_scale = 0.5
        decimation = 4
    class normalization:
        class obs_scales:
            lin_vel = 2.0
            ang_vel = 0.25
            dof_pos = 1.0
            dof_vel = 0.05
        clip_observations = 100.
        clip_actions = 100.
    class sim:
        dt = 0.005
class LeggedRobotCfgPPO(BaseConfig):
    seed = 1
'''
ROBOT = '''
from legged_gym.envs.base.legged_robot_config import LeggedRobotCfg, LeggedRobotCfgPPO
class GO2RoughCfg( LeggedRobotCfg ):
    class init_state( LeggedRobotCfg.init_state ):
        pos = [0.0, 0.0, 0.42]
        default_joint_angles = {
            'FL_hip_joint': 0.1, 'RL_hip_joint': 0.1, 'FR_hip_joint': -0.1, 'RR_hip_joint': -0.1,
            'FL_thigh_joint': 0.8, 'RL_thigh_joint': 1., 'FR_thigh_joint': 0.8, 'RR_thigh_joint': 1.,
            'FL_calf_joint': -1.5, 'RL_calf_joint': -1.5, 'FR_calf_joint': -1.5, 'RR_calf_joint': -1.5,
        }
    class control( LeggedRobotCfg.control ):
        control_type = 'P'
        stiffness = {'joint': 20.}
        damping = {'joint': 0.5}
        action_scale = 0.25
        decimation = 4
    class asset( LeggedRobotCfg.asset ):
        file = '{LEGGED_GYM_ROOT_DIR}/resources/robots/go2/urdf/go2.urdf'
class GO2RoughCfgPPO( LeggedRobotCfgPPO ):
    pass
'''


def urdf() -> str:
    """A Go2-shaped kinematic tree (no geometry): legs in the file in FL, FR, RL, RR order."""
    links, joints = ['<link name="base"/>'], []
    for leg in ("FL", "FR", "RL", "RR"):
        parent = "base"
        for j in ("hip", "thigh", "calf", "foot"):
            links.append(f'<link name="{leg}_{j}"/>')
            kind = "fixed" if j == "foot" else "revolute"
            joints.append(f'<joint name="{leg}_{j}_joint" type="{kind}"><parent link="{parent}"/>'
                          f'<child link="{leg}_{j}"/></joint>')
            parent = f"{leg}_{j}"
    return '<robot name="go2">' + "".join(links + joints) + "</robot>"


def write_files(root: Path, network: torch.nn.Module, robot: str = ROBOT) -> dict[str, Path]:
    files = {"config": root / "go2_config.py", "base_config": root / "legged_robot_config.py",
             "urdf": root / "go2.urdf"}
    files["config"].write_text(robot)
    files["base_config"].write_text(BASE)
    files["urdf"].write_text(urdf())
    torch.jit.save(torch.jit.script(network), str(root / "policy_1.pt"))
    return files


@pytest.fixture(scope="module")
def network() -> torch.nn.Module:
    return small_network(48, seed=1)


def test_the_imported_graph_commands_what_legged_gym_would(network: torch.nn.Module, tmp_path: Path) -> None:
    spec = READERS["legged_gym"].read(tmp_path / "policy_1.pt", **write_files(tmp_path, network))
    assert spec.joint_names == ISAAC_ORDER and spec.control_dt == pytest.approx(0.02)
    meta = import_policy(spec, tmp_path / "out", check=False)
    policy = OnnxPolicy(tmp_path / "out")
    assert meta["task_options"]["servo_kp"] == [20.0] * 12
    order = np.array([c.JOINT_NAMES.index(n) for n in ISAAC_ORDER])  # Isaac joint i is our joint order[i]
    default = np.array([0.1, 0.8, -1.5, -0.1, 0.8, -1.5, 0.1, 1.0, -1.5, -0.1, 1.0, -1.5])  # Isaac order
    env = make_vec("QuadrupedVelocity", 3, seed=2, dr="none", **meta["task_options"])
    task = env.task
    obs, prev, worst = env.reset(), np.zeros((3, 12)), 0.0
    for k in range(40):
        action = policy(obs)
        st = task.base_state(env.engine.phys)
        for i in range(3):
            legged = np.concatenate([st.lin_vel[i] * 2.0, st.ang_vel[i] * 0.25, st.gravity[i],
                                     task.command[i] * [2.0, 2.0, 0.25], st.joint_pos[i][order] - default,
                                     st.joint_vel[i][order] * 0.05, prev[i]])
            with torch.no_grad():
                raw = network(torch.as_tensor(np.clip(legged, -100, 100), dtype=torch.float32)[None])[0].numpy()
            prev[i] = raw
            target = np.empty(12)
            target[order] = raw * 0.25 + default
            if k >= 4:  # the previous action at a reset differs (our default pose, their zero): it fades
                worst = max(worst, float(np.max(np.abs(c.DEFAULT_POSE + ACTION_SCALE * action[i] - target))))
        obs, *_ = env.step(action)
    assert worst <= 1e-5, worst


def test_configs_it_cannot_import_are_refused(network: torch.nn.Module, tmp_path: Path) -> None:
    files = write_files(tmp_path, network)
    with pytest.raises(ConfigError, match="num_observations"):  # height measurements
        READERS["legged_gym"].read(tmp_path / "policy_1.pt", **{**files, "base_config": _with(
            tmp_path / "b.py", BASE.replace("num_observations = 48", "num_observations = 235"))})
    with pytest.raises(ConfigError, match="default_joint_angles"):  # a joint the URDF does not have
        READERS["legged_gym"].read(tmp_path / "policy_1.pt", **{**files, "config": _with(
            tmp_path / "c.py", ROBOT.replace("'RR_calf_joint'", "'RR_knee_joint'"))})
    with pytest.raises(ConfigError, match="stiffness"):  # legged_gym's substring rule finds no gain
        READERS["legged_gym"].read(tmp_path / "policy_1.pt", **{**files, "config": _with(
            tmp_path / "d.py", ROBOT.replace("stiffness = {'joint': 20.}", "stiffness = {'hip': 20.}"))})
    with pytest.raises(ConfigError, match="base-config"):
        READERS["legged_gym"].read(tmp_path / "policy_1.pt", config=files["config"])


def _with(path: Path, text: str) -> Path:
    path.write_text(text)
    return path
