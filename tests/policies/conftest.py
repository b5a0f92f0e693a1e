"""Fixtures of the policies tests: PuckTask registered for one test, and tiny
training runs of every algorithm, trained once per session."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import sim2real  # noqa: F401  (first: picks MUJOCO_GL before mujoco is imported)

sys.path.insert(0, str(Path(__file__).resolve().parent))

from policy_helpers import ALGOS, PuckTask, register_puck, tiny_config


@pytest.fixture
def puck(monkeypatch: pytest.MonkeyPatch) -> type[PuckTask]:
    register_puck(monkeypatch)
    return PuckTask


@pytest.fixture(scope="session")
def trained_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """One tiny finished run per algorithm: algo -> run folder."""
    from sim2real.policies.trainer import train

    root = tmp_path_factory.mktemp("runs")
    runs = {}
    with pytest.MonkeyPatch.context() as mp:
        register_puck(mp)
        for algo in ALGOS:
            runs[algo] = root / algo
            train(tiny_config(algo), runs[algo], progress=False)
    return runs
