"""Training environments: the batched simulator under SB3's ``VecNormalize``."""

from __future__ import annotations

from typing import Any

from stable_baselines3.common.vec_env import VecNormalize

from sim2real.policies.config import TrainConfig
from sim2real.sim import REGISTRY, make_vec
from sim2real.sim.core.errors import ConfigError
from sim2real.sim.core.solver import SolverVariant
from sim2real.sim.core.task import Task


def algo_gamma(config: TrainConfig) -> float:
    return float(config.algo_config().gamma)


def randomization(config: TrainConfig, preset: str) -> Any:
    """The randomization of ``preset`` for the config's task, with ``dr_overrides``
    applied when ``preset`` is the training preset ``config.dr``. Unknown or
    malformed fields raise ConfigError naming them."""
    task_cls = task_class(config.task)
    if not config.dr_overrides or preset != config.dr:
        return task_cls.dr_class.preset(preset)
    values = {**task_cls.dr_class.preset(preset).to_dict(), **config.dr_overrides}
    try:
        return task_cls.dr_class.from_dict(values)
    except ConfigError as exc:
        raise ConfigError(f"dr_overrides.{exc.field}", str(exc).removeprefix(f"{exc.field}: ")) from None


def physics_variant(config: TrainConfig) -> SolverVariant:
    """The simulator configuration training and its evaluations run."""
    return SolverVariant(substeps=config.physics_substeps)


def make_train_env(config: TrainConfig) -> VecNormalize:
    """``config.n_envs`` environments as one batch, always wrapped in VecNormalize
    (a pass-through when both normalizations are off, so every checkpoint has the
    same files)."""
    venv = make_vec(
        config.task,
        config.n_envs,
        action_mode=config.action_mode,
        dr=randomization(config, config.dr),
        seed=config.seed,
        nthread=config.nthread,
        privileged_obs=config.privileged_obs,
        physics=config.backend,
        solver=physics_variant(config),
        **config.task_options,
    )
    if config.reward.source == "clip":
        from sim2real.policies.rewards.training import wrap_clip_reward

        venv = wrap_clip_reward(venv, config)
    n = config.normalize
    return VecNormalize(
        venv,
        training=True,
        norm_obs=n.obs,
        norm_reward=n.reward,
        clip_obs=n.clip_obs,
        clip_reward=n.clip_reward,
        gamma=algo_gamma(config),
        epsilon=n.epsilon,
    )


PRIVILEGED_PREFIX = "privileged."
"""Observation blocks a robot cannot measure (a privileged teacher's inputs) are named so."""


def task_description(
    task_cls: type[Task], action_mode: str | None, task_options: dict[str, Any], actor_privileged: bool = False
) -> dict[str, Any]:
    """What a checkpoint or an export records about its task, from the task itself
    (``actor_privileged``: the policy also reads the privileged state, blocks ``privileged.*``)."""
    task = task_cls(num_envs=1, action_mode=action_mode, **task_options)
    obs = [[name, int(size)] for name, size in task.observation_layout()]
    if actor_privileged:
        obs += [[PRIVILEGED_PREFIX + name, int(size)] for name, size in task.privileged_layout()]
    act = [[name, int(size)] for name, size in task.action_layout()]
    from sim2real.sim.core.registry import gym_id

    return {
        "task": gym_id(task_cls),
        "robot": task_cls.robot,
        "task_name": task_cls.name,
        "action_mode": task.action_mode,
        "observation_layout": obs,
        "action_layout": act,
        "obs_size": sum(s for _, s in obs),
        "privileged_size": sum(int(s) for _, s in task.privileged_layout()),
        "action_size": sum(s for _, s in act),
        "control_dt": float(task_cls.control_dt),
        "physics_dt": float(task_cls.physics_dt),
    }


def task_class(name: str) -> type[Task]:
    return REGISTRY.get(name)
