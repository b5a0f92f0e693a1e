"""Isaac Lab runs (manager-based velocity tasks, robot_lab, unitree_rl_lab): the exported
policy (``<run>/exported/policy.onnx`` or ``policy.pt``), the run's ``params/env.yaml`` (or
``--env-yaml``) and, if present, ``params/agent.yaml`` (rsl_rl's ``clip_actions``); or,
where the run has no ``params/``, its Hydra dump ``.hydra/config.yaml`` (both under one file).

env.yaml is Isaac Lab's yaml dump of its configclasses (``!!python/tuple``, slices and
other python tags, ``module:name`` functions, per-joint dicts keyed by regular
expressions that Isaac Lab resolves with ``re.fullmatch``). It is read with a SafeLoader
that builds every python tag as plain data: nothing is imported or run. Read: the
``observations.policy`` terms in order, each clipped then scaled, with Isaac Lab's
history (each term's frames oldest first, term by term); the one JointPositionAction;
``scene.robot.init_state.joint_pos``; the actuators' stiffness and damping (unitree_rl_lab's
UnitreeActuator too, its torque-speed curve noted); ``sim.dt`` x
``decimation``. env.yaml does not record the articulation's joint order (PhysX's, from
the USD): ``--joint-order`` gives it, by default the Unitree Go2's.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from sim2real.policies.importers.isaac_lab_yaml import find_joints, load_run_config, per_joint
from sim2real.policies.importers.spec import NO_CLIP, TERM_SIZES, ForeignSpec, finite_number, parse_joint_order
from sim2real.sim.core.errors import ConfigError
from sim2real.sim.quadruped import constants as c

FILES = ("env_yaml", "joint_order")
"""The ``sim2real import`` options this format takes (``--env-yaml``, ``--joint-order``)."""
GO2_ORDER = [f"{leg}_{j}_joint" for j in ("hip", "thigh", "calf") for leg in ("FL", "FR", "RL", "RR")]
"""The Go2's articulation order in Isaac Lab: hips, thighs, calves, each FL, FR, RL, RR (as
unitree_rl_lab's Go2 deploy.yaml joint_ids_map records it)."""
FUNCS = {"base_lin_vel": "lin_vel", "base_ang_vel": "ang_vel", "projected_gravity": "gravity_vec",
         "generated_commands": "commands", "joint_pos_rel": "dof_pos", "joint_vel_rel": "dof_vel",
         "last_action": "actions"}
MDP = ("isaaclab.envs.mdp.observations", "omni.isaac.lab.envs.mdp.observations")
"""Modules whose observation functions have the meaning we rebuild (Isaac Lab's, old and new names)."""
ACTUATORS = ("ImplicitActuator", "IdealPDActuator", "DCMotor", "DelayedPDActuator", "UnitreeActuator")
"""PD actuators (their stiffness and damping are the servo gains); UnitreeActuator is
unitree_rl_lab's (``UnitreeActuatorCfg_*``: a delayed explicit PD with a torque-speed curve)."""
UNITREE_CURVE = {"Y1": "Nm peak torque with the motion", "Y2": "Nm against it", "X1": "rad/s full torque up to",
                 "X2": "rad/s no-load speed", "Fs": "Nm static friction", "Fd": "Nm s/rad viscous friction"}
