"""Command spaces come from the robots (``RobotDeployment.command_layout``): every mode a
robot lists is deployable and consistent, and a robot added with a layout of its own
needs nothing from the safety layer (before, ``spaces.py`` branched on robot names)."""

from __future__ import annotations

import types
from typing import Any

import numpy as np
import pytest

from sim2real.errors import ConfigError
from sim2real.policies.safety.spaces import command_space
from sim2real.sim import ROBOTS
from sim2real.sim.core.commands import CommandLayout
from sim2real.sim.drone.deployment import DroneDeployment


@pytest.mark.parametrize(("robot", "mode"), [(r, m) for r, pkg in ROBOTS.items() for m in pkg.DEPLOYMENT.command_modes])
def test_every_listed_mode_has_a_consistent_space(robot: str, mode: str) -> None:
    space = command_space(robot, mode)
    assert space.robot == robot and space.action_mode == mode
    assert len(space.names) == len(space.units) == space.offset.shape[0] == space.scale.shape[0] > 0
    assert np.all(space.scale != 0) and space.control_dt > 0
    action = np.linspace(-1.0, 1.0, space.size)
    np.testing.assert_allclose(space.command_to_action(space.action_to_command(action)), action, atol=1e-9)


def test_a_new_robot_brings_its_own_layout(monkeypatch: pytest.MonkeyPatch) -> None:
    class BigDrone(DroneDeployment):  # a heavier quadrotor: only its thrust differs
        name = "big_drone"

        def command_layout(self, action_mode: str, action_scale: float | None = None) -> CommandLayout | None:
            layout = super().command_layout(action_mode, action_scale)
            if layout is None:
                return None
            return CommandLayout(layout.names, layout.units, np.r_[20.0, layout.offset[1:]],
                                 np.r_[20.0, layout.scale[1:]], layout.control_dt)

    package: Any = types.SimpleNamespace(TASKS=[], DEPLOYMENT=BigDrone())
    monkeypatch.setitem(ROBOTS, "big_drone", package)
    space = command_space("big_drone", "ctbr")
    assert space.upper[0] == pytest.approx(40.0) and space.names[0] == "thrust"
    with pytest.raises(ConfigError, match=r"big_drone 'joint_pos' has no deployment command space.*big_drone ctbr"):
        command_space("big_drone", "joint_pos")
