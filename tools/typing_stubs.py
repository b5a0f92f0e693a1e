"""Type stubs for MuJoCo's compiled bindings, for the type checker (``make lint``).

MuJoCo ships pybind11 extension modules without ``.pyi`` files, so a static checker
sees ``mujoco.MjModel`` as unknown. This generates stubs from the installed
bindings with pybind11-stubgen into ``typings/`` (pyproject's ``stubPath``; not
committed: they follow whichever MuJoCo is installed) and widens one thing the
generator gets too narrow: pybind11 converts any array-like argument to a NumPy
array, so a parameter typed ``NDArray`` accepts ``ArrayLike`` (``act.ctrlrange =
[-1, 1]`` is valid MuJoCo).

    python tools/typing_stubs.py [OUT_DIR]
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

MODULES = ["mujoco", "mujoco.rollout"]
# An NDArray annotation, optionally inside Annotated[..., "[2, 1]", "flags.writeable"].
_NDARRAY = r'(?:typing\.Annotated\[numpy\.typing\.NDArray\[[\w.]+\](?:, "[^"]*")*\]|numpy\.typing\.NDArray\[[\w.]+\])'
_PARAMETER = re.compile(rf"(\w+: ){_NDARRAY}")


def widen_parameters(stub: str) -> str:
    """``def f(self, x: NDArray[...]) -> R`` becomes ``def f(self, x: ArrayLike) -> R``;
    return types are left as they are (MuJoCo returns real arrays)."""
    lines = []
    for line in stub.splitlines(keepends=True):
        stripped = line.lstrip()
        if stripped.startswith("def ") and "->" in line:
            head, arrow, tail = line.rpartition("->")
            line = _PARAMETER.sub(r"\1numpy.typing.ArrayLike", head) + arrow + tail
        lines.append(line)
    return "".join(lines)


def main(out: Path) -> int:
    subprocess.run(
        [sys.executable, "-m", "pybind11_stubgen", *MODULES, "-o", str(out), "--ignore-all-errors"],
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    stubs = sorted((out / "mujoco").rglob("*.pyi"))
    if not stubs:
        print(f"typing_stubs: pybind11-stubgen wrote nothing under {out}", file=sys.stderr)
        return 1
    for path in stubs:
        path.write_text(widen_parameters(path.read_text()))
    print(f"typing_stubs: {len(stubs)} MuJoCo stub files in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1] if len(sys.argv) > 1 else "typings")))
