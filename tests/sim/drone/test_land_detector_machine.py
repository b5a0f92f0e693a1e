"""The land detector under a velocity setpoint is one rule (``idles_on_ground``) for the
simulated ``velocity`` mode and the PX4 emulator: a stateful property test drives both
with random setpoints, landings and take-offs, and checks each tick that their motors
idle exactly when the rule says, and never otherwise."""

from __future__ import annotations

import numpy as np
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

import sim2real  # noqa: F401  (first: picks MUJOCO_GL before mujoco is imported)
from sim2real.hardware.emulator.px4_control import PositionTarget, Px4Control
from sim2real.sim import REGISTRY
from sim2real.sim.core.env import SimEnv
from sim2real.sim.drone.airframe import X500
from sim2real.sim.drone.position_control import TAKEOFF_SPEED, idles_on_ground

CLIMBS = st.sampled_from([-0.5, -0.1, 0.0, 0.05, 0.099, TAKEOFF_SPEED, 0.2, 0.6])


class LandDetector(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.env = SimEnv(REGISTRY.get("X500Hover"), action_mode="velocity", start="ground")
        self.env.reset(seed=0)
        self.control = Px4Control(0.004, X500)
        self.climb = 0.0
        self.landed = True  # the emulator's landed flag, as its vehicle reports it
        self.velocity = np.zeros(3)
        self.emulated = np.zeros(4)
        self.resting = True  # the simulated drone on its pad, slow

    @rule(climb=CLIMBS, horizontal=st.floats(-0.5, 0.5))
    def command(self, climb: float, horizontal: float) -> None:
        """One control period of the simulated drone under this setpoint, and one tick of
        the emulator's controller."""
        self.climb = climb
        velocity = np.array([horizontal, 0.0, climb])
        # Resting before and after the period: one control period spans several inner
        # ticks, and a drone that lifts off (or bounces) within it is rightly flown.
        before = self._on_the_pad()
        self.env.step(velocity / X500.speed_scale)
        self.resting = before and self._on_the_pad()
        self.velocity = velocity
        self._tick_emulator()

    @rule(landed=st.booleans())
    def vehicle_reports(self, landed: bool) -> None:
        self.landed = landed
        self._tick_emulator()

    def _on_the_pad(self) -> bool:
        d = self.env.data
        touching = d.sensordata[self.env.task._touch] > 0.0  # the pad's contact, as the task reads it
        return bool(touching and d.qpos[2] < X500.rest_height + 0.01 and np.linalg.norm(d.qvel[:3]) < 0.3)

    def _tick_emulator(self) -> None:
        self.emulated = self.control.thrusts("OFFBOARD", True, self.landed, PositionTarget(None, self.velocity),
                                             0.5, np.zeros(3), np.zeros(3), np.array([1.0, 0, 0, 0]), np.zeros(3))

    @rule()
    def reset_on_the_pad(self) -> None:
        self.env.reset()
        self.climb, self.velocity, self.resting = 0.0, np.zeros(3), False  # judged after a period
        self._tick_emulator()

    @invariant()
    def motors_idle_exactly_by_the_rule(self) -> None:
        idle = bool(np.all(self.emulated == 0.0))
        assert idle == bool(idles_on_ground(self.landed, self.climb)), (self.landed, self.climb, self.emulated)

    @invariant()
    def a_resting_drone_asked_for_no_climb_is_off(self) -> None:
        if self.resting and bool(idles_on_ground(True, self.climb)):
            assert float(np.abs(self.env.data.ctrl).max()) == 0.0, (self.climb, self.env.data.ctrl)
        if self.climb >= TAKEOFF_SPEED:  # flown: one motor may saturate at 0 while it tilts
            assert float(self.env.data.ctrl.max()) > 0.0, (self.climb, self.env.data.ctrl)


LandDetector.TestCase.settings = settings(max_examples=15, stateful_step_count=15, deadline=None)
TestLandDetector = LandDetector.TestCase