"""UnitreeActuator's torque-speed curve and friction, recorded in the notes (not reproduced)."""
GROUP_KEYS = ("concatenate_terms", "concatenate_dim", "enable_corruption", "history_length", "flatten_history_dim")
TERM_KEYS = ("func", "params", "modifiers", "noise", "clip", "scale", "history_length", "flatten_history_dim")
def _mapping(value: Any, what: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ConfigError(what, f"missing or not a mapping ({value!r})")
    return value


def _asset_joints(params: Any, names: list[str], what: str) -> list[str]:
    """The joints (in order) a term's ``params.asset_cfg`` selects; all by default."""
    asset = params.get("asset_cfg") if isinstance(params, dict) else None
    if asset is None:
        return names
    if not isinstance(asset, dict) or asset.get("name", "robot") != "robot":
        raise ConfigError(f"{what}.params.asset_cfg", f"{asset!r} is not the robot")
    if asset.get("joint_ids") not in (None, [None, None, None]):  # slice(None) dumps as [null, null, null]
        raise ConfigError(f"{what}.params.asset_cfg.joint_ids", "explicit joint ids are not supported (use names)")
    if asset.get("joint_names") is None:
        return names
    return find_joints(asset["joint_names"], names, bool(asset.get("preserve_order")), f"{what}.params.asset_cfg")


def _observations(env: dict[str, Any], names: list[str], action_name: str) -> dict[str, Any]:
    """Terms, per-term scale and clip, history and joint orders of ``observations.policy``."""
    group = _mapping(_mapping(env.get("observations"), "observations").get("policy"), "observations.policy")
    group_history = group.get("history_length")
    if group.get("concatenate_terms") is False or (group_history and group.get("flatten_history_dim") is False):
        raise ConfigError("observations.policy", "concatenate_terms / flatten_history_dim must be true (one flat "
                                                 "observation vector)")
    if group.get("concatenate_dim", -1) not in (-1, 0):
        raise ConfigError("observations.policy.concatenate_dim", "must concatenate along the last dimension")
    out: dict[str, Any] = {"terms": [], "scales": {}, "clips": [], "history": set(), "orders": []}
    for name, term in group.items():
        what = f"observations.policy.{name}"
        if name in GROUP_KEYS or term is None:  # settings, and terms a child config disabled
            continue
        if not isinstance(term, dict) or "func" not in term:
            raise ConfigError(what, f"is not an observation term (unknown group setting {term!r}?)")
        module, _, func = str(term["func"]).rpartition(":")
        if func not in FUNCS or module not in MDP:
            raise ConfigError(what, f"{term['func']} is not supported (supported: Isaac Lab's {', '.join(FUNCS)})")
        extra = [k for k in term if k not in TERM_KEYS and term[k]]
        if extra or term.get("modifiers"):
            raise ConfigError(what, f"{extra or 'modifiers'} are not supported")
        params = _mapping(term.get("params") or {}, f"{what}.params")
        if func == "generated_commands":
            command = (env.get("commands") or {}).get(params.get("command_name"))
            if not isinstance(command, dict) or "VelocityCommand" not in str(command.get("class_type")):
                raise ConfigError(what, f"command {params.get('command_name')!r} is not a velocity command")
        if func == "last_action" and params.get("action_name") not in (None, action_name):
            raise ConfigError(what, f"reads action {params['action_name']!r}, not {action_name!r}")
        key, n = FUNCS[func], TERM_SIZES[FUNCS[func]]
        if n == c.NUM_JOINTS and func != "last_action":
            out["orders"].append((what, _asset_joints(params, names, what)))
        try:
            scale = np.asarray(1.0 if term.get("scale") is None else term["scale"], dtype=float)
        except (TypeError, ValueError):
            scale = np.full(2, np.nan)  # refused just below
        if scale.ndim > 1 or scale.size not in (1, n) or not np.all(np.isfinite(scale)):
            raise ConfigError(f"{what}.scale", f"needs one value or {n}, got {term['scale']!r}")
        clip = term.get("clip")
        if clip:  # Isaac Lab clips then scales: clip(x, -b, b) * s == clip(s x, -b |s|, b |s|)
            if not isinstance(clip, list) or len(clip) != 2 or finite_number(clip[0], f"{what}.clip") != -finite_number(
                    clip[1], f"{what}.clip") or not clip[1] > 0:
                raise ConfigError(f"{what}.clip", f"{clip!r}: only a symmetric range (-b, b) is supported")
            out["clips"].append(np.broadcast_to(float(clip[1]) * np.abs(scale), (n,)))
        else:
            out["clips"].append(np.full(n, NO_CLIP))
        length = (term.get("history_length") or 0) if group_history is None else group_history  # the group's wins
        if length and group_history is None and term.get("flatten_history_dim") is False:
            raise ConfigError(f"{what}.flatten_history_dim", "must be true (one flat observation vector)")
        if isinstance(length, bool) or not isinstance(length, int) or length < 0:
            raise ConfigError(f"{what}.history_length", f"needs a whole number >= 0, got {length!r}")
        out["history"].add(length)
        out["terms"].append(key)
        out["scales"][key] = scale
    if not out["terms"]:
        raise ConfigError("observations.policy", "has no terms")
    if len(out["history"]) > 1:
        raise ConfigError("observations.policy.history_length", f"terms keep different histories {out['history']}")
    return out


def _actuators(robot: dict[str, Any], names: list[str]
               ) -> tuple[dict[str, float], dict[str, float], set[str], list[str]]:
    """Stiffness and damping by joint from ``scene.robot.actuators`` (every joint exactly once),
    the actuator models used, and notes on the limits they impose that our servos do not."""
    kp: dict[str, float] = {}
    kd: dict[str, float] = {}
    kinds: set[str] = set()
    notes: list[str] = []
    for group_name, group in _mapping(robot.get("actuators"), "scene.robot.actuators").items():
        what = f"scene.robot.actuators.{group_name}"
        if group is None:
            continue
        kind = str(_mapping(group, what).get("class_type", "")).rpartition(":")[2]
        if kind not in ACTUATORS or group.get("control_mode", "position") != "position":
            raise ConfigError(what, f"{kind} ({group.get('control_mode', 'position')}) is not a PD position actuator "
                                    f"({', '.join(ACTUATORS)})")
        kinds.add(kind)
        if kind == "UnitreeActuator":
            notes.append(_unitree_curve(group, what))
        joints = find_joints(group.get("joint_names_expr"), names, False, f"{what}.joint_names_expr")
        for key, table in (("stiffness", kp), ("damping", kd)):
            if group.get(key) is None:
                raise ConfigError(f"{what}.{key}", "is null: the USD's value applies, which env.yaml does not record")
            for joint, value in per_joint(group[key], joints, 0.0, f"{what}.{key}").items():
                if joint in table:
                    raise ConfigError(what, f"{joint} is in two actuator groups")
                table[joint] = finite_number(value, f"{what}.{key}")
    missing = [n for n in names if n not in kp]
    if missing:
        raise ConfigError("scene.robot.actuators", f"no actuator drives {missing}")
    return kp, kd, kinds, notes


def _unitree_curve(group: dict[str, Any], what: str) -> str:
    """UnitreeActuator's limits as a note: its effort and velocity limits, torque-speed curve
    and friction (each a number, or null where the class has a default)."""
    figures = []
    for key, meaning in {"effort_limit": "Nm effort limit", "velocity_limit": "rad/s velocity limit",
                         **UNITREE_CURVE}.items():
        if group.get(key) is not None:
            figures.append(f"{key} {finite_number(group[key], f'{what}.{key}'):g} ({meaning})")
    return (f"{what}: UnitreeActuator (unitree_rl_lab's explicit PD), {', '.join(figures)}: its torque-speed curve "
            "and friction are not reproduced; our servos are PD with our model's limits")


def _action(env: dict[str, Any], names: list[str], default: dict[str, Any], clip_actions: Any) -> dict[str, Any]:
    """The one JointPositionAction: its joint order, the default pose and scale in it, raw-action bounds."""
    actions = {k: v for k, v in _mapping(env.get("actions"), "actions").items() if v is not None}
    if len(actions) != 1:
        raise ConfigError("actions", f"needs exactly one action term, got {sorted(actions)}")
    name, action = next(iter(actions.items()))
    what = f"actions.{name}"
    if not isinstance(action, dict) or not str(action.get("class_type", "")).endswith(
            "joint_actions:JointPositionAction") or action.get("asset_name", "robot") != "robot":
        raise ConfigError(what, "is not a JointPositionAction on the robot")
    order = find_joints(action.get("joint_names"), names, bool(action.get("preserve_order")), f"{what}.joint_names")
    if len(order) != c.NUM_JOINTS:
        raise ConfigError(f"{what}.joint_names", f"drive {order}, not all 12 joints")

    def values(key: str, unset: float) -> np.ndarray:
        table = per_joint(action.get(key, unset), order, unset, f"{what}.{key}")
        return np.array([finite_number(table[n], f"{what}.{key}") for n in order])

    pose = np.array([finite_number(default[n], "scene.robot.init_state.joint_pos") for n in order])
    scale = values("scale", 1.0)
    if np.any(scale == 0):
        raise ConfigError(f"{what}.scale", "must be non-zero for every joint")
    offset = pose if action.get("use_default_offset") else values("offset", 0.0)
    if not np.allclose(offset, pose, rtol=0, atol=1e-9):  # one pose serves observations and actions here
        raise ConfigError(f"{what}.offset", f"{offset.tolist()} differs from the default pose {pose.tolist()}")
    limit = NO_CLIP if clip_actions is None else finite_number(clip_actions, "agent.yaml clip_actions")
    low, high, notes = np.full(c.NUM_JOINTS, -limit), np.full(c.NUM_JOINTS, limit), []
    if action.get("clip"):  # bounds on the joint targets, as bounds on the raw action
        bounds = per_joint(action["clip"], order, None, f"{what}.clip")
        for j, joint in enumerate(order):
            if bounds[joint] is None:
                continue
            if not isinstance(bounds[joint], list) or len(bounds[joint]) != 2:
                raise ConfigError(f"{what}.clip", f"{bounds[joint]!r} for {joint} is not (min, max)")
            lo, hi = (np.array([finite_number(b, f"{what}.clip") for b in bounds[joint]]) - pose[j]) / scale[j]
            low[j], high[j] = max(low[j], min(lo, hi)), min(high[j], max(lo, hi))
        notes.append(f"{what}.clip bounds the joint targets: Isaac Lab's last_action reads the unclipped action, "
                     "ours the clipped one (they differ only while a target is clipped)")
    if np.any(low >= high):
        raise ConfigError(f"{what}.clip", "leaves no action range for some joint")
    return {"name": name, "order": order, "pose": pose, "scale": scale, "low": low, "high": high, "notes": notes,
            "preserve_order": bool(action.get("preserve_order"))}


def read(path: Path, env_yaml: Path | None = None, joint_order: str | None = None) -> ForeignSpec:
    """The spec of the Isaac Lab policy at ``path`` (the exported file, or the run folder)."""
    policy = path
    if path.is_dir():
        policy = next((p for p in (path / "exported" / "policy.onnx", path / "exported" / "policy.pt") if p.is_file()),
                      path / "exported" / "policy.onnx")
    if not policy.is_file():
        raise ConfigError(str(policy), "does not exist (the run's exported/policy.onnx or policy.pt)")
    env, agent, source = load_run_config(policy, env_yaml)
    names = parse_joint_order(joint_order, GO2_ORDER)
    robot = _mapping(_mapping(env.get("scene"), "scene").get("robot"), "scene.robot")
    if not isinstance((robot.get("init_state") or {}).get("joint_pos"), dict):
        raise ConfigError("scene.robot.init_state.joint_pos", f"missing from {source}")
    default = per_joint(robot["init_state"]["joint_pos"], names, 0.0, "scene.robot.init_state.joint_pos")
    kp, kd, kinds, actuator_notes = _actuators(robot, names)
    action = _action(env, names, default, agent.get("clip_actions"))
    order = action["order"]
    obs = _observations(env, names, action["name"])
    for where, joints in obs["orders"]:
        if joints != order:
            raise ConfigError(f"{where}.params.asset_cfg", f"joint order {joints} differs from the actions' {order}")
    length = obs["history"].pop()
    notes = [f"config: {source}",
             f"articulation joint order ({'--joint-order' if joint_order else 'assumed: the Go2 in Isaac Lab'}): "
             f"{names}; the policy's ({'preserve_order' if action['preserve_order'] else 'articulation'}): {order}",
             "observation noise (training corruption) is not applied",
             f"rsl_rl clip_actions: {agent.get('clip_actions')} "
             f"({'the agent config' if agent else 'no agent config: none assumed'})", *action["notes"],
             *actuator_notes]
    if "DCMotor" in kinds:
        notes.append("DCMotor's torque-speed saturation is not reproduced: our servos are PD with the model's limits")
    return ForeignSpec(
        source_format="isaac_lab",
        policy_file=policy,
        terms=obs["terms"],
        scales=obs["scales"],
        joint_names=order,
        default_pos=action["pose"],
        action_scale=action["scale"],
        action_clip=(action["low"], action["high"]),
        obs_clip=np.concatenate(obs["clips"]),
        kp=np.array([kp[n] for n in order]),
        kd=np.array([kd[n] for n in order]),
        control_dt=finite_number(_mapping(env.get("sim"), "sim").get("dt"), "sim.dt")
        * finite_number(env.get("decimation"), "decimation"),
        history=list(range(length - 1, -1, -1)) if length > 1 else [0],
        history_priority="term",
        notes=notes,
    )
