"""The simulated quadrotor every drone emulator flies (the Crazyflie's and PX4's).

One environment of a drone task in ``ctbr`` mode, stepped by the emulator's own
controller: the emulator writes rotor commands, :meth:`SimulatedDrone.step` runs the
physics for one controller tick. It also keeps the task's episode bookkeeping (crash,
success) that ``deploy --emulate`` reports, so both emulators count episodes the same way.
"""

from __future__ import annotations

import math
import time
from typing import Any

import mujoco
import numpy as np

from sim2real.hardware.emulator.base import Emulator, Mission, episode_summary
from sim2real.sim import robot_deployment
from sim2real.sim.core.deployment import Measurements
from sim2real.sim.core.env import SimEnv
from sim2real.sim.core.errors import ConfigError
from sim2real.sim.core.registry import REGISTRY
from sim2real.sim.drone import constants as C
from sim2real.sim.drone.base import DroneTask


def check_tick(tick: float) -> None:
    """An emulator's tick must be a whole number of physics steps.

    Raises:
        ConfigError: it is not.
    """
    steps = tick / C.PHYSICS_DT
    if not (math.isfinite(steps) and steps >= 1 and abs(steps - round(steps)) < 1e-9):
        raise ConfigError("tick", f"must be a multiple of the physics step {C.PHYSICS_DT}, got {tick}")


class SimulatedDrone:
    """One simulated drone of ``task`` (a registered drone task), stepped ``tick`` s at a time.

    Raises:
        ConfigError: ``task`` is not a drone task, a bad tick or task option.
    """

    def __init__(self, task: str, tick: float, seed: int = 0, start: str = "ground",
                 dr: str | dict[str, Any] = "none", **task_options: Any) -> None:
        check_tick(tick)
        self.env = SimEnv(REGISTRY.get(task), action_mode="ctbr", dr=dr, seed=seed, start=start, **task_options)
        if not isinstance(self.env.task, DroneTask):
            self.env.close()
            raise ConfigError("task", f"{task} is not a drone task")
        self.task: DroneTask = self.env.task
        self.env.reset(seed=seed)
        self.model, self.data = self.env.model, self.env.data
        self._read = robot_deployment(self.task.robot).state_reader(self.task, self.model)
        sensor = mujoco.mjtObj.mjOBJ_SENSOR
        self._gyro = int(self.model.sensor_adr[mujoco.mj_name2id(self.model, sensor, "gyro")])
        self._acc = int(self.model.sensor_adr[mujoco.mj_name2id(self.model, sensor, "accelerometer")])
        self.substeps = round(tick / C.PHYSICS_DT)
        self.ticks_per_control = max(1, round(C.CONTROL_DT / tick))
        self.control_steps = 0
        self.episodes: list[bool] = []
        self.episode_ends: list[float] = []
        self.crashes = 0
        """Episodes the task ended as crashes (a hard landing, a flip, the geofence)."""

    # -- sensors and physics --------------------------------------------------------------------
    def gyro(self) -> np.ndarray:
        """Body rates (FLU, rad/s), as the flight controller's gyro reads them."""
        return np.array(self.data.sensordata[self._gyro:self._gyro + 3], dtype=np.float64)

    def specific_force(self) -> np.ndarray:
        """The accelerometer (body FLU, m/s^2)."""
        return np.array(self.data.sensordata[self._acc:self._acc + 3], dtype=np.float64)

    def step(self, rotor_commands: np.ndarray) -> None:
        """Hold the rotors' commands (0..1 of each rotor's full thrust) for one tick of physics."""
        self.data.ctrl[:] = rotor_commands
        mujoco.mj_step(self.model, self.data, self.substeps)

    def state(self) -> Measurements:
        """The true state, as the deployment reads it."""
        return self._read(self.data, self.env.engine.phys)

    # -- the task's episodes ------------------------------------------------------------------------
    def evaluate(self) -> bool:
        """The task's episode bookkeeping, once per control period: an episode ends at a crash
        or after the task's length. A crash puts the drone back on its pad (a person picks it
        up); returns True then, so the emulator resets its controllers."""
        result = self.task.evaluate(self.env.engine.phys, np.zeros((1, 4)))
        self.control_steps += 1
        crashed = bool(result.terminated[0]) or not np.all(np.isfinite(self.data.qpos))
        if crashed or self.control_steps * C.CONTROL_DT >= self.task.episode_seconds:
            self.episodes.append(bool(result.success[0]) and not crashed)
            self.episode_ends.append(time.monotonic())
            self.control_steps = 0
            self.task.time_in_tolerance[:] = 0.0
            if crashed:
                self.crashes += 1
                self.env.reset()
        return crashed

    def mission(self) -> Mission:
        return Mission(goal=np.asarray(self.task.target[0], dtype=np.float64).copy(), course=self.task.course(0),
                       episodes=len(self.episodes), successes=sum(self.episodes))

    def summary(self) -> dict[str, Any]:
        return {**episode_summary(self.episodes, self.episode_ends), "crashes": self.crashes}

    def close(self) -> None:
        self.env.close()


class DroneEmulator(Emulator):
    """An emulator over a :class:`SimulatedDrone` (``self.drone``): the mission and the
    episode counters every drone emulator reports."""

    robot = "drone"
    drone: SimulatedDrone

    @property
    def crashes(self) -> int:
        return self.drone.crashes

    @property
    def episodes(self) -> list[bool]:
        return self.drone.episodes

    def mission(self) -> Mission | None:
        return self.drone.mission()
