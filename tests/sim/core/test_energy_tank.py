"""The energy tank's bookkeeping and the closed-form passivity scaling."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sim2real.sim.core.energy_tank import EnergyTank, TankParams, passive_scale, spring_energy
from sim2real.sim.core.errors import ConfigError

PARAMS = TankParams(initial=1.0, minimum=0.05, maximum=2.0)
finite = st.floats(-1e3, 1e3, allow_nan=False)
energies = st.floats(0.0, 50.0, allow_nan=False)


def test_update_pays_jumps_refunds_drops_and_caps() -> None:
    tank = EnergyTank(PARAMS, 3)
    out = tank.update(np.array([0.5, -0.5, 2.0]))
    np.testing.assert_allclose(tank.level, [0.5, 1.5, 0.05])
    np.testing.assert_allclose(out.injected, [0.5, 0.0, 2.0])
    np.testing.assert_allclose(out.refunded, [0.0, 0.5, 0.0])
    # Only the energy beyond T - T_min counts as violated.
    np.testing.assert_allclose(out.violation, [0.0, 0.0, 2.0 - 0.95])
    tank.update(np.array([-5.0, 0.0, 0.0]))
    assert tank.level[0] == PARAMS.maximum


def test_dissipation_stops_at_the_cap() -> None:
    tank = EnergyTank(PARAMS, 2)
    tank.level[:] = [1.9, 2.0]
    stored = tank.dissipate(np.array([0.5, 0.5]))
    np.testing.assert_allclose(tank.level, [2.0, 2.0])
    np.testing.assert_allclose(stored, [0.1, 0.0])
    # Negative or non-finite dissipation adds nothing.
    tank.level[:] = 1.0
    tank.dissipate(np.array([-1.0, np.nan]))
    np.testing.assert_allclose(tank.level, [1.0, 1.0])


def test_non_finite_jump_fails_closed() -> None:
    tank = EnergyTank(PARAMS, 2)
    tank.update(np.array([np.nan, np.inf]))
    np.testing.assert_allclose(tank.level, [PARAMS.minimum, PARAMS.minimum])


@pytest.mark.parametrize(
    "values", [{"minimum": 0.0}, {"minimum": 3.0}, {"initial": 5.0}, {"maximum": float("nan")}, {"volume": 1.0}]
)
def test_bad_parameters_name_the_field(values: dict) -> None:
    with pytest.raises(ConfigError, match="energy_tank"):
        TankParams.from_dict(values)


@settings(max_examples=300, deadline=None)
@given(
    level=st.floats(0.05, 2.0),
    offsets=st.lists(st.tuples(finite, finite, finite, finite, finite, finite), min_size=1, max_size=1),
    stiffness=st.lists(st.floats(0.0, 1e4), min_size=6, max_size=6),
    old_energy=energies,
)
def test_scaled_command_never_takes_the_tank_below_minimum(level, offsets, stiffness, old_energy) -> None:
    tank = EnergyTank(PARAMS, 1)
    tank.level[:] = level
    offset = np.array(offsets, dtype=float)
    k = np.array([stiffness])
    beta = passive_scale(offset, k, np.array([old_energy]), tank.budget())
    assert 0.0 <= beta[0] <= 1.0
    out = tank.update(spring_energy(offset * beta[:, None], k) - old_energy)
    assert out.violation[0] == 0.0
    assert tank.level[0] >= PARAMS.minimum


@settings(max_examples=100, deadline=None)
@given(level=st.floats(0.05, 2.0), scale=st.floats(0.0, 0.999))
def test_commands_within_budget_pass_unchanged(level, scale) -> None:
    budget = level - PARAMS.minimum
    offset = np.array([[0.1, 0.0, 0.0, 0.0, 0.0, 0.0]])
    k = np.array([[2 * budget * scale / 0.01, 0, 0, 0, 0, 0]])  # V = scale * budget
    beta = passive_scale(offset, k, np.zeros(1), np.array([budget]))
    assert beta[0] == 1.0
