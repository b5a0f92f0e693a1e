"""Entry point of the Go2's link process (:mod:`.link`), started by its backend:
``python -m sim2real.hardware.go2.link_main --socket FD --shm FD --config JSON``.

The backend waits for this process before the robot is released from sport mode, so its
start is part of the hand-over. It loads only what the link runs: ``sim2real.sim``'s
package initialisers (every task, MuJoCo's models, SciPy, Gymnasium: half of a 4-5 s
start on a loaded core, none of it used here) are skipped by registering those packages
bare, so importing the Go2's constants and the error types loads just those modules.
Nothing else runs in this process.
"""

from __future__ import annotations

import sys
import types
from pathlib import Path


def lean_imports() -> None:
    import sim2real

    base = Path(sim2real.__file__).parent / "sim"
    for name, path in (("sim2real.sim", base), ("sim2real.sim.quadruped", base / "quadruped")):
        if name not in sys.modules:
            package = types.ModuleType(name)
            package.__path__ = [str(path)]
            sys.modules[name] = package


if __name__ == "__main__":
    lean_imports()
    from sim2real.hardware.go2.link import main

    sys.exit(main())
