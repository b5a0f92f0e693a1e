"""Fixtures of the ROS 2 node tests: tiny randomly initialised policies exported through
the real export code (ONNX graph + metadata), for robots without a trained baseline."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import sim2real  # noqa: F401  (first: picks MUJOCO_GL before mujoco is imported)

sys.path.insert(0, str(Path(__file__).resolve().parent))

from ros_harness import export_tiny_policy


@pytest.fixture(scope="session")
def tiny_policies(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("tiny_policies")
    return {
        "arm": export_tiny_policy("ArmReach", "ee_delta", root / "arm"),
        "quadruped": export_tiny_policy("QuadrupedVelocity", "joint_pos", root / "quadruped"),
        "drone": export_tiny_policy("DroneHover", "ctbr", root / "drone"),
    }
