"""Importing a policy through unitree_rl_gym's deploy YAML: the policy file is found
through ``{LEGGED_GYM_ROOT_DIR}`` in the repository the YAML sits in, the joint order is
the MJCF's (legged_gym's Go2 order by default, or ``--joint-order``), and the imported
graph commands what ``deploy_mujoco.py`` computes (reimplemented here: unclipped
observation, ``default_angles + action_scale * action``); the gait-phase observation and
other mistakes are refused with one line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
import yaml
from foreign_policy import small_network

from sim2real.policies.deploy import OnnxPolicy
from sim2real.policies.importers import READERS
from sim2real.policies.importers.writer import ACTION_SCALE, import_policy
from sim2real.sim import make_vec
from sim2real.sim.core.errors import ConfigError
from sim2real.sim.quadruped import constants as c
from sim2real.sim.quadruped.velocity import Velocity

MJCF_ORDER = [f"{leg}_{j}_joint" for leg in ("FL", "FR", "RL", "RR") for j in ("hip", "thigh", "calf")]
ANGLES = {"FL": [0.1, 0.8, -1.5], "FR": [-0.1, 0.8, -1.5], "RL": [0.1, 1.0, -1.5], "RR": [-0.1, 1.0, -1.5]}
CONFIG: dict[str, Any] = {  # deploy/deploy_mujoco/configs/go2.yaml's settings
    "policy_path": "{LEGGED_GYM_ROOT_DIR}/deploy/pre_train/go2/motion.pt",
    "xml_path": "{LEGGED_GYM_ROOT_DIR}/resources/robots/go2/scene.xml",
    "simulation_duration": 60.0, "simulation_dt": 0.002, "control_decimation": 10,
    "kps": [20.0] * 12, "kds": [0.5] * 12,
    "default_angles": [a for leg in ("FL", "FR", "RL", "RR") for a in ANGLES[leg]],
    "lin_vel_scale": 2.0, "ang_vel_scale": 0.25, "dof_pos_scale": 1.0, "dof_vel_scale": 0.05, "action_scale": 0.25,
    "cmd_scale": [2.0, 2.0, 0.25], "num_actions": 12, "num_obs": 48, "cmd_init": [0.5, 0, 0],
}


def write_repo(root: Path, network: torch.nn.Module, **changes: Any) -> Path:
    """unitree_rl_gym's layout: the YAML in deploy/deploy_mujoco/configs/, the policy in deploy/pre_train/go2/."""
    configs = root / "deploy" / "deploy_mujoco" / "configs"
    configs.mkdir(parents=True, exist_ok=True)
    (root / "deploy" / "pre_train" / "go2").mkdir(parents=True, exist_ok=True)
    torch.jit.save(torch.jit.script(network), str(root / "deploy" / "pre_train" / "go2" / "motion.pt"))
    path = configs / "go2.yaml"
    path.write_text(yaml.safe_dump({**CONFIG, **changes}, default_flow_style=None, sort_keys=False))
    return path


def deploy_mujoco_obs(st: Any, i: int, command: np.ndarray, order: np.ndarray, default: np.ndarray,
                      action: np.ndarray, lin_vel: bool) -> np.ndarray:
    """deploy_mujoco.py's observation for one robot (MJCF joint j is our joint order[j])."""
    parts = [st.lin_vel[i] * 2.0] if lin_vel else []
    parts += [st.ang_vel[i] * 0.25, st.gravity[i], command * [2.0, 2.0, 0.25],
              (st.joint_pos[i][order] - default) * 1.0, st.joint_vel[i][order] * 0.05, action]
    return np.concatenate(parts)


