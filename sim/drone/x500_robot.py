"""The Holybro X500 V2 as a registered robot (``x500``): a PX4-class quadrotor, flown
through PX4's offboard mode (:mod:`sim2real.hardware.px4`).

A robot of the drone class that shares the class's folder: its tasks are the drone's,
flying the X500 airframe (:mod:`.x500`, :mod:`.airframe`), and its deployment is the
drone's with the X500's thrust behind the command space, the safety filter's limits and
its fallback. Like ``sim/arm/ur5e_robot.py``, this module is its registration.
"""

from typing import ClassVar

from sim2real.sim.core.task import Task
from sim2real.sim.drone.airframe import X500, Airframe
from sim2real.sim.drone.deployment import DroneDeployment
from sim2real.sim.drone.hover import Hover
from sim2real.sim.drone.waypoints import Waypoints


class X500Hover(Hover):
    """:class:`Hover` on the X500."""

    robot: ClassVar[str] = "x500"
    default_airframe: ClassVar[str] = "x500"


class X500Waypoints(Waypoints):
    """:class:`Waypoints` on the X500."""

    robot: ClassVar[str] = "x500"
    default_airframe: ClassVar[str] = "x500"


class X500Deployment(DroneDeployment):
    name = "x500"
    task = "X500Hover"
    real_backend = "px4"
    other_backends = ()
    airframe: ClassVar[Airframe] = X500
    # No gate course: the Crazyflie's gates are narrower than the X500's rotor span.
    observable = DroneDeployment.observable - {"gate_normal", "next_gate_offset", "gates_left"}


TASKS: list[type[Task]] = [X500Hover, X500Waypoints]

DEPLOYMENT = X500Deployment()
"""What deploying the X500 needs to know of it."""
