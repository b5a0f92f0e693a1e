"""Packaging: the ROS 2 package builds with colcon (ament_python) and installs
its share files; package.xml is a format-3 ament_python manifest."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_package_xml_is_format_3_ament_python_named_sim2real() -> None:
    root = ET.parse(ROOT / "package.xml").getroot()
    assert root.get("format") == "3"
    assert root.findtext("name") == "sim2real"
    assert root.find("export/build_type").text == "ament_python"
    deps = {e.text for e in root.iter("exec_depend")}
    assert {"rclpy", "sensor_msgs", "std_msgs", "geometry_msgs"} <= deps


def test_colcon_build_installs_share_files(tmp_path: Path) -> None:
    """docs/deployment.md's ROS 2 steps as a user runs them: ``colcon build
    --packages-select sim2real``, ``source install/setup.bash``, then what ``ros2 launch``
    and ``ros2 run sim2real sim2real`` find: the share files, the shipped policies by name
    through the ament index, the executable under lib/sim2real (not on PATH)."""
    colcon = Path(sys.executable).parent / "colcon"
    src = tmp_path / "src" / "sim2real"
    tracked = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    for rel in tracked:
        if (ROOT / rel).is_symlink():
            (src / rel).parent.mkdir(parents=True, exist_ok=True)
            (src / rel).symlink_to(os.readlink(ROOT / rel))
        elif (ROOT / rel).is_file():
            (src / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / rel, src / rel)
    out = subprocess.run(
        [str(colcon), "build", "--packages-select", "sim2real", "--event-handlers", "console_direct-"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    prefix = tmp_path / "install" / "sim2real"
    share = prefix / "share"
    assert (share / "sim2real" / "package.xml").is_file()
    assert (share / "ament_index" / "resource_index" / "packages" / "sim2real").is_file()
    assert list((share / "sim2real" / "models").rglob("*.xml")), (
        "robot models are installed under share/sim2real/models"
    )
    for folder in ("launch", "config"):
        if any((ROOT / folder).glob("*")):
            assert any((share / "sim2real" / folder).iterdir())
    shipped = sorted(p.parent.name for p in (ROOT / "policies" / "baselines").glob("*/policy.onnx"))
    assert sorted(p.parent.name for p in (share / "sim2real" / "policies").glob("*/policy.onnx")) == shipped
    executable = prefix / "lib" / "sim2real" / "sim2real"  # what `ros2 run sim2real sim2real` runs
    assert executable.is_file()
    # The sourced workspace: the ament index names this install, a shipped policy's name
    # resolves into its share, and the executable runs a command.
    probe = ("from sim2real.policies.shipped import resolve_policy; "
             "from sim2real.ros_nodes.launch_description import defaults; "
             "print(resolve_policy(defaults('arm')['policy']))")
    script = (f"source install/setup.bash && echo \"$AMENT_PREFIX_PATH\" && cd / && {sys.executable} -c \"{probe}\" "
              f"&& {executable} deploy --help")
    env = {k: v for k, v in os.environ.items() if k not in ("AMENT_PREFIX_PATH", "COLCON_PREFIX_PATH")}
    out = subprocess.run(["bash", "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=120, env=env)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    lines = out.stdout.splitlines()
    assert lines[0] == str(prefix)
    assert lines[1] == str(share / "sim2real" / "policies" / "ArmReach")
    assert "--robot" in out.stdout
