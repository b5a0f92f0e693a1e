"""Training, top to bottom: prepare the run folder, build (or restore) the
environment and the model, learn with periodic evaluation and checkpoints.

    trainer = Trainer(resolve_config("ArmReach"), "runs/reach")
    result = trainer.run()

``resume=True`` continues the run folder's ``last`` checkpoint: weights,
optimizer state, step counters, adaptive learning rate, normalization
statistics, replay buffer (SAC/TD3) and RNG states. The environments start new
episodes (mid-episode physics state is not saved).
"""

from __future__ import annotations

import datetime as _dt
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from rich.console import Console
from stable_baselines3.common.logger import configure

import sim2real
from sim2real.policies.algorithms import get_algorithm
from sim2real.policies.common import checkpoint, hyperparameters, session
from sim2real.policies.common.callbacks import TrainingCallback, recent_episodes
from sim2real.policies.common.envs import make_train_env, physics_variant, randomization, task_class, task_description
from sim2real.policies.common.evaluation import Evaluator
from sim2real.policies.common.progress import TrainProgress
from sim2real.policies.common.rundir import RunDir, provenance
from sim2real.policies.config import TrainConfig
from sim2real.policies.errors import CheckpointMismatchError, CheckpointNotFoundError, RunFolderError
from sim2real.policies.networks import DeterministicActor, StochasticPolicy, TorchPolicy
from sim2real.policies.rewards.relabel import connect_relabelling
from sim2real.sim.core.schema import flatten


@dataclass
class TrainResult:
    """What a finished :meth:`Trainer.run` reports."""

    run_dir: Path
    steps: int
    wall_time_s: float
    resumed_from: int | None
    last_eval: dict[str, Any] | None
    best_eval: dict[str, Any] | None


