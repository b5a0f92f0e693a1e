"""The quadrotors the drone tasks can fly: each one's mass, geometry and rotors.

``drone.xml`` describes the Crazyflie (:mod:`.constants`); another airframe is the same
model with its numbers written over (:meth:`Airframe.apply`), so the arena, sensors and
task bodies stay one description. A task picks one with its ``airframe`` option
(``"crazyflie"``, the default every shipped policy was trained on, or ``"x500"``,
:mod:`.x500`); everything that scales with the vehicle (thrust limits, the mixer, the
hover command, the resting height) comes from here rather than from the Crazyflie's
constants.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import mujoco
import numpy as np

from sim2real.sim.core.errors import ConfigError
from sim2real.sim.drone import constants as C
from sim2real.sim.drone import x500

PAD_TOP: float = 0.005
"""m, top of the landing pad every drone task starts on."""


@dataclass(frozen=True)
class Airframe:
    name: str
    mass: float
    """kg, take-off mass."""
    inertia: tuple[float, float, float]
    """kg m^2, principal moments."""
    rotor_offset: float
    """m, x and y offset of each motor (X configuration)."""
    prop_radius: float
    max_thrust: float
    """N per rotor at full command."""
    yaw_torque_ratio: float
    """m, reaction torque per newton of thrust."""
    motor_time_constant: float
    """s, first-order lag from command to thrust."""
    linear_drag: float
    """N s/m, rotor drag growing linearly with airspeed."""
    collision_half_size: tuple[float, float, float]
    battery_cells: int = 1
    """LiPo cells in series (the Crazyflie's 1S; the X500's 4S [HB])."""
    max_speed: tuple[float, float] = (1.5, 1.0)
    """m/s, horizontal and vertical speed at ``velocity`` action 1 (the command space's
    range; the safety filter's speed limits sit within it). The Crazyflie's: the cascaded
    PID's own speed limits."""

    @property
    def speed_scale(self) -> np.ndarray:
        """m/s per unit ``velocity`` action, (x, y, z)."""
        return np.array([self.max_speed[0], self.max_speed[0], self.max_speed[1]])

    @property
    def hover_thrust(self) -> float:
        """N, total thrust that balances gravity."""
        return self.mass * C.GRAVITY

    @property
    def max_collective_thrust(self) -> float:
        """N, all four rotors at full command (``ctbr`` collective action +1)."""
        return 4.0 * self.max_thrust

    @property
    def hover_command(self) -> float:
        """Rotor command in ``[0, 1]`` that balances the nominal weight."""
        return self.hover_thrust / self.max_collective_thrust

    @property
    def rest_height(self) -> float:
        """m, body-frame origin height when resting on the 5 mm landing pad."""
        return PAD_TOP + self.collision_half_size[2]

    def clearance(self, height: np.ndarray, rotation: np.ndarray, ground: float = PAD_TOP) -> np.ndarray:
        """m, how far the collision box's lowest corner is above ``ground`` (m, the top of
        the surface it rests on; default the landing pad's) for body origins at ``height``
        ``[B]`` with attitudes ``rotation`` ``[B, 3, 3]``: a tilted X500 reaches 0.3 m x
        sin(tilt) further down than its centre says, a Crazyflie hardly at all."""
        reach = np.abs(rotation[:, 2, :]) @ np.asarray(self.collision_half_size)
        return np.asarray(height) - reach - ground

    @cached_property
    def rotor_xy(self) -> np.ndarray:
        """Motor positions M1..M4 in the body frame (x, y), metres."""
        return self.rotor_offset * np.array([[1.0, -1.0], [-1.0, -1.0], [-1.0, 1.0], [1.0, 1.0]])

    @cached_property
    def mixer(self) -> np.ndarray:
        """``[4, 4]`` map from (collective, roll, pitch, yaw torque) to rotor thrusts."""
        return np.linalg.inv(C.allocation_matrix(self.rotor_xy, C.ROTOR_SPIN, self.yaw_torque_ratio))

    def apply(self, spec: mujoco.MjSpec) -> None:
        """Write this airframe over ``drone.xml``'s Crazyflie: mass, inertia, rotor sites and
        actuators, the collision box (the drag ellipsoid too) and the air's effective
        viscosity (:mod:`.constants` explains the drag model). Visual parts and the chase
        camera scale with the arm, so pictures still frame the vehicle."""
        body = spec.body("drone")
        body.mass, body.inertia = self.mass, list(self.inertia)
        scale = self.rotor_offset / C.ROTOR_OFFSET
        for geom in body.geoms:
            if geom.name == "hull":
                geom.size = list(self.collision_half_size)
            else:
                geom.pos, geom.size = np.asarray(geom.pos) * scale, np.asarray(geom.size) * scale
                if geom.type == mujoco.mjtGeom.mjGEOM_CAPSULE:  # arms: fromto endpoints
                    geom.fromto = np.asarray(geom.fromto) * scale
        for camera in body.cameras:
            if camera.name == "chase":
                camera.pos = np.asarray(camera.pos) * scale
        touch_scale = np.asarray(self.collision_half_size) / np.asarray(C.COLLISION_HALF_SIZE)
        for site in body.sites:
            if site.name == "touch":
                site.size = np.asarray(site.size) * touch_scale
            elif site.name.startswith("thrust"):
                x, y = self.rotor_xy[int(site.name[-1]) - 1]
                site.pos = [x, y, 0.0]
        for i, actuator in enumerate(spec.actuators):
            actuator.gainprm[0] = self.max_thrust
            actuator.dynprm[0] = self.motor_time_constant
            actuator.gear[5] = -C.ROTOR_SPIN[i] * self.yaw_torque_ratio
        spec.option.viscosity = self.linear_drag / (6.0 * np.pi * float(np.mean(self.collision_half_size)))


CRAZYFLIE = Airframe(
    name="crazyflie", mass=C.MASS, inertia=C.INERTIA, rotor_offset=float(C.ROTOR_OFFSET), prop_radius=C.PROP_RADIUS,
    max_thrust=C.MAX_THRUST, yaw_torque_ratio=C.YAW_TORQUE_RATIO, motor_time_constant=C.MOTOR_TIME_CONSTANT,
    linear_drag=C.LINEAR_DRAG, collision_half_size=C.COLLISION_HALF_SIZE)
"""The Crazyflie 2.x, as ``drone.xml`` describes it (:mod:`.constants`)."""
X500 = Airframe(
    name="x500", mass=x500.MASS, inertia=x500.INERTIA, rotor_offset=x500.ROTOR_OFFSET, prop_radius=x500.PROP_RADIUS,
    max_thrust=x500.MAX_THRUST, yaw_torque_ratio=x500.YAW_TORQUE_RATIO, motor_time_constant=x500.MOTOR_TIME_CONSTANT,
    linear_drag=x500.LINEAR_DRAG, collision_half_size=x500.COLLISION_HALF_SIZE, battery_cells=x500.BATTERY_CELLS,
    max_speed=x500.MAX_SPEED)
"""The Holybro X500 V2, as PX4's Gazebo model describes it (:mod:`.x500`)."""
AIRFRAMES: dict[str, Airframe] = {a.name: a for a in (CRAZYFLIE, X500)}


def airframe(name: str) -> Airframe:
    """The airframe called ``name``.

    Raises:
        ConfigError: no such airframe.
    """
    if name not in AIRFRAMES:
        raise ConfigError("airframe", f"one of {sorted(AIRFRAMES)}, got {name!r}")
    return AIRFRAMES[name]
