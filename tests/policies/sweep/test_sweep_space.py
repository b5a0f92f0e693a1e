"""The sweep file is checked before Ray starts: every mistake is one ConfigError
naming the key, and a good file becomes Tune's search space and scheduler settings."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from sim2real.errors import ConfigError
from sim2real.policies.config_loading import resolve_config
from sim2real.policies.sweep import space
from sim2real.policies.sweep.trainable import metrics_of, trial_config

BASELINE = Path(__file__).resolve().parents[3] / "policies" / "baselines" / "ArmReach" / "config.yaml"
GOOD = {
    "task": "ArmReach",
    "set": {"total_steps": 300000, "eval.every_steps": 50000},
    "space": {
        "ppo.learning_rate": {"loguniform": [1.0e-4, 1.0e-3]},
        "ppo.ent_coef": {"choice": [0.0, 0.005, 0.01]},
        "ppo.batch_size": {"grid": [256, 512, 1024]},
        "seed": {"randint": [0, 100]},
        "task_options.action_cost": {"uniform": [0.5, 2.0]},
    },
    "metric": "success_rate",
    "samples": 4,
    "scheduler": {"asha": {"grace_steps": 100000, "reduction_factor": 3}},
}


def write(tmp_path: Path, data: dict) -> Path:
    path = tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def with_(key: str, value) -> dict:
    data = {**GOOD, "space": dict(GOOD["space"])}
    if key.startswith("space."):
        data["space"][key[len("space."):]] = value
    else:
        data[key] = value
    return data


def test_good_file_parses(tmp_path: Path) -> None:
    spec = space.load(write(tmp_path, GOOD))
    assert spec.trial_count() == 4 * 3  # grid values times samples
    assert spec.total_steps == 300000 and spec.metric == "success_rate" and spec.mode == "max"
    assert spec.scheduler.kind == "asha" and spec.scheduler.grace_steps == 100000
    assert spec.scheduler.reduction_factor == 3
    assert spec.space["seed"] == space.Distribution("randint", (0, 100))
    # One core per trial unless the file says otherwise: trials run side by side.
    assert spec.base["torch_threads"] == 1 and spec.base["nthread"] == 1
    assert spec.base["eval"]["every_steps"] == 50000
    assert spec.max_failures == 2 and spec.cpu == 1.0


def test_training_config_is_relative_to_the_sweep_file(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    data = {**GOOD, "config": "../train.yaml"}
    (tmp_path / "train.yaml").write_text(BASELINE.read_text())
    path = tmp_path / "sub" / "sweep.yaml"
    path.write_text(yaml.safe_dump(data))
    spec = space.load(path)
    assert spec.config == tmp_path / "train.yaml"
    assert spec.base["task_options"]["action_cost"] == 2.0  # from the baseline config
    assert spec.base["total_steps"] == 300000  # `set` wins over the file


def test_trial_config_layers_values_over_the_base(tmp_path: Path) -> None:
    spec = space.load(write(tmp_path, GOOD))
    cfg = trial_config(spec.base, {"ppo.learning_rate": 5e-4, "ppo.batch_size": 1024, "seed": 7,
                                   "task_options.action_cost": 1.5})
    assert (cfg.ppo.learning_rate, cfg.ppo.batch_size, cfg.seed) == (5e-4, 1024, 7)
    assert cfg.task_options["action_cost"] == 1.5
    expected = resolve_config("ArmReach", None, {**spec.fixed, "ppo.learning_rate": 5e-4, "ppo.batch_size": 1024,
                                                 "seed": 7, "task_options.action_cost": 1.5})
    assert cfg.to_dict() == expected.to_dict()  # the same config `sim2real train` would resolve


def test_tune_domains() -> None:
    from ray import tune

    assert space.Distribution("grid", (1, 2)).to_tune() == tune.grid_search([1, 2])
    assert space.Distribution("choice", (1, 2)).to_tune().categories == [1, 2]
    log = space.Distribution("loguniform", (1e-4, 1e-3)).to_tune()
    assert (log.lower, log.upper) == (1e-4, 1e-3)


@pytest.mark.parametrize(("key", "value", "message"), [
    ("space.ppo.learnin_rate", {"choice": [1e-4]}, "space.ppo.learnin_rate: unknown config key 'learnin_rate'"),
    ("space.ppo", {"choice": [1]}, "space.ppo: is a section"),
    ("space.seed.x", {"choice": [1]}, "space.seed.x: 'seed' is a value, not a section"),
    ("space.ppo.ent_coef", {"normal": [0, 1]}, "unknown distribution 'normal'"),
    ("space.ppo.ent_coef", {"uniform": [0.1]}, "uniform needs [low, high]"),
    ("space.ppo.ent_coef", {"uniform": [0.1, 0.1]}, "needs low < high"),
    ("space.ppo.learning_rate", {"loguniform": [0.0, 1e-3]}, "loguniform needs low > 0"),
    ("space.ppo.ent_coef", {"choice": []}, "choice needs a non-empty list"),
    ("space.ppo.ent_coef", [0.0, 0.01], "expected one of {choice: ..."),
    ("space.ppo.ent_coef", {"choice": [-1.0]}, "space.ppo.ent_coef: -1.0 is not a valid value"),
    ("space.ppo.n_epochs", {"uniform": [1, 10]}, "is an integer; uniform draws fractions"),
    ("space.ppo.batch_size", {"choice": [4096]}, "4096 is not a valid value: 4096 exceeds one rollout"),
    ("space.algo", {"choice": ["ppo", "a2c"]}, "'a2c' is not a valid value"),
    ("sample", 4, "sample: unknown sweep key"),
    ("metric", "reward", "metric: 'reward' is not an evaluation number"),
    ("mode", "maximise", "mode: 'maximise' is not one of max, min"),
    ("samples", 0, "samples: expected a positive integer"),
    ("scheduler", "hyperband", "scheduler: expected asha, none or pbt"),
    ("scheduler", {"asha": {"grace": 1}}, "scheduler.asha.grace: unknown option"),
    ("scheduler", {"asha": {"grace_steps": 300000}}, "leaves nothing to stop"),
    ("resources_per_trial", {"cpus": 1}, "resources_per_trial.cpus: unknown resource"),
    ("points", [{"ppo.gamma": 0.9}], "points[0].ppo.gamma: is not a key of `space`"),
    ("set", {"ppo.n_step": 32}, "set.ppo.n_step: unknown config key"),
    ("config", "missing.yaml", "config: training config"),
])
def test_mistakes_are_one_line_errors_naming_the_key(tmp_path: Path, key: str, value, message: str) -> None:
    with pytest.raises(ConfigError) as err:
        space.load(write(tmp_path, with_(key, value)))
    text = str(err.value)
    assert message in text and "\n" not in text
    assert text.startswith(str(tmp_path / "sweep.yaml"))  # names the file too


def test_space_and_set_may_not_share_a_key(tmp_path: Path) -> None:
    data = {**GOOD, "set": {**GOOD["set"], "seed": 3}}
    with pytest.raises(ConfigError, match=r"space\.seed: is also fixed under `set`"):
        space.load(write(tmp_path, data))


def test_metrics_of_an_evaluation_row() -> None:
    row = {"step": 2048, "wall_time_s": 3.0, "time": 1.0, "episodes": 2, "successes": 1, "success_rate": 0.5,
           "mean_return": -3.0, "env_steps": 200, "metrics_final": {"ee_distance": 0.1}, "metrics_mean": {"x": 2.0}}
    m = metrics_of(row)
    assert m["env_steps"] == 2048 and m["eval_env_steps"] == 200  # the clock is training steps
    assert m["final_ee_distance"] == 0.1 and m["mean_x"] == 2.0 and m["success_rate"] == 0.5


@pytest.mark.parametrize("path", sorted((BASELINE.parents[3] / "benchmarks" / "configs").glob("sweep_*.yaml")),
                         ids=lambda p: p.name)
def test_shipped_sweep_files_load(path: Path) -> None:
    spec = space.load(path)  # the checks a sweep makes before Ray starts (PBT: only mutable keys)
    if spec.scheduler.kind != "asha":
        assert spec.scheduler.kind == "pbt" and spec.trial_count() >= 4
        return
    assert spec.trial_count() >= 12  # the ASHA sweep in docs/BENCHMARKS.md
    shipped = resolve_config(None, BASELINE)
    # The first trial is the shipped config's values: the sweep compares against it at the same budget.
    first = trial_config(spec.base, spec.points[0])
    assert {k: getattr(first.ppo, k.split(".")[1]) for k in spec.points[0]} == {
        k: getattr(shipped.ppo, k.split(".")[1]) for k in spec.points[0]}