@pytest.mark.parametrize(("num_obs", "sdk_order"), [(48, False), (45, True)])
def test_the_imported_graph_commands_what_deploy_mujoco_would(tmp_path: Path, num_obs: int, sdk_order: bool) -> None:
    """The Go2 variant (48, linear velocity first) in legged_gym's order; the blind 45 with
    an MJCF in the SDK's order given by a --joint-order file."""
    network = small_network(num_obs, seed=num_obs)
    names = list(c.JOINT_NAMES) if sdk_order else MJCF_ORDER
    default = np.array([ANGLES[n[:2]][("hip", "thigh", "calf").index(n.split("_")[1])] for n in names])
    path = write_repo(tmp_path / "unitree_rl_gym", network, num_obs=num_obs, default_angles=default.tolist())
    options: dict[str, Any] = {}
    if sdk_order:
        (tmp_path / "order.txt").write_text("# the MJCF's joints\n" + "\n".join(names) + "\n")
        options["joint_order"] = str(tmp_path / "order.txt")
    spec = READERS["unitree_deploy"].read(path, **options)
    assert spec.joint_names == names and spec.control_dt == pytest.approx(0.02)
    assert spec.policy_file == tmp_path / "unitree_rl_gym" / "deploy" / "pre_train" / "go2" / "motion.pt"
    meta = import_policy(spec, tmp_path / "out", check=False)
    assert meta["task_options"]["servo_kp"] == [20.0] * 12
    policy = OnnxPolicy(tmp_path / "out")
    order = np.array([c.JOINT_NAMES.index(n) for n in names])
    env = make_vec("QuadrupedVelocity", 3, seed=1, dr="none", **meta["task_options"])
    task = env.task
    assert isinstance(task, Velocity)
    obs, previous, worst = env.reset(), np.zeros((3, 12)), 0.0
    for k in range(40):
        action = policy(np.asarray(obs))
        st = task.base_state(env.engine.phys)
        for i in range(3):
            x = deploy_mujoco_obs(st, i, task.command[i], order, default, previous[i], num_obs == 48)
            with torch.no_grad():
                previous[i] = network(torch.as_tensor(x, dtype=torch.float32)[None])[0].numpy()
            target = np.empty(12)
            target[order] = previous[i] * 0.25 + default
            if k >= 4:  # the previous action at a reset differs (our default pose, their zero): it fades
                worst = max(worst, float(np.max(np.abs(c.DEFAULT_POSE + ACTION_SCALE * action[i] - target))))
        obs, *_ = env.step(action)
    assert worst <= 1e-5, worst


@pytest.mark.parametrize(("change", "field"), [
    ({"num_obs": 47}, "gait phase"),
    ({"num_obs": 41, "num_actions": 10}, "num_actions"),
    ({"kps": [20.0] * 11}, "kps"),
    ({"default_angles": [0.1, 0.8, 1.5] * 4}, "default_dof_pos"),  # calf sign flipped: outside its range
    ({"cmd_scale": 2.0}, "cmd_scale"),
    ({"policy_path": "{LEGGED_GYM_ROOT_DIR}/logs/missing.pt"}, "policy_path"),
    ({"ang_vel_scale": None}, "ang_vel_scale"),
])
def test_mistakes_in_the_deploy_yaml_are_refused(tmp_path: Path, change: dict[str, Any], field: str) -> None:
    path = write_repo(tmp_path, small_network(48, seed=0), **change)
    with pytest.raises(ConfigError, match=field) as info:
        READERS["unitree_deploy"].read(path)
    assert "\n" not in str(info.value)


def test_the_policy_is_found_or_given(tmp_path: Path) -> None:
    """Outside a unitree_rl_gym checkout {LEGGED_GYM_ROOT_DIR} means nothing: --policy names the file."""
    write_repo(tmp_path / "repo", small_network(48, seed=0))
    loose = tmp_path / "go2.yaml"
    loose.write_text(yaml.safe_dump(CONFIG))
    with pytest.raises(ConfigError, match="--policy"):
        READERS["unitree_deploy"].read(loose)
    given = tmp_path / "repo" / "deploy" / "pre_train" / "go2" / "motion.pt"
    assert READERS["unitree_deploy"].read(loose, policy=given).policy_file == given
    loose.write_text("policy_path: [unclosed\n")
    with pytest.raises(ConfigError, match="not readable YAML"):
        READERS["unitree_deploy"].read(loose)
