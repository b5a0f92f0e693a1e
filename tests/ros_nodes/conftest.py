"""Fixtures of the ROS 2 node tests: tiny randomly initialised policies exported through
the real export code (ONNX graph + metadata), for robots without a trained baseline, and
the arm's sim bridge and safety filter in one process."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import sim2real  # noqa: F401  (first: picks MUJOCO_GL before mujoco is imported)

sys.path.insert(0, str(Path(__file__).resolve().parent))

from ros_harness import export_tiny_policy, unique_domain_id


@pytest.fixture(scope="session")
def tiny_policies(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("tiny_policies")
    return {
        "arm": export_tiny_policy("ArmReach", "ee_delta", root / "arm"),
        "quadruped": export_tiny_policy("QuadrupedVelocity", "joint_pos", root / "quadruped"),
        "drone": export_tiny_policy("DroneHover", "ctbr", root / "drone"),
    }


@pytest.fixture
def arm_graph(tmp_path: Path):
    """The arm's sim bridge and safety filter (no policy: the filter holds the arm)."""
    from sim2real.ros_nodes.graph import InProcessGraph, config_dir, load_config, merge

    params = merge(load_config(config_dir() / "arm.yaml"),
                   {"safety_filter": {"latch_file": str(tmp_path / "latch.json")}})
    graph = InProcessGraph(params, ["sim_bridge", "safety_filter"], unique_domain_id())
    graph.start()
    yield graph
    graph.shutdown()
