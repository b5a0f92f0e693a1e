"""Dependencies declared where they are used (issue 26, defect 4): every third-party
import of the package is a declared requirement of the core or of the extra that
sim2real/extras.py names for it; the deployment graph runs with the core and the
`ros` extra alone; a command that needs a missing extra says which, in one line."""

from __future__ import annotations

import ast
import importlib.metadata
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import tomllib
from dds_domains import unique_domain_id

from sim2real.extras import EXTRA_OF

ROOT = Path(__file__).resolve().parents[1]
PACKAGE_DIRS = ("sim", "policies", "ros_nodes", "hardware", "sim2real")
NOT_FROM_PYPI = {"launch": "a ROS 2 installation (ros2 launch)", "launch_ros": "a ROS 2 installation (ros2 launch)",
                 "compression": "the standard library from Python 3.14 (backports.zstd before)"}
"""Imports no requirement can provide, each imported only where it exists."""
BLOCKED = sorted(name for name, extra in EXTRA_OF.items() if extra not in ("ros",))
"""Every import the core + `ros` install lacks."""


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _requirements() -> dict[str, set[str]]:
    """``{"core" | extra: {distribution}}`` from pyproject.toml, self-references expanded."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    groups = {"core": project["dependencies"], **project["optional-dependencies"]}
    out: dict[str, set[str]] = {}
    for group, reqs in groups.items():
        out[group] = {_norm(re.split(r"[<>=!~\[; ]", r, maxsplit=1)[0]) for r in reqs}
    for group, reqs in groups.items():
        for r in reqs:
            if r.startswith("sim2real["):
                for extra in r[len("sim2real["):-1].split(","):
                    out[group] |= out[extra]
    return out


def _third_party_imports() -> dict[str, str]:
    """``{top-level import: first file importing it}`` over the package."""
    out: dict[str, str] = {}
    for folder in PACKAGE_DIRS:
        for path in (ROOT / folder).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text())):
                names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                         else [node.module] if isinstance(node, ast.ImportFrom) and node.module and not node.level
                         else [])
                for name in names:
                    top = name.split(".")[0]
                    if top not in sys.stdlib_module_names and top != "sim2real":
                        out.setdefault(top, str(path.relative_to(ROOT)))
    return out


def test_every_import_is_declared_in_the_core_or_its_extra() -> None:
    reqs = _requirements()
    dists = importlib.metadata.packages_distributions()
    undeclared = []
    for module, where in sorted(_third_party_imports().items()):
        if module in NOT_FROM_PYPI:
            continue
        group = EXTRA_OF.get(module, "core")
        provided_by = {_norm(d) for d in dists.get(module, [])} or {_norm(module)}  # not installed here
        if not provided_by & reqs[group]:
            undeclared.append(f"{module} ({where}): from {sorted(provided_by) or '?'}, not in [{group}]")
    assert not undeclared, "imported but not declared:\n" + "\n".join(undeclared)


def test_the_vlm_and_hil_packages_are_not_core() -> None:
    core = _requirements()["core"]
    for dist in ("open-clip-torch", "pygame", "h5py", "torch", "stable-baselines3"):
        assert dist not in core


BLOCKER = """
import importlib.abc, sys
BLOCK = set(sys.argv[1].split(","))
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCK:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
sys.meta_path.insert(0, Block())
from sim2real.cli import main
sys.exit(main(sys.argv[2:]))
"""


def _run_without_extras(args: list[str], domain: int) -> subprocess.CompletedProcess:
    env = {**os.environ, "ROS_AUTOMATIC_DISCOVERY_RANGE": "LOCALHOST", "ROS_DOMAIN_ID": str(domain)}
    return subprocess.run([sys.executable, "-c", BLOCKER, ",".join(BLOCKED), *args], capture_output=True,
                          text=True, timeout=180, env=env, cwd=ROOT)


@pytest.mark.parametrize("robot", ["arm", "drone"])
def test_the_deployment_graph_runs_with_the_core_and_ros_alone(robot: str, tmp_path) -> None:
    """torch, SB3, open_clip, matplotlib, imageio... made unimportable: the shipped policy
    runs behind the safety filter, recorded, as on a robot's computer."""
    out = _run_without_extras(["deploy", "--robot", robot, "--duration", "2", "--record", str(tmp_path / "bag"),
                               "--json"], unique_domain_id())
    assert out.returncode == 0, out.stderr[-2000:]
    assert '"filter_steps"' in out.stdout and (tmp_path / "bag" / "metadata.yaml").exists()


def test_a_command_that_needs_a_missing_extra_says_which() -> None:
    out = _run_without_extras(["train", "ArmReach", "--steps", "64"], unique_domain_id())
    assert out.returncode == 2
    line = out.stderr.strip().splitlines()[-1]
    assert line.startswith("sim2real train: error: this needs ") and 'pip install "sim2real[train]"' in line
