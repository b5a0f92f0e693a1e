"""sim2real: robot control policies from MuJoCo simulation to ROS 2 robots.

The import namespace maps onto the repository's top-level folders:
``sim2real.sim`` (``sim/``), ``sim2real.policies`` (``policies/``),
``sim2real.ros_nodes`` (``ros_nodes/``), ``sim2real.hardware`` (``hardware/``).
"""

__version__ = "0.1.0"

# Every layer stands on the simulation layer, which chooses the headless GL backend
# before anything imports mujoco (sim2real/sim/gl.py): load it first, whichever
# sim2real.* module a process imports.
import sim2real.sim  # noqa: F401
