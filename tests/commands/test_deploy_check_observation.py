"""``deploy check``'s observation row judges a resting robot against what its policy saw
in training: the running statistics, and the task's own start states. A Crazyflie resting
on its pad at any heading is a start every training episode had (before, a heading of
148 degrees failed the check at |z| 6.8: the policy turns to its own heading within a
second, so the statistics hold little else); upside down it is neither."""

from __future__ import annotations

import math

import numpy as np
import pytest

from sim2real.commands.deploy_check import observation_item
from sim2real.sim.core.deployment import Measurements
from sim2real.sim.drone.base import yaw_quat

HOVER = "policies/baselines/DroneHover"


def _resting(quat: np.ndarray) -> list[Measurements]:
    return [Measurements(base_pos=np.array([0.0, 0.0, 0.02]), base_quat=quat, base_lin_vel=np.zeros(3),
                         base_ang_vel=np.zeros(3)) for _ in range(5)]


@pytest.mark.parametrize("heading_deg", [0.0, 90.0, 148.0, -170.0])
def test_a_drone_resting_at_any_heading_passes(heading_deg: float) -> None:
    item = observation_item("drone", HOVER, _resting(yaw_quat(math.radians(heading_deg))))
    assert item.status == "PASS", item


def test_a_drone_upside_down_fails() -> None:
    item = observation_item("drone", HOVER, _resting(np.array([0.0, 1.0, 0.0, 0.0])))
    assert item.status == "FAIL" and "rot_mat" in item.hint, item
