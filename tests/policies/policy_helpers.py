"""Helpers of the policies tests: the small real MuJoCo PuckTask
(tests/sim/core/puck.py), registered only while a test needs it, and a tiny
training config. A module of its own (not conftest) so tests can import it."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

import sim2real  # noqa: F401  (first: picks MUJOCO_GL before mujoco is imported)

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "sim" / "core"))

from puck import PuckTask

from sim2real.sim import REGISTRY
from sim2real.sim.core.registry import gym_id

PUCK_ID = gym_id(PuckTask)
PUCK_CLI = Path(__file__).resolve().parent / "puck_cli.py"
ALGOS = ("ppo", "sac", "td3", "ppo_lag", "sac_lag")

TINY: dict[str, Any] = {
    "task": "TestPuck",
    "n_envs": 4,
    "total_steps": 1024,
    "net": {"pi": [32, 32], "vf": [32, 32]},
    "ppo": {"n_steps": 64, "batch_size": 128, "n_epochs": 2},
    "sac": {"learning_starts": 128, "batch_size": 32, "buffer_size": 4000},
    "td3": {"learning_starts": 128, "batch_size": 32, "buffer_size": 4000},
    "eval": {"every_steps": 512, "episodes": 4, "n_envs": 2},
    "checkpoint": {"every_steps": 512},
    # ppo_lag, sac_lag: the puck's distance as the cost, with a limit it exceeds (the multiplier must move).
    "lagrangian": {"cost_metric": "distance", "cost_limit": 0.1, "lambda_lr": 0.1, "update_every_steps": 64},
}
"""A training config small enough for a unit test (about a second per algorithm)."""


def register_puck(mp: pytest.MonkeyPatch) -> None:
    """Register PuckTask until ``mp`` is undone (the registry has no unregister;
    other test folders iterate over every registered task)."""
    mp.setitem(REGISTRY._tasks, PUCK_ID, PuckTask)


def tiny_config(algo: str = "ppo", overrides: dict[str, Any] | None = None):
    """The resolved tiny config through the real resolution path (defaults, then a
    config file, then dotted overrides); PuckTask must be registered."""
    import tempfile

    import yaml

    from sim2real.policies.config_loading import merge, resolve_config

    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
        yaml.safe_dump(merge(TINY, {"algo": algo}), f)
    try:
        return resolve_config(None, f.name, overrides or {})
    finally:
        Path(f.name).unlink()
