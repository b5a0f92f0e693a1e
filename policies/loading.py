"""Loading a trained policy from a run folder (or one of its checkpoint folders)
for evaluation and export, with every consistency check done up front."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sim2real.policies.algorithms import get_algorithm
from sim2real.policies.common import checkpoint, session
from sim2real.policies.common.envs import task_class, task_description
from sim2real.policies.common.rundir import RunDir
from sim2real.policies.config import TrainConfig
from sim2real.policies.errors import CheckpointMismatchError, RunFolderError
from sim2real.policies.networks import DeterministicActor, StochasticPolicy, TorchPolicy
from sim2real.sim.core.task import Task


@dataclass
class LoadedRun:
    """A checkpoint with its run's config, model and normalization."""

    run: RunDir
    config: TrainConfig
    folder: Path
    """The checkpoint folder."""
    kind: str
    """``best`` or ``last``."""
    state: dict[str, Any]
    """The checkpoint's ``state.json``."""
    task_cls: type[Task]
    model: Any
    """The SB3 model (no environment attached)."""
    vecnorm: Any
    """The SB3 ``VecNormalize`` holding the statistics (no environment attached)."""

    @property
    def step(self) -> int:
        return int(self.state["step"])

    def actor(self) -> DeterministicActor:
        """Normalization + deterministic action as one torch module (what gets exported)."""
        n = self.config.normalize
        stats = session.obs_statistics(self.vecnorm)
        mean, var = stats if stats is not None else (None, None)
        return DeterministicActor(self.model.policy, self.state["algo"], mean, var, n.clip_obs, n.epsilon).eval()

    def policy(self, deterministic: bool = True) -> Any:
        """A numpy callable ``obs [B, O] -> action [B, A]`` on raw observations."""
        teacher = self.config.net.actor_privileged
        if deterministic:
            return TorchPolicy(self.actor(), teacher)
        return StochasticPolicy(self.model, self.vecnorm.normalize_obs if self.vecnorm.norm_obs else None, teacher)


def load_run(path: str | Path, which: str = "auto") -> LoadedRun:
    """Load ``which`` checkpoint (``auto``: best, else last) of the run at ``path``.

    ``path`` may also be a checkpoint folder (``runs/NAME/checkpoints/step-...``).
    Raises a :class:`~sim2real.policies.errors.CheckpointError` when the checkpoint
    is missing, corrupted, or no longer fits its task (observation or action
    layout changed since training).
    """
    p = Path(path)
    if (p / "state.json").is_file() and p.parent.name == "checkpoints":
        run, folder = RunDir(p.parent.parent), p
    else:
        run = RunDir(p)
        run.require_run()
        folder = checkpoint.locate(run.checkpoints, which)
    if not run.is_run():
        raise RunFolderError(f"{run.path} is not a run folder (no config.yaml)")
    config = run.read_config()
    state = checkpoint.read_state(folder)
    task_cls = task_class(state["task"])
    if state.get("robot", task_cls.robot) != task_cls.robot:
        raise CheckpointMismatchError(
            f"{folder}: the checkpoint is for robot {state['robot']!r}, "
            f"but {state['task']} is a {task_cls.robot!r} task"
        )
    info = task_description(task_cls, state.get("action_mode"), config.task_options, config.net.actor_privileged)
    checkpoint.check_compatible(
        state,
        task=info["task"],
        obs_size=info["obs_size"],
        action_size=info["action_size"],
        observation_layout=info["observation_layout"],
        action_layout=info["action_layout"],
    )
    spec = get_algorithm(state["algo"])
    model = session.load_model(folder, spec, env=None)
    vecnorm = session.load_vecnormalize(folder, None)
    model_obs = int(model.observation_space.shape[0])
    stats = session.obs_statistics(vecnorm)
    norm_obs = model_obs if stats is None else int(stats[0].shape[0])
    # A teacher's observation already holds the privileged state; others have it appended for the critic.
    appended = config.privileged_obs and not config.net.actor_privileged
    expected = info["obs_size"] + (info["privileged_size"] if appended else 0)
    if model_obs != expected or norm_obs != model_obs:
        raise CheckpointMismatchError(
            f"{folder}: the model expects {model_obs} observations and the normalization "
            f"{norm_obs}, but the task produces {expected}"
            + (" (observation + privileged state)" if config.privileged_obs else "")
        )
    return LoadedRun(run, config, folder, state.get("kind", which), state, task_cls, model, vecnorm)
