"""The sim-to-sim configurations really change the simulator: the integrator, the
physics timestep (the control period kept, so the engine takes more substeps) and the
contacts' time constants; out-of-range settings are refused."""

from __future__ import annotations

import mujoco
import numpy as np
import pytest

from sim2real.sim.core.engine import Engine
from sim2real.sim.core.errors import ConfigError
from sim2real.sim.core.registry import REGISTRY
from sim2real.sim.core.solver import SIM2SIM, SolverVariant


def engine(name: str, solver: SolverVariant | None) -> Engine:
    task = REGISTRY.get(name)(num_envs=2)
    return Engine(task, seed=0, solver=solver)


def test_each_variant_changes_what_it_says() -> None:
    own, variant = engine("QuadrupedVelocity", None), engine("QuadrupedVelocity", SIM2SIM["all"])
    assert variant.nominal.opt.integrator == mujoco.mjtIntegrator.mjINT_RK4 != own.nominal.opt.integrator
    assert variant.nominal.opt.timestep == pytest.approx(own.nominal.opt.timestep / 2)
    assert variant.decimation == 2 * own.decimation
    positive = own.nominal.geom_solref[:, 0] > 0
    assert positive.any()
    np.testing.assert_allclose(variant.nominal.geom_solref[positive, 0], 2 * own.nominal.geom_solref[positive, 0])
    assert all(m.opt.integrator == mujoco.mjtIntegrator.mjINT_RK4 for m in variant.models)  # every env's copy
    # It still simulates: a control step advances time by the control period.
    variant.reset()
    variant.step(np.zeros((2, variant.act_size)))
    assert variant.phys.time[0] == pytest.approx(variant.task.control_dt)


@pytest.mark.parametrize("kwargs", [{"integrator": "Verlet"}, {"substeps": 0}, {"substeps": 1.5},
                                    {"contact_softness": 0.0}, {"contact_softness": 50.0}])
def test_bad_variants_are_refused(kwargs: dict) -> None:
    with pytest.raises(ConfigError):
        SolverVariant(**kwargs)
