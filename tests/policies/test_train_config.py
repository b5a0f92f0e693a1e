"""Config resolution: defaults, per-task files, user files, flags; strict typing;
the run folder's config.yaml reproduces the run."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import yaml
from policy_helpers import PUCK_ID, tiny_config

from sim2real.policies.config import CONFIG_DIR, TrainConfig
from sim2real.policies.config_loading import read_yaml, resolve_config
from sim2real.policies.errors import RunFolderError
from sim2real.sim.core.errors import ConfigError, UnknownTaskError


def test_default_yaml_states_exactly_the_dataclass_defaults() -> None:
    """default.yaml is the documented face of the dataclass defaults; they must not drift."""
    from_yaml = TrainConfig.from_dict({**read_yaml(CONFIG_DIR / "default.yaml"), "task": "x"})
    assert from_yaml == TrainConfig(task="x")


@pytest.mark.parametrize("path", sorted(CONFIG_DIR.glob("*.yaml")), ids=lambda p: p.name)
def test_every_shipped_config_file_is_valid(path: Path) -> None:
    cfg = TrainConfig.from_dict({**read_yaml(path), "task": "x"})
    cfg.validate()


def test_per_task_files_are_named_after_registered_tasks_and_resolve() -> None:
    """A misnamed file would be silently ignored: each must match a task and load."""
    from sim2real.sim import REGISTRY

    registered = {f"{cls.robot}_{cls.name}": cls for cls in REGISTRY}
    names = {p.stem for p in CONFIG_DIR.glob("*.yaml")} - {"default"}
    assert names and names <= set(registered), names - set(registered)
    for name in names:
        cls = registered[name]
        cfg = resolve_config(f"{cls.robot}/{cls.name}")
        assert cfg.task.endswith(f"{cls.robot.capitalize()}{''.join(p.capitalize() for p in cls.name.split('_'))}-v0")


def test_layers_apply_in_order(puck, tmp_path: Path) -> None:
    user = tmp_path / "user.yaml"
    user.write_text(yaml.safe_dump({"task": "TestPuck", "seed": 5, "ppo": {"n_steps": 16, "learning_rate": "3e-4"}}))
    cfg = resolve_config(None, user, {"seed": 9, "ppo.batch_size": 32, "n_envs": 4})
    assert cfg.task == PUCK_ID
    assert cfg.seed == 9  # flag beats file
    assert cfg.ppo.n_steps == 16  # file beats default
    assert cfg.ppo.learning_rate == pytest.approx(3e-4)  # YAML 1.1 reads 3e-4 as a string; accepted as a float
    assert cfg.ppo.batch_size == 32
    assert cfg.ppo.gae_lambda == 0.95  # untouched default


def test_a_dotted_task_option_sets_one_option_and_a_mapping_replaces_them(tmp_path: Path) -> None:
    """The tall recipe states its task options whole; adding a history from the command
    line must keep its action scale and reward weights, not silently drop them."""
    recipe = CONFIG_DIR / "recipes" / "quadruped_velocity_tall.yaml"
    stated = read_yaml(recipe)["task_options"]
    one = resolve_config("QuadrupedVelocity", recipe, {"task_options.history_steps": 5,
                                                       "task_options.reward_weights.orientation": -2.0})
    assert one.task_options == {**stated, "history_steps": 5,
                                "reward_weights": {**stated["reward_weights"], "orientation": -2.0}}
    whole = resolve_config("QuadrupedVelocity", recipe, {"task_options": {"history_steps": 5}})
    assert whole.task_options == {"history_steps": 5}


def test_task_file_layer_is_used_for_registered_tasks() -> None:
    from sim2real.sim import REGISTRY

    if "sim2real/ArmReach-v0" not in REGISTRY.ids():
        pytest.skip("ArmReach is not registered yet")
    cfg = resolve_config("ArmReach")
    assert cfg.total_steps == read_yaml(CONFIG_DIR / "arm_reach.yaml")["total_steps"]
    assert cfg.sac.gamma == 0.97


@pytest.mark.parametrize(
    ("values", "field"),
    [
        ({"ppo": {"n_stepz": 3}}, "ppo.n_stepz"),
        ({"ppo": {"n_steps": 2.5}}, "ppo.n_steps"),
        ({"normalize": {"obs": "yes"}}, "normalize.obs"),
        ({"net": {"pi": "64"}}, "net.pi"),
        ({"algo": "dqn"}, "algo"),
        ({"eval": {"dr": "wide"}}, "eval.dr"),
        ({"ppo": {"batch_size": 100000}}, "ppo.batch_size"),
    ],
)
def test_bad_values_name_their_field(puck, tmp_path: Path, values: dict, field: str) -> None:
    user = tmp_path / "bad.yaml"
    user.write_text(yaml.safe_dump({"task": "TestPuck", **values}))
    with pytest.raises(ConfigError) as err:
        resolve_config(None, user)
    assert err.value.field == field


def test_unknown_task_and_missing_task() -> None:
    with pytest.raises(UnknownTaskError):
        resolve_config("NoSuchTask")
    with pytest.raises(ConfigError, match="no task"):
        resolve_config(None)


def test_run_config_yaml_reproduces_the_run(trained_runs: dict[str, Path], puck) -> None:
    """Training the written config.yaml again resolves to the identical config (same hash)."""
    from sim2real.policies.common.rundir import RunDir

    run = RunDir(trained_runs["sac"])
    text = run.config_path.read_text()
    stored = run.read_config()
    again = resolve_config(None, run.config_path)
    assert again == stored
    assert again.hash() == run.read_provenance()["config_hash"]
    prov = run.read_provenance()
    assert prov["seed"] == stored.seed
    assert prov["versions"]["stable-baselines3"] and prov["versions"]["torch"]
    assert "git_commit" in prov and "sim2real train --config" in text
    assert dataclasses.asdict(stored) == dataclasses.asdict(tiny_config("sac"))


def test_fresh_training_refuses_an_existing_run(trained_runs: dict[str, Path], puck) -> None:
    from sim2real.policies.trainer import Trainer

    with pytest.raises(RunFolderError, match="--resume"):
        Trainer(tiny_config("ppo"), trained_runs["ppo"], progress=False)


def test_dr_overrides_replace_preset_fields_for_training_and_matching_evaluation(puck, tmp_path: Path) -> None:
    from policy_helpers import tiny_config

    from sim2real.policies.common.envs import make_train_env, randomization
    from sim2real.sim.core.randomization import Range

    cfg = tiny_config("ppo", {"dr_overrides": {"push_velocity": [0.3, 0.6], "latency_steps": [0, 2]}})
    train = randomization(cfg, "train")
    assert train.push_velocity == Range(0.3, 0.6) and train.latency_steps == (0, 2)
    assert train.friction == puck.dr_class.train().friction  # the rest is the preset's
    assert randomization(cfg, "none") == puck.dr_class.none()  # another preset: untouched
    env = make_train_env(cfg)
    assert env.venv.engine.dr.push_velocity == Range(0.3, 0.6)  # what the training envs run
    env.close()

    for overrides, field, message in (({"push_speed": [0, 1]}, "dr_overrides.push_speed", "unknown"),
                                      ({"push_velocity": "fast"}, "dr_overrides.push_velocity", "expected"),
                                      ({"push_velocity": [0.6, 0.3]}, "dr_overrides.push_velocity", "greater")):
        bad = tiny_config("ppo", {"dr_overrides": overrides})
        with pytest.raises(ConfigError, match=message) as err:
            randomization(bad, "train")
        assert err.value.field == field


def test_physics_substeps_shorten_the_step_of_training_and_its_evaluations(puck) -> None:
    from policy_helpers import tiny_config

    from sim2real.policies.common.envs import make_train_env, physics_variant
    from sim2real.sim.core.solver import SolverVariant

    assert physics_variant(tiny_config("ppo")) == SolverVariant()  # the task's own step
    cfg = tiny_config("ppo", {"physics_substeps": 2})
    env = make_train_env(cfg)
    assert env.venv.engine.physics_dt == pytest.approx(puck.physics_dt / 2)
    assert env.venv.engine.decimation == 2 * round(puck.control_dt / puck.physics_dt)
    env.close()
    assert physics_variant(cfg).substeps == 2  # what the trainer's Evaluator gets too
    with pytest.raises(ConfigError, match="physics_substeps"):
        tiny_config("ppo", {"physics_substeps": 0})


def test_the_configs_physics_choices_are_the_engines() -> None:
    from typing import get_args

    from sim2real.policies.config import Physics
    from sim2real.sim.core.physics import PHYSICS

    assert get_args(Physics) == PHYSICS  # --backend in train/eval and the engine's backends agree
