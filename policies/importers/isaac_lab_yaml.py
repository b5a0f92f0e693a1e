"""Isaac Lab's dumped configs (``params/env.yaml``, ``agent.yaml``, or the Hydra dump
``.hydra/config.yaml``) read safely, and its regex joint tables resolved as Isaac Lab
resolves them (``isaaclab.utils.string``)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from sim2real.policies.importers.spec import read_yaml_mapping
from sim2real.sim.core.errors import ConfigError


class IsaacLabLoader(yaml.SafeLoader):
    """A SafeLoader for Isaac Lab's dumps: python tags (tuples, slices) read as plain data."""


def _python_tag(loader: yaml.SafeLoader, _suffix: str, node: yaml.Node) -> Any:
    if isinstance(node, yaml.SequenceNode):
        return loader.construct_sequence(node, deep=True)
    if isinstance(node, yaml.MappingNode):
        return loader.construct_mapping(node, deep=True)
    if isinstance(node, yaml.ScalarNode):
        return loader.construct_scalar(node)
    raise yaml.constructor.ConstructorError(None, None, f"unexpected node {node.tag}", node.start_mark)


IsaacLabLoader.add_multi_constructor("tag:yaml.org,2002:python/", _python_tag)


def load_yaml(path: Path) -> dict[str, Any]:
    """One of Isaac Lab's dumped configs as nested dicts and lists."""
    return read_yaml_mapping(path, "an Isaac Lab config", IsaacLabLoader)


def find_joints(keys: Any, names: list[str], preserve_order: bool, what: str) -> list[str]:
    """Isaac Lab's ``resolve_matching_names``: the joints the keys fullmatch, in the
    articulation's order, or grouped key by key with ``preserve_order``."""
    keys = [keys] if isinstance(keys, str) else list(keys or [])
    try:
        patterns = [re.compile(str(k)) for k in keys]
    except re.error as exc:
        raise ConfigError(what, f"{keys!r} holds an invalid regular expression ({exc})") from None
    hits: dict[str, int] = {}
    for name in names:
        for k, pattern in enumerate(patterns):
            if pattern.fullmatch(name):
                if name in hits:
                    raise ConfigError(what, f"{name} is matched by {keys[hits[name]]!r} and {keys[k]!r}")
                hits[name] = k
    unmatched = [keys[k] for k in range(len(keys)) if k not in hits.values()]
    if unmatched or not keys:
        raise ConfigError(what, f"{unmatched or keys} match none of the joints {names}")
    found = [n for n in names if n in hits]
    return sorted(found, key=lambda n: hits[n]) if preserve_order else found  # sorted() is stable


def per_joint(value: Any, names: list[str], unset: Any, what: str) -> dict[str, Any]:
    """A number for every joint, or Isaac Lab's regex dict (``resolve_matching_names_values``,
    strict) with ``unset`` for the joints no key matches."""
    if not isinstance(value, dict):
        return dict.fromkeys(names, value)
    keys: dict[str, Any] = {}
    out = dict.fromkeys(names, unset)
    for key, v in value.items():
        for name in find_joints([key], names, False, what):
            if name in keys:
                raise ConfigError(what, f"{name} is matched by {keys[name]!r} and {key!r}")
            keys[name], out[name] = key, v
    return out


HYDRA = Path(".hydra") / "config.yaml"
"""Where Isaac Lab's Hydra entry points (``@hydra_task_config``) dump the composed config:
the env config under ``env`` and the agent's under ``agent``, in one file."""


def load_run_config(policy: Path, env_yaml: Path | None) -> tuple[dict[str, Any], dict[str, Any], str]:
    """The run's env config, its agent config (empty: none found) and where they came from.

    Without ``env_yaml``, the run folder (the policy folder's parent) is searched for
    ``params/env.yaml`` (with ``params/agent.yaml``), then for the Hydra dump. Either
    file may be given as ``env_yaml``."""
    run = policy.resolve().parent.parent
    path = env_yaml or next((p for p in (run / "params" / "env.yaml", run / HYDRA) if p.is_file()),
                            run / "params" / "env.yaml")
    if not path.is_file():
        raise ConfigError("--env-yaml", f"{path} does not exist (the run's params/env.yaml or {HYDRA})")
    data = load_yaml(path)
    if "scene" not in data and isinstance(data.get("env"), dict):  # Hydra's: {env: ..., agent: ...}
        agent = data.get("agent")
        return data["env"], agent if isinstance(agent, dict) else {}, f"{path} (Hydra: env and agent)"
    agent_path = path.parent / "agent.yaml"
    return data, load_yaml(agent_path) if agent_path.is_file() else {}, str(path)
