"""unitree_rl_gym's deploy YAMLs (``deploy/deploy_mujoco/configs/<robot>.yaml``) with the
TorchScript policy they name: the observation and action that ``deploy_mujoco.py``
builds around it, reimplemented.

Read: ``policy_path`` (``{LEGGED_GYM_ROOT_DIR}`` is the repository holding the YAML, or
``--policy``), ``simulation_dt`` x ``control_decimation``, ``kps``, ``kds``,
``default_angles`` (the MJCF's joint order), ``ang_vel_scale``, ``dof_pos_scale``,
``dof_vel_scale``, ``cmd_scale``, ``action_scale``, ``num_actions`` (12) and ``num_obs``:

* 45: angular velocity, gravity, command, joint positions, joint velocities, previous
  action (deploy_mujoco.py without its gait phase);
* 48: base linear velocity (``lin_vel_scale``) first, as the Go2 variant
  (``deploy_go2.py``) builds it;
* 47: the two gait-phase terms (sin, cos) the humanoids read: refused.

Neither observation nor action is clipped there; the target is ``default_angles +
action_scale * action``. The joint order is the MJCF's (its ``qpos``/actuators), which the
YAML does not name: ``--joint-order``, by default legged_gym's Go2 order (FL, FR, RL, RR,
hip/thigh/calf each: the URDF's depth-first order and the order of the Go2 MJCF beside it).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from sim2real.policies.importers.spec import NO_CLIP, ForeignSpec, finite_number, parse_joint_order, read_yaml_mapping
from sim2real.sim.core.errors import ConfigError
from sim2real.sim.quadruped import constants as c

FILES = ("policy", "joint_order")
"""The ``sim2real import`` options this format takes (``--policy``, ``--joint-order``)."""
LEGGED_GYM_ORDER = [f"{leg}_{j}_joint" for leg in ("FL", "FR", "RL", "RR") for j in ("hip", "thigh", "calf")]
BLIND = ["ang_vel", "gravity_vec", "commands", "dof_pos", "dof_vel", "actions"]
TERMS = {45: BLIND, 48: ["lin_vel", *BLIND]}
"""deploy_mujoco's observation by ``num_obs`` (12 joints)."""
ROOT = "{LEGGED_GYM_ROOT_DIR}"


def _policy_file(config_path: Path, policy_path: Any) -> Path:
    """``policy_path`` with ``{LEGGED_GYM_ROOT_DIR}`` as the repository the YAML sits in
    (``<root>/deploy/deploy_mujoco/configs/``); a relative path is relative to the YAML."""
    text = str(policy_path)
    if ROOT in text:
        folder = config_path.resolve().parent
        if [p.name for p in (folder, folder.parent, folder.parent.parent)] != ["configs", "deploy_mujoco", "deploy"]:
            raise ConfigError("policy_path", f"{text} is relative to the repository, but {config_path} is not in "
                                             "one's deploy/deploy_mujoco/configs/: give --policy")
        text = text.replace(ROOT, str(folder.parents[2]))
    path = Path(text)
    return path if path.is_absolute() else config_path.parent / path


def read(path: Path, policy: Path | None = None, joint_order: str | None = None) -> ForeignSpec:
    """The spec of the deploy YAML at ``path``."""
    cfg = read_yaml_mapping(path, "a unitree_rl_gym deploy config")

    def get(key: str) -> Any:
        if key not in cfg:
            raise ConfigError(key, f"missing from {path}")
        return cfg[key]

    def number(key: str) -> float:
        return finite_number(get(key), key)

    def vector(key: str, size: int) -> np.ndarray:
        value = get(key)
        if not isinstance(value, list) or len(value) != size or not all(
                isinstance(v, (int, float)) and not isinstance(v, bool) for v in value):
            raise ConfigError(key, f"needs {size} numbers, got {value!r}")
        return np.asarray(value, dtype=float)

    if get("num_actions") != c.NUM_JOINTS:
        raise ConfigError("num_actions", f"{get('num_actions')}: the quadruped has {c.NUM_JOINTS} joints")
    num_obs = get("num_obs")
    if num_obs == 47:
        raise ConfigError("num_obs", "47 reads deploy_mujoco.py's gait phase (sin, cos): not supported")
    if isinstance(num_obs, bool) or not isinstance(num_obs, int) or num_obs not in TERMS:
        raise ConfigError("num_obs", f"{num_obs}: supported are 45 (no linear velocity) and 48 (with it)")
    terms = TERMS[num_obs]
    names = parse_joint_order(joint_order, LEGGED_GYM_ORDER)
    policy_file = policy or _policy_file(path, get("policy_path"))
    if not policy_file.is_file():
        raise ConfigError("policy_path", f"{policy_file} does not exist (give --policy)")
    scales = {"ang_vel": np.full(3, number("ang_vel_scale")), "commands": vector("cmd_scale", 3),
              "dof_pos": np.full(c.NUM_JOINTS, number("dof_pos_scale")),
              "dof_vel": np.full(c.NUM_JOINTS, number("dof_vel_scale"))}
    notes = [f"joint order (the MJCF's; {'--joint-order' if joint_order else 'assumed: legged_gym Go2'}): {names}",
             "observation and action unclipped, as in deploy_mujoco.py"]
    if "lin_vel" in terms:
        scales["lin_vel"] = np.full(3, number("lin_vel_scale"))
        notes.append("lin_vel: the base velocity in the body frame, as legged_gym trains it (deploy_go2.py feeds "
                     "MuJoCo's world-frame qvel[:3])")
    return ForeignSpec(
        source_format="unitree_deploy",
        policy_file=policy_file,
        terms=list(terms),
        scales=scales,
        joint_names=names,
        default_pos=vector("default_angles", c.NUM_JOINTS),
        action_scale=np.full(c.NUM_JOINTS, number("action_scale")),
        action_clip=(np.full(c.NUM_JOINTS, -NO_CLIP), np.full(c.NUM_JOINTS, NO_CLIP)),
        obs_clip=NO_CLIP,
        kp=vector("kps", c.NUM_JOINTS),
        kd=vector("kds", c.NUM_JOINTS),
        control_dt=number("simulation_dt") * number("control_decimation"),
        notes=notes,
    )
