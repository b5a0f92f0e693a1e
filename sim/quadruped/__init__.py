"""The quadruped robot: a 12-DoF Unitree-Go2-scale model, its locomotion tasks and
randomization."""

from sim2real.sim.core.task import Task
from sim2real.sim.quadruped.deployment import QuadrupedDeployment
from sim2real.sim.quadruped.velocity import Velocity
from sim2real.sim.quadruped.velocity_rough import VelocityRough
from sim2real.sim.quadruped.waypoints import Waypoints

TASKS: list[type[Task]] = [
    Velocity,
    VelocityRough,
    Waypoints,
]

DEPLOYMENT = QuadrupedDeployment()
"""What deploying the quadruped needs to know of it (``deployment.py``)."""
