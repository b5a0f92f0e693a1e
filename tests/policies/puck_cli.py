"""`sim2real` with the test PuckTask registered, for tests that need a real
subprocess (crash safety, no-torch checks): ``python puck_cli.py train TestPuck ...``."""

import sys
from pathlib import Path

import sim2real  # noqa: F401  (first: it picks MUJOCO_GL before anything imports mujoco)

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "sim" / "core"))

from puck import PuckTask

from sim2real.cli import main
from sim2real.sim import REGISTRY

if __name__ == "__main__":
    REGISTRY.register(PuckTask)
    sys.exit(main())
