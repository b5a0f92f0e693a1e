"""sim2real: robot control policies from MuJoCo simulation to ROS 2 robots.

The import namespace maps onto the repository's top-level folders:
``sim2real.sim`` (``sim/``), ``sim2real.policies`` (``policies/``),
``sim2real.ros_nodes`` (``ros_nodes/``), ``sim2real.hardware`` (``hardware/``).
"""

from sim2real.gl_backend import choose_gl_backend as _choose_gl_backend

# Must run before anything imports mujoco (MuJoCo reads MUJOCO_GL at import time), and
# Python imports this package before any sim2real.* module. It stays light: importing
# the package loads no layer (a robot's ONNX policy chain never loads mujoco or torch).
_choose_gl_backend()

__version__ = "0.1.0"
