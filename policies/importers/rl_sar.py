"""rl_sar's policy folders (``policy/<robot>/<name>/config.yaml`` beside the TorchScript
file, ``policy/<robot>/base.yaml`` one level up): the schema rl_sar uses for the Isaac Gym
(legged_gym, HIMLoco) and Isaac Lab (robot_lab) policies it deploys.

Read: ``observations`` in order with ``lin_vel_scale``, ``ang_vel_scale``,
``commands_scale``, ``dof_pos_scale``, ``dof_vel_scale``; ``clip_obs``; ``default_dof_pos``,
``action_scale``, ``clip_actions_lower/upper``, ``rl_kp``, ``rl_kd`` (the policy's joint
order); ``joint_mapping`` (policy joint i is the robot's joint ``joint_mapping[i]``) and
``joint_names`` (the robot's order, from base.yaml); ``dt`` times ``decimation``;
``observations_history`` (the frames stacked, 0 the latest; HIMLoco reads six) and
``observations_history_priority``: the past frames come from our task's observation
history of the same blocks, so the imported graph stays stateless.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from sim2real.policies.importers.spec import ForeignSpec, read_yaml_mapping
from sim2real.sim.core.errors import ConfigError

FILES: tuple[str, ...] = ()
"""Files beside the policy folder this format needs: none (base.yaml is found one level up)."""
SCALE_KEYS = {"lin_vel": "lin_vel_scale", "ang_vel": "ang_vel_scale", "commands": "commands_scale",
              "dof_pos": "dof_pos_scale", "dof_vel": "dof_vel_scale"}


def _block(path: Path) -> dict[str, Any]:
    """The one top-level block of an rl_sar YAML (keyed ``go2`` or ``go2/robot_lab``)."""
    data = read_yaml_mapping(path, "an rl_sar config")
    if len(data) != 1 or not isinstance(next(iter(data.values())), dict):
        raise ConfigError(str(path), "is not an rl_sar config (one top-level key holding the settings)")
    return next(iter(data.values()))


def read(path: Path) -> ForeignSpec:
    """The spec of the rl_sar policy folder (or its config.yaml) at ``path``."""
    config_path = path / "config.yaml" if path.is_dir() else path
    folder = config_path.parent
    cfg = {**_block(folder.parent / "base.yaml"), **_block(config_path)} if (folder.parent / "base.yaml").is_file() \
        else _block(config_path)

    def get(key: str) -> Any:
        if key not in cfg:
            raise ConfigError(key, f"missing from {config_path} (and base.yaml)")
        return cfg[key]

    history = [int(k) for k in (cfg.get("observations_history") or [0])]
    if cfg.get("wheel_indices"):
        raise ConfigError("wheel_indices", "wheeled legs are not supported (the quadruped has 12 leg joints)")
    names, mapping = list(get("joint_names")), list(get("joint_mapping"))
    if sorted(mapping) != list(range(len(names))):
        raise ConfigError("joint_mapping", f"{mapping} is not a permutation of the {len(names)} joints")
    terms = list(get("observations"))
    scales = {t: np.asarray(cfg[SCALE_KEYS[t]], dtype=float) for t in terms if t in SCALE_KEYS}
    model = folder / str(get("model_name"))
    if not model.is_file():
        raise ConfigError("model_name", f"{model} does not exist")
    spec = ForeignSpec(
        source_format="rl_sar",
        policy_file=model,
        terms=terms,
        scales=scales,
        joint_names=[names[i] for i in mapping],
        default_pos=np.asarray(get("default_dof_pos"), dtype=float),
        action_scale=np.asarray(get("action_scale"), dtype=float),
        action_clip=(np.asarray(get("clip_actions_lower"), dtype=float),
                     np.asarray(get("clip_actions_upper"), dtype=float)),
        obs_clip=float(get("clip_obs")),
        kp=np.asarray(get("rl_kp"), dtype=float),
        kd=np.asarray(get("rl_kd"), dtype=float),
        control_dt=float(get("dt")) * int(get("decimation")),
        history=history,
        history_priority=str(cfg.get("observations_history_priority", "time")),
        notes=["angular velocity in the body frame (rl_sar's ang_vel_axis: body, as on a real robot)",
               "gravity_vec: the unit gravity direction in the body frame"],
    )
    if spec.frame_size != int(get("num_observations")):  # rl_sar's count is one frame's
        raise ConfigError("num_observations", f"{get('num_observations')}, but the terms {terms} make "
                                              f"{spec.frame_size}")
    return spec
