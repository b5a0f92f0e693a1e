"""The drone's gate planner: a smooth path through every gate's centre along its normal,
and the carrot the position controller follows along it (``guidance: path``)."""

from __future__ import annotations

import numpy as np
import pytest

import sim2real.sim as S
from sim2real.sim.core.errors import ConfigError
from sim2real.sim.drone import gate_path
from sim2real.sim.drone.gates import GATE_OPENING_HALF


def _course(seed: int) -> tuple[np.ndarray, np.ndarray]:
    env = S.make("DroneGates", seed=seed, n_gates=5)
    env.reset(seed=seed)
    return env.task.gate_pos[0].copy(), env.task.gate_normal[0].copy()


@pytest.mark.parametrize("seed", range(6))
def test_the_path_crosses_every_gate_at_its_centre_along_its_normal(seed: int) -> None:
    centres, normals = _course(seed)
    path = gate_path.plan_through_gates(np.array([0.0, 0.0, 0.3]), centres, normals)
    steps = np.linalg.norm(np.diff(path, axis=0), axis=1)
    assert steps.max() < 1.5 * gate_path.STEP  # evenly sampled, no jumps
    for centre, normal in zip(centres, normals, strict=True):
        k = int(np.argmin(np.linalg.norm(path - centre, axis=1)))
        assert np.linalg.norm(path[k] - centre) < gate_path.STEP
        direction = path[k + 1] - path[k - 1]
        assert direction @ normal / np.linalg.norm(direction) > 0.99  # flown through, square to the gate
        # Half a metre either side the path is still inside the opening's square tube.
        for d in (-0.15, 0.15):
            near = path[np.argmin(np.linalg.norm(path - (centre + d * normal), axis=1))] - centre
            lateral = near - (near @ normal) * normal
            assert np.abs(lateral).max() < GATE_OPENING_HALF
    np.testing.assert_allclose(path[-1], centres[-1] + gate_path.EXIT * normals[-1], atol=gate_path.STEP)


def test_progress_never_goes_back_and_the_carrot_leads_by_the_lookahead() -> None:
    path = np.zeros((1, 100, 3))
    path[0, :, 0] = np.arange(100) * gate_path.STEP  # a straight line along x
    count, progress = np.array([100]), np.array([10])
    assert gate_path.advance_along(path, count, progress, np.array([[0.0, 0.2, 0.0]]))[0] == 10  # behind: stays
    moved = gate_path.advance_along(path, count, progress, np.array([[1.0, 0.0, 0.0]]))
    assert moved[0] == 20
    np.testing.assert_allclose(gate_path.carrot(path, count, moved, 0.6), [[1.6, 0.0, 0.0]])
    np.testing.assert_allclose(gate_path.carrot(path, count, np.array([98]), 0.6), [path[0, -1]])  # held at the end


def test_path_guidance_aims_the_controller_at_the_carrot() -> None:
    env = S.make("DroneGates", seed=2, guidance="path", lookahead=0.6)
    env.reset(seed=2)
    task = env.task
    for _ in range(60):
        env.step(np.zeros(4))
    expected = gate_path.carrot(task.path, task.path_count, task.progress, 0.6)
    np.testing.assert_allclose(task.target, expected)
    assert task.progress[0] > 0
    with pytest.raises(ConfigError, match="guidance"):
        S.make("DroneGates", guidance="straight")
