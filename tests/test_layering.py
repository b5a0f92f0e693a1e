"""Imports point one way (ARCHITECTURE.md): every module's imports are checked
against the layer table."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# folder -> sim2real subpackages (and third-party roots) it must never import
FORBIDDEN = {
    "sim": (
        "sim2real.policies",
        "sim2real.ros_nodes",
        "sim2real.hardware",
        "sim2real.commands",
        "sim2real.bench",
        "sim2real.cli",
        "rclpy",
        "torch",
        "onnxruntime",
    ),
    "policies": ("sim2real.ros_nodes", "sim2real.hardware", "sim2real.commands", "sim2real.cli", "rclpy"),
    "hardware": ("sim2real.ros_nodes", "sim2real.policies", "sim2real.commands", "sim2real.cli", "rclpy"),
    "ros_nodes": ("sim2real.commands", "sim2real.cli"),
}

# Where a robot's own wire protocol is ROS 2 (ros2_control's topics), its backend and
# emulator speak rclpy: that is the protocol, not a dependency on the ROS layer.
ALLOWED = {"hardware": {"hardware/ros2_control": ("rclpy",), "hardware/emulator/ros2_control": ("rclpy",)}}


def imported_modules(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.append(node.module)
    return names


@pytest.mark.parametrize("folder", sorted(FORBIDDEN))
def test_layer_imports_point_down(folder: str) -> None:
    offenders = []
    for path in sorted((ROOT / folder).rglob("*.py")):
        relative = path.relative_to(ROOT).as_posix()
        allowed = [a for prefix, names in ALLOWED.get(folder, {}).items() if relative.startswith(prefix) for a in names]
        for name in imported_modules(path):
            if any(name == ok or name.startswith(ok + ".") for ok in allowed):
                continue
            if any(name == bad or name.startswith(bad + ".") for bad in FORBIDDEN[folder]):
                offenders.append(f"{path.relative_to(ROOT)} imports {name}")
    assert not offenders, "\n".join(offenders)


def test_no_generic_top_level_packages_are_installed(tmp_path: Path) -> None:
    """The mapped folders are reachable only as sim2real.*: from outside the
    repository, `import sim` must fail while `import sim2real.sim` works."""
    import subprocess
    import sys

    code = (
        "import importlib.util, sim2real.sim, sim2real.policies, sim2real.ros_nodes, sim2real.hardware\n"
        "print([n for n in ('sim', 'policies', 'ros_nodes', 'hardware') if importlib.util.find_spec(n)])"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
