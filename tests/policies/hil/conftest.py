import sys
from pathlib import Path

import sim2real  # noqa: F401  (first: picks MUJOCO_GL before mujoco is imported)

sys.path.insert(0, str(Path(__file__).resolve().parent))
