"""Layered config resolution: ``policies/configs/default.yaml`` ->
``policies/configs/<robot>_<task>.yaml`` (if present) -> ``--config FILE`` ->
command-line flags, later layers winning key by key."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sim2real.policies.config import CONFIG_DIR, TrainConfig
from sim2real.sim.core.errors import ConfigError
from sim2real.sim.core.schema import from_dict, nest
from sim2real.sim.core.schema import read_yaml as schema_read_yaml

OPTIONS = "task_options."


def read_yaml(path: str | Path) -> dict[str, Any]:
    """A YAML mapping from ``path`` (a missing or malformed file raises ConfigError)."""
    data = schema_read_yaml(path)
    data.pop("provenance", None)  # written by training for people; never an input
    return data


def merge(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    """Recursive dict merge; ``override`` wins, nested mappings merge key by key, except
    ``task_options``, which a layer states whole (a recipe names every option it needs)."""
    out = dict(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict) and key != "task_options":
            out[key] = merge(out[key], value)
        else:
            out[key] = value
    return out


def with_overrides(base: dict[str, Any], flat: dict[str, Any]) -> dict[str, Any]:
    """``base`` with command-line overrides (dotted keys) on top, as ``sim2real train
    --set`` and a sweep's trials apply them: a dotted task option sets that one option on
    ``base``'s; a whole ``task_options`` mapping, like a file's, replaces them."""
    rest = dict(flat)
    options = {k.removeprefix(OPTIONS): rest.pop(k) for k in list(rest) if k.startswith(OPTIONS)}
    out = merge(base, nest(rest))
    if options:
        out["task_options"] = merge(out.get("task_options") or {}, nest(options))
    return out


def task_config_path(task_cls: type) -> Path:
    """``policies/configs/<robot>_<task>.yaml`` of a task class."""
    return CONFIG_DIR / f"{task_cls.robot}_{task_cls.name}.yaml"


def resolve_config(
    task: str | None = None,
    config_file: str | Path | None = None,
    overrides: dict[str, Any] | None = None,
) -> TrainConfig:
    """The resolved, validated config: defaults, the task's file, ``config_file``,
    then ``overrides`` (dotted keys allowed, e.g. ``{"ppo.n_steps": 32}``)."""
    from sim2real.sim import REGISTRY
    from sim2real.sim.core.registry import gym_id

    user = read_yaml(config_file) if config_file else {}
    flat = dict(overrides or {})
    name = task or flat.pop("task", None) or user.get("task")
    if not name:
        raise ConfigError("task", "no task given (pass TASK or set `task:` in the config file)")
    task_cls = REGISTRY.get(str(name))
    files = [CONFIG_DIR / "default.yaml"]
    if task_config_path(task_cls).exists():
        files.append(task_config_path(task_cls))
    layers = [(str(f), read_yaml(f)) for f in files]
    layers += [(str(config_file), user), ("command line", nest(flat))]
    for source, layer in layers:
        try:  # types and ranges layer by layer, so an error names the file it is in
            from_dict(TrainConfig, layer, validate=False)
        except ConfigError as exc:
            raise exc.with_source(source) from None
    merged: dict[str, Any] = {}
    for _, layer in layers[:-1]:
        merged = merge(merged, layer)
    merged = with_overrides(merged, flat)
    merged["task"] = gym_id(task_cls)
    cfg = TrainConfig.from_dict(merged)
    cfg.validate()
    return cfg
