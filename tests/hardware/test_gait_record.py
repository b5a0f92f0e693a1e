"""The Go2 emulator's walking record: a powered robot that drops is a fall, kept with the
clock time it came at (deploy counts only those in its window: after it, the bridge lies
the robot down with its stiffness still on)."""

from __future__ import annotations

import numpy as np

from sim2real.hardware.emulator.gait_record import FALLEN_HEIGHT, SAMPLE_EVERY, GaitRecord


def _pose(height: float) -> np.ndarray:
    return np.r_[0.0, 0.0, height, 1.0, 0.0, 0.0, 0.0]


def test_a_powered_drop_is_a_fall_at_its_clock_time_and_an_unpowered_one_is_not() -> None:
    record, cmd = GaitRecord(), np.array([0.5, 0.0, 0.0])
    tick = 0

    def run(height: float, powered: bool, now: float, ticks: int = 5 * SAMPLE_EVERY) -> None:
        nonlocal tick
        for _ in range(ticks):
            tick += 1
            record.sample(tick * 0.002, _pose(height), np.zeros(6), cmd, powered, now)

    run(0.29, True, now=100.0)   # standing, powered
    run(FALLEN_HEIGHT - 0.05, True, now=101.5)  # down while powered: a fall
    run(0.29, True, now=103.0)
    run(0.08, False, now=104.0)  # damped, sinking: no fall
    run(0.29, True, now=105.0)
    run(0.1, True, now=130.0)    # lying down under the host's stiffness: a drop too
    summary = record.summary()
    assert summary["falls"] == 2 and summary["fall_times"] == [101.5, 130.0]
    assert sum(t <= 120.0 for t in record.fall_times) == 1  # what a window ending at 120 counts