class Trainer:
    """One training run in one run folder.

    Args:
        config: The resolved config (:func:`sim2real.policies.config.resolve_config`).
        run_dir: The run folder (created; must not hold another run unless resuming).
        resume: Continue from the folder's ``last`` checkpoint; the config must equal
            the folder's ``config.yaml`` except ``total_steps``.
        console: Where the progress bar and logs go (default: stderr).
        progress: Draw the progress bar and log lines.
        command: The command line, recorded in ``config.yaml``'s provenance.
        on_evaluation: Called with each evaluation row once it is logged (``sim2real sweep``
            reports it to Ray Tune, whose scheduler may stop the run there).
        retune: With ``resume``: the hyperparameters this resume may change and sets on the
            restored model (a PBT exploit, :class:`~.hyperparameters.Retune`); nothing else may differ.
    """

    def __init__(
        self,
        config: TrainConfig,
        run_dir: str | Path,
        resume: bool = False,
        console: Console | None = None,
        progress: bool = True,
        command: list[str] | None = None,
        on_evaluation: Callable[[dict[str, Any]], None] | None = None,
        retune: hyperparameters.Retune | None = None,
    ) -> None:
        config.validate()
        self.config = config
        self.run_dir = RunDir(run_dir)
        self.resume = resume
        self.console = console or Console(stderr=True)
        self.show_progress = progress
        self.command = command
        self.on_evaluation = on_evaluation
        self.retune = retune if resume else None
        self.spec = get_algorithm(config.algo)
        self.task_cls = task_class(config.task)
        self.task_info = task_description(self.task_cls, config.action_mode, config.task_options,
                                          config.net.actor_privileged)
        self.resumed_from: int | None = None
        self.best: dict[str, Any] | None = None
        self.last_eval: dict[str, Any] | None = None
        self._wall_offset = 0.0
        self._t0 = time.perf_counter()
        self.progress = TrainProgress(self.console, config.total_steps, enabled=False)
        self._setup()

    # -- setup --------------------------------------------------------------------
    def _setup(self) -> None:
        cfg = self.config
        if not self.resume and self.run_dir.is_run():  # before anything slow is built
            raise RunFolderError(
                f"{self.run_dir.path} already holds a run; pass --resume to continue it or choose --out"
            )
        torch.set_num_threads(cfg.torch_threads)
        self.env = make_train_env(cfg)
        folder = self._prepare_folder()
        if folder is None:
            self.model = self.spec.build(cfg, self.env)
        else:
            self._restore(folder)
            if self.retune is not None:
                hyperparameters.apply(self.model, self.env, cfg, self.retune.keys)
        self.model.set_logger(configure(str(self.run_dir.tb_dir), ["tensorboard"]))
        connect_relabelling(self.env, self.model)  # a refined reward model rescores the replay buffer
        self.evaluator = Evaluator(
            self.task_cls,
            n_envs=min(cfg.eval.n_envs, cfg.eval.episodes),
            action_mode=cfg.action_mode,
            dr=randomization(cfg, cfg.eval.dr),
            seed=cfg.eval.seed,
            task_options=cfg.task_options,
            nthread=cfg.nthread,
            solver=physics_variant(cfg),
        )

    def _prepare_folder(self) -> Path | None:
        """Create or check the run folder; the checkpoint folder to resume from, if any."""
        run = self.run_dir
        if not self.resume:
            run.path.mkdir(parents=True, exist_ok=True)
            run.write_config(self.config, provenance(self.config, self.command))
            return None
        run.require_run()
        stored = flatten(run.read_config().to_dict())
        wanted = flatten(self.config.to_dict())
        allowed = {"total_steps", *(self.retune.keys if self.retune else ())}
        changed = sorted(k for k in wanted.keys() | stored.keys() if wanted.get(k) != stored.get(k))
        diff = [k for k in changed if k not in allowed]
        if diff:
            raise CheckpointMismatchError(
                f"cannot resume {run.path} with a different config ({', '.join(diff)} differ from its config.yaml); "
                "only the number of steps may change"
            )
        prov = run.read_provenance()
        if wanted["total_steps"] != stored["total_steps"]:
            prov["resumed_with_total_steps"] = self.config.total_steps
        if self.retune is not None and self.retune.record is not None:
            # The one sanctioned config change on resume: recorded with its origin and old -> new values.
            changes = {k: {"old": stored.get(k), "new": wanted.get(k)} for k in changed if k != "total_steps"}
            record = {**self.retune.record, "changes": changes, "previous_config_hash": prov.get("config_hash")}
            prov = {**prov, "config_hash": self.config.hash(),
                    "hyperparameter_changes": [*prov.get("hyperparameter_changes", []), record]}
        exploit = self.retune is not None and self.retune.record is not None
        # total_steps, retuned keys or an exploit (recorded even when the values came out
        # unchanged): config.yaml says what the run continues with and from where.
        if changed or exploit:
            run.write_config(self.config, prov)
        try:
            return checkpoint.locate(run.checkpoints, "last")
        except CheckpointNotFoundError:
            if self.show_progress:
                self.console.log(f"{run.path} has no checkpoint yet; starting from step 0")
            run.truncate_eval_log(-1)
            return None

    def _restore(self, folder: Path) -> None:
        state = checkpoint.read_state(folder)
        info = self.task_info
        checkpoint.check_compatible(
            state,
            task=info["task"],
            algo=self.config.algo,
            action_mode=info["action_mode"],
            obs_size=info["obs_size"],
            action_size=info["action_size"],
            observation_layout=info["observation_layout"],
        )
        self.env = session.load_vecnormalize(folder, self.env.venv)
        self.model = session.load_model(folder, self.spec, self.env, self.config.device)
        session.restore_training_state(folder, self.model, self.env, self.spec)
        self.resumed_from = int(self.model.num_timesteps)
        self._wall_offset = float(state.get("wall_time_s", 0.0))
        self.last_eval = state.get("last_eval")
        try:  # the best checkpoint may be newer than `last` (an evaluation just before a crash)
            self.best = checkpoint.read_state(checkpoint.locate(self.run_dir.checkpoints, "best"), verify=False)["eval"]
        except CheckpointNotFoundError:
            self.best = None
        self.run_dir.truncate_eval_log(self.resumed_from)

    # -- the loop -------------------------------------------------------------------
    def run(self) -> TrainResult:
        """Train to ``config.total_steps``; evaluate and checkpoint at the end."""
        cfg, model = self.config, self.model
        start = int(model.num_timesteps)
        self.progress = TrainProgress(self.console, cfg.total_steps, start, enabled=self.show_progress)
        with self.progress:
            if self.resumed_from is not None:
                self.progress.log(f"resumed {self.run_dir.path} at step {start:,}")
            self._t0 = time.perf_counter()
            if self.resumed_from is None and cfg.eval.every_steps > 0:
                self.evaluate(0)  # the untrained policy: every curve starts at step 0
            callback = TrainingCallback(self, cfg.eval.every_steps, cfg.checkpoint.every_steps, self.progress)
            remaining = cfg.total_steps - start
            if remaining > 0:
                model.learn(remaining, callback=callback, reset_num_timesteps=self.resumed_from is None)
            step = int(model.num_timesteps)
            if self.last_eval is None or self.last_eval["step"] != step:
                self.evaluate(step)
            self.save_last(step)
            self.progress.update(step, *recent_episodes(model), force=True)
        return TrainResult(self.run_dir.path, step, self.wall_time(), self.resumed_from, self.last_eval, self.best)

    def wall_time(self) -> float:
        """Training seconds, summed over every resume."""
        return self._wall_offset + (time.perf_counter() - self._t0)

    # -- evaluation and checkpoints (called by TrainingCallback) ----------------------
    def policy(self) -> Any:
        """The current policy as a numpy callable on raw observations."""
        n = self.config.normalize
        if not self.config.eval.deterministic:
            return StochasticPolicy(self.model, self.env.normalize_obs if self.env.norm_obs else None,
                                    self.config.net.actor_privileged)
        stats = session.obs_statistics(self.env)
        mean, var = stats if stats is not None else (None, None)
        actor = DeterministicActor(self.model.policy, self.config.algo, mean, var, n.clip_obs, n.epsilon)
        return TorchPolicy(actor, self.config.net.actor_privileged)

    def evaluate(self, step: int) -> dict[str, Any]:
        """Evaluate the current policy, log it, and save ``best`` when it improves."""
        result = self.evaluator.run(self.policy(), self.config.eval.episodes)
        row = {"step": step, "wall_time_s": round(self.wall_time(), 3), "time": time.time(), **result.to_dict()}
        self.run_dir.append_eval(row)
        log = self.model.logger
        for key in ("success_rate", "ci_low", "ci_high", "mean_return", "mean_length"):
            log.record(f"eval/{key}", row[key])
        for key, value in result.metrics_final.items():
            log.record(f"eval/final_{key}", value)
        log.dump(step)
        score = (result.success_rate, result.mean_return)
        # The untrained policy (step 0) is a baseline for the curves, never the best checkpoint.
        is_best = step > 0 and (self.best is None or score > (self.best["success_rate"], self.best["mean_return"]))
        self.last_eval = row
        if is_best:
            self.best = row
            self._save("best", step)
        self.progress.evaluation(step, result.success_rate, result.ci_low, result.ci_high, result.mean_return, is_best)
        if self.on_evaluation is not None:
            self.on_evaluation(row)
        return row

    def save_last(self, step: int) -> None:
        self._save("last", step)

    def _save(self, kind: str, step: int) -> None:
        state = {
            **self.task_info,
            "algo": self.config.algo,
            "config_hash": self.config.hash(),
            "wall_time_s": round(self.wall_time(), 3),
            "eval": self.last_eval if kind == "best" else None,
            "last_eval": self.last_eval,
            "summary": session.fingerprint(self.model, self.env),
            "sim2real_version": sim2real.__version__,
            "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        }
        writers = session.writers(self.model, self.env, self.spec, with_replay_buffer=kind == "last")
        checkpoint.save(self.run_dir.checkpoints, kind, step, writers, state, keep=self.config.checkpoint.keep)

    def close(self) -> None:
        self.env.close()


def train(config: TrainConfig, run_dir: str | Path, resume: bool = False, **kwargs: Any) -> TrainResult:
    """Build a :class:`Trainer` and run it."""
    trainer = Trainer(config, run_dir, resume=resume, **kwargs)
    try:
        return trainer.run()
    finally:
        trainer.close()
