"""The drone robot: a Crazyflie-2.x-scale quadrotor, its tasks and randomization."""

from sim2real.sim.core.task import Task
from sim2real.sim.drone.deployment import DroneDeployment
from sim2real.sim.drone.gates import Gates
from sim2real.sim.drone.hover import Hover
from sim2real.sim.drone.waypoints import Waypoints

TASKS: list[type[Task]] = [
    Hover,
    Waypoints,
    Gates,
]

DEPLOYMENT = DroneDeployment()
"""What deploying the drone needs to know of it (``deployment.py``)."""
