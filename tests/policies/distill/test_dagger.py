"""Teacher-student distillation: a privileged teacher (``net.actor_privileged``) reads
the simulator's privileged state and is refused by a robot's deployment; a student
(``algo: distill``) with a history encoder learns to imitate it by DAgger and exports
as an ordinary policy on what a robot measures."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from sim2real.policies.common.evaluation import Evaluator
from sim2real.policies.config_loading import resolve_config
from sim2real.policies.deploy import OnnxPolicy
from sim2real.policies.errors import PolicyFileError
from sim2real.sim import make_vec
from sim2real.sim.core.errors import ConfigError

TINY: dict[str, Any] = {
    "n_envs": 8, "net.pi": [32, 32], "net.vf": [16], "ppo.n_steps": 16, "ppo.batch_size": 64, "ppo.n_epochs": 1,
    "eval.every_steps": 0, "eval.episodes": 2, "eval.n_envs": 2, "checkpoint.every_steps": 10_000,
    "task_options.action_scale": 0.3,
}


def train_and_export(overrides: dict[str, Any], out: Path) -> OnnxPolicy:
    from sim2real.policies.export.exporter import export_policy
    from sim2real.policies.trainer import train

    cfg = resolve_config("QuadrupedVelocity", None, {**TINY, **overrides})
    train(cfg, out, progress=False)
    return OnnxPolicy(export_policy(out, which="last").policy_path)


@pytest.fixture(scope="module")
def teacher(tmp_path_factory: pytest.TempPathFactory) -> OnnxPolicy:
    return train_and_export({"net.actor_privileged": True, "total_steps": 256}, tmp_path_factory.mktemp("t") / "run")


@pytest.mark.heavy
def test_teacher_reads_the_privileged_state_and_no_robot_deployment_takes_it(teacher: OnnxPolicy) -> None:
    env = make_vec("QuadrupedVelocity", 2, action_mode="gait_residual", action_scale=0.3)
    names = [n for n, _ in teacher.observation_layout]
    plain = [n for n, _ in env.task.observation_layout()]
    assert names == plain + ["privileged." + n for n, _ in env.task.privileged_layout()]
    assert teacher.privileged_inputs
    with pytest.raises(PolicyFileError, match="privileged teacher"):
        teacher.check_observation_layout(env.task.observation_layout())
    # The evaluator appends the privileged state for it (else the graph's input size would not match).
    result = Evaluator(env.task.__class__, n_envs=2, action_mode="gait_residual", task_options={"action_scale": 0.3},
                       dr="train").run(teacher, 2)
    assert result.episodes == 2


@pytest.mark.heavy
def test_dagger_student_learns_to_act_as_its_teacher(teacher: OnnxPolicy, tmp_path: Path) -> None:
    student = {"algo": "distill", "normalize.obs": False, "task_options.history_steps": 4,
               "distill.teacher": str(teacher.path), "distill.epochs": 4, "distill.batch_size": 128}
    untrained = train_and_export({**student, "total_steps": 128}, tmp_path / "untrained")
    trained = train_and_export({**student, "total_steps": 2560}, tmp_path / "trained")
    assert trained.observation_layout[-1][0] == "history" and not trained.privileged_inputs
    # States the student visits (its own deterministic rollout), labelled by the teacher.
    env = make_vec("QuadrupedVelocity", 8, seed=3, action_mode="gait_residual", action_scale=0.3,
                   history_steps=4, privileged_obs=True)
    obs, size, present = env.reset(), trained.obs_size, trained.obs_size - 4 * 36
    errors: dict[str, list[float]] = {"untrained": [], "trained": []}
    for _ in range(60):
        label = teacher(np.concatenate([obs[:, :present], obs[:, size:]], axis=1))
        for name, policy in (("untrained", untrained), ("trained", trained)):
            errors[name].append(float(np.mean((policy(obs[:, :size]) - label) ** 2)))
        obs, *_ = env.step(trained(obs[:, :size]))
    assert np.mean(errors["trained"]) < 0.5 * np.mean(errors["untrained"]), errors


def test_a_student_needs_a_history_and_a_matching_teacher(teacher: OnnxPolicy, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"distill\.teacher"):
        resolve_config("QuadrupedVelocity", None, {**TINY, "algo": "distill", "normalize.obs": False})
    with pytest.raises(ConfigError, match=r"normalize\.obs"):
        resolve_config("QuadrupedVelocity", None, {**TINY, "algo": "distill", "distill.teacher": str(teacher.path)})
    base = {"algo": "distill", "normalize.obs": False, "distill.teacher": str(teacher.path), "total_steps": 128}
    with pytest.raises(ConfigError, match="history_steps"):
        train_and_export(base, tmp_path / "a")
    with pytest.raises(ConfigError, match=r"distill\.teacher"):  # the teacher acts in another action mode
        train_and_export({**base, "task_options.history_steps": 2, "action_mode": "joint_pos"}, tmp_path / "b")


def test_a_mirrored_student_also_learns_each_state_reflected(teacher: OnnxPolicy, tmp_path: Path) -> None:
    """``distill.mirror``: every labelled state joins the dataset twice, as collected and
    reflected left-right with the reflected label (the task's own mirror)."""
    from sim2real.policies.algorithms import get_algorithm
    from sim2real.policies.common.envs import make_train_env

    cfg = resolve_config("QuadrupedVelocity", None, {
        **TINY, "algo": "distill", "normalize.obs": False, "task_options.history_steps": 2, "total_steps": 128,
        "distill.teacher": str(teacher.path), "distill.mirror": True})
    env = make_train_env(cfg)
    model = get_algorithm("distill").build(cfg, env)
    model.learn(128)
    (states, labels), = model.dataset
    half = len(states) // 2
    assert half == 128 and len(labels) == 2 * half
    obs_mirror, action_mirror = env.unwrapped.task.mirror()
    np.testing.assert_array_equal(states[half:], obs_mirror(states[:half]))
    np.testing.assert_array_equal(labels[half:], action_mirror(labels[:half]))
    np.testing.assert_array_equal(labels[:half], model.teacher_actions(model.rollout_buffer.observations.reshape(
        half, -1)))
    env.close()
