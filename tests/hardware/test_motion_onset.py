"""Issue 44: enable -> first motion. An emulator notes when its robot first moved under
power, measured from where it last rested unpowered (``MotionOnset``)."""

from __future__ import annotations

import numpy as np

from sim2real.hardware.emulator.base import MotionOnset


def test_motion_unpowered_moves_the_rest_and_motion_under_power_is_the_onset() -> None:
    onset = MotionOnset(threshold=0.01)
    onset.observe(1.0, np.array([0.0, 0.0]), powered=False)
    onset.observe(2.0, np.array([0.5, 0.0]), powered=False)  # the legs fold under the weight: no onset
    assert onset.at is None
    onset.observe(3.0, np.array([0.505, 0.0]), powered=True)  # within the threshold of its rest
    assert onset.at is None
    onset.observe(4.0, np.array([0.5, -0.02]), powered=True)
    assert onset.at == 4.0
    onset.observe(5.0, np.array([0.0, 0.0]), powered=False)  # the first onset stays
    assert onset.summary() == {"first_motion_at": 4.0}


def test_powered_from_the_start_measures_from_the_first_pose() -> None:
    onset = MotionOnset(threshold=0.001)
    assert onset.summary() == {"first_motion_at": None}
    onset.observe(1.0, np.array([0.1, 0.2, 0.3]), powered=True)
    onset.observe(2.0, np.array([0.1, 0.2, 0.3005]), powered=True)
    assert onset.at is None
    onset.observe(3.0, np.array([0.1, 0.2, 0.302]), powered=True)
    assert onset.at == 3.0
