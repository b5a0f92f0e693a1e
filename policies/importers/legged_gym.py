"""legged_gym and unitree_rl_gym policies (Isaac Gym): the TorchScript file of
``export_policy_as_jit``, the robot's config class (``go2_config.py``), the base config
it derives from (``legged_robot_config.py``) and the robot's URDF.

The configs are Python; they are read with ``ast`` (literals only), never executed:
the robot's class overrides the base's values, nested class by nested class. Read:
``normalization.obs_scales`` and ``clip_observations`` / ``clip_actions``,
``init_state.default_joint_angles`` (by joint name), ``control.stiffness`` /
``damping`` (legged_gym's rule: a key applies to every joint whose name contains it),
``control.action_scale`` and ``decimation``, ``sim.dt``, ``env.num_observations``.

The observation is legged_gym's ``compute_observations``: base linear and angular
velocity, projected gravity, the first three commands (scaled by lin_vel, lin_vel,
ang_vel), joint positions relative to the default, joint velocities, the previous
action (48 values for 12 joints). Height measurements (235) are refused.

The joint order is Isaac Gym's: the URDF's movable joints in depth-first order of its
link tree, children in file order.
"""

from __future__ import annotations

import ast
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import numpy as np

from sim2real.policies.importers.spec import ForeignSpec
from sim2real.sim.core.errors import ConfigError

TERMS = ["lin_vel", "ang_vel", "gravity_vec", "commands", "dof_pos", "dof_vel", "actions"]
FILES = ("config", "base_config", "urdf")
"""The files beside the policy this format needs (``sim2real import`` flags)."""


def _literals(body: list[ast.stmt], prefix: str = "") -> dict[str, Any]:
    """Dotted name -> value of every literal assignment in a class body, nested classes included."""
    out: dict[str, Any] = {}
    for node in body:
        if isinstance(node, ast.ClassDef):
            out.update(_literals(node.body, f"{prefix}{node.name}."))
        elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            try:
                out[prefix + node.targets[0].id] = ast.literal_eval(node.value)
            except ValueError:  # not a literal (an expression, a path template): not ours to read
                continue
    return out


def read_config(path: Path) -> dict[str, Any]:
    """The literal settings of the environment config class in ``path``: the first class
    with nested classes that is not a ``...PPO`` runner config."""
    try:
        tree = ast.parse(path.read_text(), filename=str(path))
    except (OSError, SyntaxError) as exc:
        raise ConfigError(str(path), f"is not a readable Python config ({exc})") from None
    classes = [n for n in tree.body if isinstance(n, ast.ClassDef) and not n.name.endswith("PPO")
               and any(isinstance(b, ast.ClassDef) for b in n.body)]
    if not classes:
        raise ConfigError(str(path), "has no environment config class")
    return _literals(classes[0].body)


def urdf_joint_order(path: Path) -> list[str]:
    """Movable joints in Isaac Gym's order: depth-first from the root link, children in file order."""
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError) as exc:
        raise ConfigError(str(path), f"is not a readable URDF ({exc})") from None
    children: dict[str, list[ET.Element]] = {}
    childs = set()
    for joint in root.iter("joint"):
        parent, child = joint.find("parent"), joint.find("child")
        if parent is None or child is None:
            continue
        children.setdefault(parent.get("link", ""), []).append(joint)
        childs.add(child.get("link", ""))
    roots = [link.get("name", "") for link in root.iter("link") if link.get("name") not in childs]
    order: list[str] = []

    def visit(link: str) -> None:
        for joint in children.get(link, []):
            if joint.get("type") in ("revolute", "continuous", "prismatic"):
                order.append(joint.get("name", ""))
            child = joint.find("child")
            visit(child.get("link", "") if child is not None else "")

    for link in roots:
        visit(link)
    return order


def read(path: Path, config: Path | None = None, base_config: Path | None = None, urdf: Path | None = None
         ) -> ForeignSpec:
    """The spec of the legged_gym policy file ``path`` with its configs and URDF."""
    if config is None or base_config is None or urdf is None:
        raise ConfigError("--config/--base-config/--urdf", "legged_gym needs the robot's config, the base config "
                                                          "and the URDF (the joint order)")
    cfg = {**read_config(base_config), **read_config(config)}

    def get(key: str) -> Any:
        if key not in cfg:
            raise ConfigError(key, f"missing from {config} and {base_config}")
        return cfg[key]

    names = urdf_joint_order(urdf)
    default_angles = get("init_state.default_joint_angles")
    if not isinstance(default_angles, dict) or sorted(default_angles) != sorted(names):
        raise ConfigError("default_joint_angles", f"names {sorted(default_angles)} are not the URDF's joints {names}")

    def by_substring(table: dict[str, float], what: str) -> np.ndarray:
        values = []
        for name in names:
            hits = [v for key, v in table.items() if key in name]
            if not hits:
                raise ConfigError(f"control.{what}", f"no entry for joint {name!r} (keys {list(table)})")
            values.append(float(hits[0]))
        return np.array(values)

    n = len(names)
    if int(get("env.num_observations")) != 48:  # 3 + 3 + 3 + 3 + 12 + 12 + 12
        raise ConfigError("env.num_observations", f"{get('env.num_observations')}: only legged_gym's blind 48-value "
                                                  "observation is supported (height measurements are not)")
    scale = float(get("control.action_scale"))
    lin, ang = float(get("normalization.obs_scales.lin_vel")), float(get("normalization.obs_scales.ang_vel"))
    clip_actions = float(get("normalization.clip_actions"))
    return ForeignSpec(
        source_format="legged_gym",
        policy_file=path,
        terms=list(TERMS),
        scales={"lin_vel": np.full(3, lin), "ang_vel": np.full(3, ang), "commands": np.array([lin, lin, ang]),
                "dof_pos": np.full(n, float(get("normalization.obs_scales.dof_pos"))),
                "dof_vel": np.full(n, float(get("normalization.obs_scales.dof_vel")))},
        joint_names=names,
        default_pos=np.array([float(default_angles[name]) for name in names]),
        action_scale=np.full(n, scale),
        action_clip=(np.full(n, -clip_actions), np.full(n, clip_actions)),
        obs_clip=float(get("normalization.clip_observations")),
        kp=by_substring(get("control.stiffness"), "stiffness"),
        kd=by_substring(get("control.damping"), "damping"),
        control_dt=float(get("sim.dt")) * int(get("control.decimation")),
        notes=["observation: legged_gym's compute_observations (48 values)",
               "joint order: the URDF's movable joints, depth-first (Isaac Gym)"],
    )
