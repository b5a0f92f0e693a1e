"""The shipped policies by name: the one place a policy argument (``--policy``,
``policy:=``, the ``policy`` node's parameter, ``deploy check --policy``) becomes files,
and the one default a robot deploys.

A value that is an existing path is that path. Otherwise it is the name of a shipped
policy (``QuadrupedWaypoints``), found where the install put it: the ROS 2 package's
share (``share/sim2real/policies/<name>/``, through the ament index, after ``colcon
build``), else the package's own files (:data:`sim2real.policies.BASELINES_DIR`: a
source checkout, a pip install). So ``policy:=QuadrupedWaypoints`` works from any
directory, while ``policies/baselines/...`` only resolves inside a source checkout.

Imports pathlib only (the ament index lazily), so a robot's deployment stays torch-free.
"""

from __future__ import annotations

from pathlib import Path

from sim2real.policies import BASELINES_DIR
from sim2real.policies.errors import PolicyFileError

PACKAGE = "sim2real"
SHARE_FOLDER = "policies"
"""``share/sim2real/policies/<name>/``: the shipped policies' ``policy.onnx`` and its
metadata, installed by ``setup.py``."""
CLASSICAL = "classical"


def shipped_dirs() -> list[Path]:
    """Where shipped policies are, first match wins: the ament index's share of the
    package (when a ROS 2 workspace or installation is sourced), then the package's own."""
    dirs = []
    try:
        from ament_index_python.packages import get_package_share_directory

        dirs.append(Path(get_package_share_directory(PACKAGE)) / SHARE_FOLDER)
    except Exception:  # no ament_index_python, no AMENT_PREFIX_PATH, or not in the index
        pass
    return [*[d for d in dirs if d.is_dir()], BASELINES_DIR]


def shipped_names() -> list[str]:
    """Every shipped policy's name (a folder with a ``policy.onnx``)."""
    return sorted({p.parent.name for d in shipped_dirs() for p in d.glob("*/policy.onnx")})


def shipped_policy(name: str) -> Path | None:
    """The folder of the shipped policy ``name``, or None."""
    for folder in shipped_dirs():
        if (folder / name / "policy.onnx").is_file():
            return folder / name
    return None


def resolve_policy(value: str | Path) -> Path:
    """The files a policy argument means: an existing path as it is, else a shipped
    policy's folder.

    Raises:
        PolicyFileError: neither a file nor a shipped name (listing the shipped names).
    """
    path = Path(value)
    if path.exists():
        return path
    if len(path.parts) > 1 or path.suffix in (".onnx", ".json"):  # a path, not a name
        raise PolicyFileError(f"{value} does not exist (export a run with `sim2real export RUN`)")
    found = shipped_policy(str(value))
    if found is not None:
        return found
    raise PolicyFileError(f"{value}: no such file, and no shipped policy of that name (shipped: "
                          f"{', '.join(shipped_names()) or 'none'})")


def default_policy(robot: str) -> str:
    """What a robot deploys when no policy is given, by ``sim2real deploy`` and the
    launch files alike: the shipped policy of its deployment task, else ``classical``."""
    from sim2real.sim import robot_deployment

    task = robot_deployment(robot).task
    return task if shipped_policy(task) is not None else CLASSICAL
