"""Domain randomization: validation names fields, draws stay in range and
change the model, nominal values never compound."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from puck import PuckDR, PuckTask

from sim2real.sim.core.errors import ConfigError
from sim2real.sim.core.randomization import DomainRandomization, Range


@pytest.mark.parametrize(
    ("values", "field"),
    [
        ({"friction": [1.5, 0.5]}, "friction"),
        ({"mass_scale": [0.0, 1.0]}, "mass_scale.low"),
        ({"latency_steps": [2, 1]}, "latency_steps"),
        ({"obs_noise_scale": -1}, "obs_noise_scale"),
        ({"friction": [0.5, float("nan")]}, "friction.high"),
        ({"frictoin": [0.5, 1.0]}, "frictoin"),
        ({"friction": "high"}, "friction"),
        ({"enabled": "yes"}, "enabled"),
    ],
)
def test_bad_configs_name_the_field(values: dict, field: str) -> None:
    with pytest.raises(ConfigError) as err:
        DomainRandomization.from_dict(values)
    assert err.value.field == field


def test_round_trip_through_dict() -> None:
    dr = PuckDR.train()
    again = PuckDR.from_dict(dr.to_dict())
    assert again == dr


def test_randomization_changes_the_model_within_ranges_without_compounding() -> None:
    task = PuckTask(num_envs=1)
    nominal = task.build_model()
    import copy

    model = copy.copy(nominal)
    dr = PuckDR.train()
    rng = np.random.default_rng(0)
    frictions = []
    for _ in range(50):
        sampled = dr.apply(model, nominal, rng)
        ratio = model.geom_friction[:, 0] / nominal.geom_friction[:, 0]
        assert dr.friction.contains(ratio)
        assert dr.friction.low <= sampled["friction"] <= dr.friction.high
        mass_ratio = model.body_mass[1] / nominal.body_mass[1]
        assert dr.mass_scale.contains(mass_ratio)
        frictions.append(sampled["friction"])
    assert np.std(frictions) > 0.1
    dr.none().apply(model, nominal, rng)
    np.testing.assert_array_equal(model.geom_friction, nominal.geom_friction)
    np.testing.assert_array_equal(model.body_mass, nominal.body_mass)


@settings(max_examples=40, deadline=None)
@given(lo=st.floats(0.1, 2.0), width=st.floats(0.0, 2.0), seed=st.integers(0, 2**32 - 1))
def test_any_valid_range_samples_inside(lo: float, width: float, seed: int) -> None:
    r = Range(lo, lo + width)
    r.check("x")
    v = r.sample(np.random.default_rng(seed), 100)
    assert r.contains(v)


def test_every_range_field_of_every_robot_declares_and_keeps_its_bounds() -> None:
    """One declaration per field (``uniform(..., at_least, at_most)``): the preset
    check refuses a range past either bound, for every robot's own fields too."""
    import dataclasses

    from sim2real.sim.arm.randomize import ArmRandomization
    from sim2real.sim.core.errors import ConfigError
    from sim2real.sim.core.randomization import Range
    from sim2real.sim.drone.randomize import DroneRandomization
    from sim2real.sim.quadruped.randomize import QuadrupedRandomization

    checked = 0
    for cls in (ArmRandomization, QuadrupedRandomization, DroneRandomization):
        for f in dataclasses.fields(cls):
            bounds = f.metadata.get("bounds")
            if f.default_factory is dataclasses.MISSING or not isinstance(f.default_factory(), Range):
                continue
            assert bounds is not None, f"{cls.__name__}.{f.name} has no declared bounds"
            for end, past in (("low", bounds.low), ("high", bounds.high)):
                if past is None:
                    continue
                value = past - 1.0 if end == "low" else past + 1.0
                bad = Range(value, max(value, past)) if end == "low" else Range(min(value, past), value)
                with pytest.raises(ConfigError, match=f"{f.name}.{end}"):
                    dataclasses.replace(cls.train(), **{f.name: bad}).validate()
                checked += 1
    assert checked >= 20
