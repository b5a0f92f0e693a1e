"""Packaging glue: maps the top-level folders onto the ``sim2real`` namespace and
installs the ROS 2 share files. Dependencies and tool settings live in
pyproject.toml; colcon's ament_python build needs this file (colcon-core #208).
"""

from __future__ import annotations

import os
from glob import glob

from setuptools import setup

PACKAGE = "sim2real"
# Import name -> folder. Nothing installs a generic top-level name such as `sim`.
ROOTS = {
    "sim2real": "sim2real",
    "sim2real.sim": "sim",
    "sim2real.policies": "policies",
    "sim2real.ros_nodes": "ros_nodes",
    "sim2real.hardware": "hardware",
}


def find_packages_mapped() -> list[str]:
    packages = []
    for name, folder in ROOTS.items():
        for root, _dirs, files in os.walk(folder):
            if "__init__.py" in files and "__pycache__" not in root:
                rel = os.path.relpath(root, folder)
                packages.append(name if rel == "." else f"{name}.{rel.replace(os.sep, '.')}")
    return sorted(packages)


def share(pattern: str) -> list[str]:
    return sorted(f for f in glob(pattern, recursive=True) if os.path.isfile(f))


data_files = [
    ("share/ament_index/resource_index/packages", ["resource/" + PACKAGE]),
    ("share/" + PACKAGE, ["package.xml"]),
]
for folder in ("launch", "config"):
    files = share(f"{folder}/*")
    if files:
        data_files.append((f"share/{PACKAGE}/{folder}", files))
# The shipped policies (policy.onnx and its metadata) also go to share/sim2real/policies/<name>/,
# where `policy:=<name>` finds them through the ament index (sim2real.policies.shipped).
for folder in sorted(glob("policies/baselines/*/")):
    files = share(f"{folder}policy.onnx*")
    if files:
        data_files.append((f"share/{PACKAGE}/policies/{os.path.basename(folder.rstrip('/'))}", files))
# Robot models also go to share/sim2real/models/<robot>/ for ROS tools (e.g. a URDF/MJCF viewer).
models: dict[str, list[str]] = {}
for path in share("sim/**/*.xml"):
    models.setdefault(os.path.dirname(os.path.relpath(path, "sim")), []).append(path)
data_files += [(f"share/{PACKAGE}/models/{folder}", files) for folder, files in sorted(models.items())]

setup(
    packages=find_packages_mapped(),
    package_dir=ROOTS,
    package_data={
        "sim2real.sim": ["**/*.xml", "**/*.png", "**/*.obj", "**/*.stl", "**/*.yaml"],
        "sim2real.policies": ["**/*.yaml", "**/*.json", "**/*.onnx"],
        "sim2real": ["console/static/*"],  # the correction console's page
    },
    include_package_data=True,
    data_files=data_files,
    zip_safe=False,
)
