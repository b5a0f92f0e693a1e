"""The UR5e as a registered robot (``ur5e``): its tasks and its deployment description.

A robot of the arm class that shares the class's folder (its model and task code live in
``sim/arm/``, beside the Franka-scale arm's), so its registration is this module rather
than a package of its own: ``sim/__init__.py``'s ``ROBOTS`` takes either, anything with
``TASKS`` and ``DEPLOYMENT``.
"""

from sim2real.sim.arm.ur5e_deployment import Ur5eDeployment
from sim2real.sim.arm.ur5e_task import Ur5eReach
from sim2real.sim.core.task import Task

TASKS: list[type[Task]] = [Ur5eReach]

DEPLOYMENT = Ur5eDeployment()
"""What deploying the UR5e needs to know of it (``ur5e_deployment.py``)."""
