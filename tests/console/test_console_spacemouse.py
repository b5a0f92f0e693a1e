"""A SpaceMouse on the console's machine is one more operator input under the same rules.
The device cannot exist here: its reads are pyspacemouse's state objects, made by hand."""

from __future__ import annotations

import time
from types import SimpleNamespace

import numpy as np

from sim2real.console.spacemouse import SpaceMouseInput
from sim2real.policies.teleop.operator import HOLD, HUMAN, POLICY, OperatorSettings
from sim2real.policies.teleop.target import ConsoleTarget


class Target(ConsoleTarget):
    def camera_names(self) -> list[str]:
        return []

    def snapshot(self) -> dict:
        return {}

    def estop(self, reason: str) -> str:
        return ""

    def reset_estop(self) -> str:
        return ""


def test_the_left_button_takes_over_the_puck_drives_and_a_silent_device_holds() -> None:
    target = Target("quadruped", "ros", OperatorSettings(blend_seconds=0.0))
    state = SimpleNamespace(x=0.0, y=0.6, z=0.0, roll=0.0, pitch=0.0, yaw=-0.5, buttons=[0, 0])
    mouse = SpaceMouseInput(target, lambda: state)
    mouse.poll_once()
    assert target.control.mode == POLICY and target.devices["spacemouse"]["axes"] == [0.6, 0.0, 0.0, 0.5]
    state.buttons = [1, 0]
    mouse.poll_once()
    time.sleep(0.01)
    mouse.poll_once()
    out = target.control.output(time.monotonic() + 0.05)  # before the dead man
    assert target.control.mode == HUMAN and target.control.owner == "spacemouse"
    assert out.human is not None and np.allclose(out.human, [0.6 * 1.0, 0.0, 0.5 * 1.0])  # vx, vy, yaw rate
    # The device goes silent (unplugged) while held: the dead man holds the robot.
    assert target.control.output(time.monotonic() + 0.5).mode == HOLD
    state.buttons = [0, 0]
    mouse.poll_once()
    assert target.control.mode == POLICY and not target.control.owner
