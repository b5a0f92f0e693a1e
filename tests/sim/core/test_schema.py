"""The one strict loader (issue 26, defect 2): every config family goes through it, a
bad value fails at load time with one line naming the file, the key, the value and
what was expected, and every config file shipped in the repository loads."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Literal

import pytest

from sim2real.errors import ConfigError
from sim2real.sim.core.schema import Bounds, Positive, field_docs, fields_of, from_dict, load_file, nest

ROOT = Path(__file__).resolve().parents[3]


@dataclass
class Inner:
    rate: Positive = 1.0
    """Hz."""


@dataclass
class Outer:
    name: Literal["a", "b"] = "a"
    """Which one."""
    count: Annotated[int, Bounds(ge=1, le=10)] = 2
    sizes: tuple[int, ...] = (1, 2)
    inner: Inner = field(default_factory=Inner)
    maybe: Positive | None = None


@pytest.mark.parametrize("values,key,words", [
    ({"count": 64.7}, "count", "expected an integer"),
    ({"count": 11}, "count", "out of range"),
    ({"count": True}, "count", "expected an integer"),
    ({"name": "c"}, "name", "not one of"),
    ({"inner": {"rate": "abc"}}, "inner.rate", "expected a number"),
    ({"inner": {"rate": 0}}, "inner.rate", "out of range"),
    ({"inner": {"rate": float("nan")}}, "inner.rate", "finite"),
    ({"inner": {"rate": "inf"}}, "inner.rate", "finite"),
    ({"inner": {"rte": 1}}, "inner.rte", "unknown field"),
    ({"maybe": -1.0}, "maybe", "out of range"),
    ({"sizes": 3}, "sizes", "expected a list"),
])
def test_bad_values_name_the_key_the_value_and_what_was_expected(values: dict, key: str, words: str) -> None:
    with pytest.raises(ConfigError) as err:
        from_dict(Outer, values)
    assert err.value.field == key and words in str(err.value)


def test_numbers_as_yaml_1_1_writes_them_are_numbers_and_tuples_stay_tuples() -> None:
    out = from_dict(Outer, {"inner": {"rate": "3e-4"}, "sizes": [4, 5], "maybe": None})
    assert out.inner.rate == pytest.approx(3e-4) and out.sizes == (4, 5) and out.maybe is None


def test_an_error_in_a_file_names_the_file_on_one_line(tmp_path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("inner:\n  rate: abc\n")
    with pytest.raises(ConfigError) as err:
        load_file(Outer, path)
    assert str(err.value) == f"{path}: inner.rate: expected a number, got 'abc'"


def test_field_docs_and_specs_come_from_the_source() -> None:
    assert field_docs(Outer)["name"] == "Which one." and field_docs(Inner)["rate"] == "Hz."
    specs = {s.name: s for s in fields_of(Outer)}
    assert specs["count"].bounds == Bounds(ge=1, le=10) and specs["name"].choices == ("a", "b")
    assert specs["maybe"].bounds == Bounds(gt=0.0)


def test_nest_refuses_a_value_used_as_a_section() -> None:
    assert nest({"a.b": 1, "a.c": 2, "d": None}) == {"a": {"b": 1, "c": 2}}
    with pytest.raises(ConfigError):
        nest({"a": 1, "a.b": 2})


# -- every family -----------------------------------------------------------------------------
def test_hil_config_reads_3e_minus_4_as_a_number_and_refuses_abc(tmp_path) -> None:
    """Reproduced on the old code: ``lr: 3e-4`` arrived as the string '3e-4' and crashed in
    Adam; ``lr: abc`` and ``image_size: 64.7`` were accepted."""
    from sim2real.policies.config_loading import read_yaml
    from sim2real.policies.hil.config import HilConfig

    path = tmp_path / "hil.yaml"
    path.write_text("learner:\n  lr: 3e-4\n")
    assert read_yaml(path)["learner"]["lr"] == "3e-4"  # what YAML 1.1 gives
    assert HilConfig.from_dict(read_yaml(path)).learner.lr == pytest.approx(3e-4)
    for bad, key in (({"learner": {"lr": "abc"}}, "learner.lr"),
                     ({"env": {"image_size": 64.7}}, "env.image_size"),
                     ({"env": {"image_size": 8}}, "env.image_size"),
                     ({"learner": {"discount": 1.0}}, "learner.discount")):
        with pytest.raises(ConfigError) as err:
            HilConfig.from_dict(bad)
        assert err.value.field == key


def test_safety_presets_refuse_a_word_for_a_number() -> None:
    from sim2real.policies.safety import params_from_dict

    with pytest.raises(ConfigError, match="command_timeout_periods: expected a number, got 'two'"):
        params_from_dict("drone", {"command_timeout_periods": "two"})
    with pytest.raises(ConfigError, match="max_tilt"):
        params_from_dict("drone", {"max_tilt": 2.0})
    assert params_from_dict("arm", {"max_linear_speed": 0.5}).max_linear_speed == 0.5


def test_tank_and_randomization_go_through_the_same_loader() -> None:
    from sim2real.sim.core.energy_tank import TankParams
    from sim2real.sim.drone.randomize import DroneRandomization

    with pytest.raises(ConfigError, match=r"energy_tank\.minimum: expected a number"):
        TankParams.from_dict({"minimum": "low"})
    with pytest.raises(ConfigError, match="latency_steps"):
        DroneRandomization.from_dict({"latency_steps": [0, 1.5]})


def test_every_training_config_file_shipped_loads() -> None:
    from sim2real.policies.config import TrainConfig
    from sim2real.policies.config_loading import read_yaml

    files = sorted((ROOT / "policies" / "configs").glob("*.yaml")) + sorted(
        p for p in (ROOT / "benchmarks" / "configs").glob("*.yaml") if not p.name.startswith("sweep_"))
    # (sweep_*.yaml are `sim2real sweep` files: tests/policies/sweep/test_sweep_space.py loads them)
    assert len(files) >= 8
    for path in files:  # layers: types and ranges
        from_dict(TrainConfig, read_yaml(path), validate=False)
    for path in sorted((ROOT / "policies" / "baselines").glob("*/config.yaml")):  # whole runs: validated too
        assert TrainConfig.from_dict(read_yaml(path)).task


def test_a_layer_error_names_its_file(tmp_path) -> None:
    from sim2real.policies.config_loading import resolve_config

    path = tmp_path / "run.yaml"
    path.write_text("ppo:\n  n_steps: many\n")
    with pytest.raises(ConfigError) as err:
        resolve_config("ArmReach", path)
    assert str(err.value).startswith(f"{path}: ppo.n_steps: expected an integer")
    with pytest.raises(ConfigError, match=r"^command line: ppo\.n_steps: 0 is out of range"):
        resolve_config("ArmReach", None, {"ppo.n_steps": 0})


def test_the_configuration_reference_in_the_docs_is_generated_from_the_code() -> None:
    from sim2real.commands.config import reference

    text = reference()
    assert (ROOT / "docs" / "CONFIGURATION.md").read_text() == text, \
        "docs/CONFIGURATION.md is stale: run `sim2real config reference > docs/CONFIGURATION.md`"
    for key in ("`ppo.n_steps`", "`learner.lr`", "`max_tilt`", "`flush_period`", "`wind_speed`"):
        assert key in text
