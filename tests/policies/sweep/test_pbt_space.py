"""``scheduler: {pbt: ...}`` is checked before Ray starts: its options, and that every
``space`` key is one a restored model reads again (else PBT would write a value into
config.yaml that the running model never uses)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from sim2real.errors import ConfigError
from sim2real.policies.common.hyperparameters import MUTABLE
from sim2real.policies.sweep import pbt, space
from sim2real.policies.sweep.runner import spec_record

PBT = {
    "task": "ArmReach",
    "set": {"total_steps": 300000, "eval.every_steps": 25000},
    "space": {"ppo.learning_rate": {"loguniform": [1.0e-4, 1.0e-3]}, "ppo.ent_coef": {"choice": [0.0, 0.005, 0.01]},
              "ppo.gae_lambda": {"uniform": [0.9, 0.99]}},
    "samples": 4,
    "scheduler": {"pbt": {"perturbation_interval_steps": 50000, "quantile_fraction": 0.5,
                          "resample_probability": 0.1}},
}


def load(tmp_path: Path, **changes) -> space.SweepSpec:
    data = {**PBT, **changes}
    path = tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump(data))
    return space.load(path)


def pbt_opts(**options) -> dict:
    return {"pbt": {**PBT["scheduler"]["pbt"], **options}}


def test_pbt_parses_into_options_and_mutations(tmp_path: Path) -> None:
    spec = load(tmp_path)
    assert spec.scheduler.kind == "pbt" and spec.scheduler.pbt == pbt.PBTOptions(50000, 0.5, 0.1, False)
    muts = pbt.mutations(spec.space)
    assert muts["ppo.ent_coef"] == [0.0, 0.005, 0.01]  # lists: PBT moves to a neighbour or resamples
    assert muts["ppo.learning_rate"].lower == 1e-4 and muts["ppo.learning_rate"].upper == 1e-3
    # A perturbed range value (x1.2) is kept inside the range the config accepts.
    clamp = pbt.ClampToSpace({"ppo.gae_lambda": (0.9, 0.99)})
    assert clamp({"ppo.gae_lambda": 0.99 * 1.2, "ppo.ent_coef": 0.01}) == {"ppo.gae_lambda": 0.99,
                                                                           "ppo.ent_coef": 0.01}
    assert spec_record(spec)["scheduler"]["pbt"]["perturbation_interval_steps"] == 50000


def test_default_interval_and_bare_pbt(tmp_path: Path) -> None:
    spec = load(tmp_path, scheduler="pbt")
    assert spec.scheduler.pbt is not None
    assert spec.scheduler.pbt.perturbation_interval_steps == 25000  # ~total/10, on an evaluation


def test_asha_record_is_unchanged(tmp_path: Path) -> None:
    """A sweep started before PBT existed still resumes: its scheduler record has no new keys."""
    spec = load(tmp_path, scheduler={"asha": {"grace_steps": 50000}})
    assert spec_record(spec)["scheduler"] == {"kind": "asha", "grace_steps": 50000, "reduction_factor": 2.0}


@pytest.mark.parametrize(("changes", "message"), [
    ({"scheduler": pbt_opts(perturbation_interval_steps=30000)},
     r"scheduler.pbt.perturbation_interval_steps: 30000 is not a multiple of eval.every_steps \(25000\)"),
    ({"scheduler": pbt_opts(perturbation_interval_steps=300000)}, "leaves no perturbation"),
    ({"scheduler": pbt_opts(quantile_fraction=0.7)}, r"scheduler.pbt.quantile_fraction: must be in \(0, 0.5\]"),
    ({"scheduler": pbt_opts(resample_probability=2)}, r"scheduler.pbt.resample_probability: must be in \[0, 1\]"),
    ({"scheduler": pbt_opts(synch="yes")}, "scheduler.pbt.synch: expected true or false"),
    ({"scheduler": pbt_opts(interval=5)}, "scheduler.pbt.interval: unknown option"),
    ({"samples": 1}, "samples: PBT needs a population"),
    ({"set": {"total_steps": 300000, "eval.every_steps": 0}}, r"scheduler.pbt: needs evaluations"),
])
def test_bad_pbt_options(tmp_path: Path, changes: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        load(tmp_path, **changes)


@pytest.mark.parametrize(("key", "dist", "why"), [
    ("net.pi", {"choice": [[32, 32], [64, 64]]}, "it sizes the networks"),
    ("ppo.n_steps", {"choice": [64, 128]}, "it sizes the rollout buffer"),
    ("n_envs", {"choice": [16, 32]}, "it sizes the environments"),
    ("seed", {"randint": [0, 10]}, "saved RNG states"),
    ("ppo.log_std_init", {"uniform": [-1.0, 0.0]}, "only initializes the learned log-std"),
    ("sac.tau", {"uniform": [0.001, 0.01]}, "a ppo run does not read the sac block"),
    ("eval.episodes", {"choice": [10, 20]}, "the restored model does not read it again"),
])
def test_keys_pbt_cannot_change_are_refused(tmp_path: Path, key: str, dist: dict, why: str) -> None:
    with pytest.raises(ConfigError, match=rf"space.{key}: PBT cannot change it mid-run \(.*{why}\); for ppo it can "
                                          r"change: ppo.learning_rate, "):
        load(tmp_path, space={"ppo.ent_coef": {"choice": [0.0, 0.01]}, key: dist})


def test_sac_learned_temperature_is_refused(tmp_path: Path) -> None:
    sac = {"task": "ArmReach", "set": {"algo": "sac", "total_steps": 300000, "eval.every_steps": 25000},
           "samples": 2, "scheduler": "pbt"}
    spec = load(tmp_path, **sac, space={"sac.tau": {"uniform": [0.001, 0.01]}, "sac.ent_coef": {"choice": ["0.1",
                                                                                                       "0.2"]}})
    assert set(spec.space) <= set(MUTABLE["sac"])
    with pytest.raises(ConfigError, match=r"space.sac.ent_coef: PBT can change a fixed temperature only"):
        load(tmp_path, **sac, space={"sac.ent_coef": {"choice": ["auto", "0.1"]}})
