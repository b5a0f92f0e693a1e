"""Packaging: the ROS 2 package builds with colcon (ament_python) and installs
its share files; package.xml is a format-3 ament_python manifest."""

from __future__ import annotations

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
    colcon = Path(sys.executable).parent / "colcon"
    src = tmp_path / "src" / "sim2real"
    tracked = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    for rel in tracked:
        if (ROOT / rel).is_file():
            (src / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / rel, src / rel)
    out = subprocess.run(
        [str(colcon), "build", "--event-handlers", "console_direct-"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    share = tmp_path / "install" / "sim2real" / "share"
    assert (share / "sim2real" / "package.xml").is_file()
    assert (share / "ament_index" / "resource_index" / "packages" / "sim2real").is_file()
    assert list((share / "sim2real" / "models").rglob("*.xml")), (
        "robot models are installed under share/sim2real/models"
    )
    for folder in ("launch", "config"):
        if any((ROOT / folder).glob("*")):
            assert any((share / "sim2real" / folder).iterdir())
    assert (tmp_path / "install" / "sim2real" / "lib" / "sim2real" / "sim2real").is_file()  # console script
