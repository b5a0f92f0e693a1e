"""One Tune trial: an ordinary training run in ``<sweep>/trials/<trial name>/``.

The trial is a Tune *function* trainable. It builds the trial's config (the sweep's
resolved base config plus the trial's sampled values), runs :class:`Trainer` in the
trial's run folder and reports every evaluation row to Tune, with the environment
step as the scheduler's clock (``env_steps``). The folder is a complete run
(config.yaml, checkpoints, TensorBoard, eval.jsonl): ``sim2real eval``, ``plot`` and
``export`` work on it as on any other.

Fault tolerance needs no Tune checkpoints: when a worker dies, Tune calls this
function again (``FailureConfig(max_failures)``); the run folder already holds the
trial's config and its ``last`` checkpoint, so the Trainer resumes from there
(``resume=True``) and the eval log continues.

With PBT (``pbt_keys``) each report also carries a Tune checkpoint, and a trial that
Tune restarts on another trial's checkpoint takes it over with its new values
(:mod:`.exploit`).
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import socket
from pathlib import Path
from typing import Any

from sim2real.policies.common.rundir import RunDir
from sim2real.policies.config import TrainConfig
from sim2real.policies.config_loading import with_overrides

ATTEMPTS = "attempts.jsonl"
"""In a trial's run folder: one line per attempt (host, pid, step resumed at)."""
TIME_ATTR = "env_steps"
"""The scheduler's clock: environment steps trained (not Tune iterations, which count reports)."""


def trial_config(base: dict[str, Any], values: dict[str, Any]) -> TrainConfig:
    """The sweep's base config with one trial's sampled values (dotted keys), layered as
    ``sim2real train --set`` layers them."""
    config = TrainConfig.from_dict(with_overrides(base, values))
    config.validate()
    return config


def metrics_of(row: dict[str, Any]) -> dict[str, Any]:
    """What a trial reports for one evaluation row: the numbers, task metrics flattened as
    ``final_<name>`` / ``mean_<name>``, and the training step as :data:`TIME_ATTR`."""
    out: dict[str, Any] = {TIME_ATTR: int(row["step"])}
    for key, value in row.items():
        if key == "env_steps":
            out["eval_env_steps"] = value  # the evaluation's own steps, not the clock
        elif key in ("metrics_final", "metrics_mean"):
            prefix = "final_" if key == "metrics_final" else "mean_"
            out.update({prefix + k: v for k, v in (value or {}).items() if isinstance(v, (int, float))})
        elif key != "step" and isinstance(value, (int, float)) and not isinstance(value, bool):
            out[key] = value
    return out


def record_attempt(run_dir: Path, resumed_from: int | None) -> None:
    """Append this attempt to ``<run>/attempts.jsonl``: which process on which machine ran
    the trial, and the step it resumed at; a retried trial has one line per attempt."""
    line = {"host": socket.gethostname(), "pid": os.getpid(), "resumed_from": resumed_from,
            "started": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")}
    with open(run_dir / ATTEMPTS, "a") as f:
        f.write(json.dumps(line) + "\n")


def read_attempts(run_dir: Path) -> list[dict[str, Any]]:
    path = Path(run_dir) / ATTEMPTS
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.exists() else []


def run_trial(values: dict[str, Any], base: dict[str, Any], trials_dir: str, pbt_keys: tuple[str, ...] = ()) -> None:
    """Tune's function trainable (bind ``base``, ``trials_dir`` and, for PBT, the mutated
    ``pbt_keys`` with ``tune.with_parameters``)."""
    from ray import tune

    name = tune.get_context().get_trial_name()
    run = RunDir(Path(trials_dir) / name)
    config = trial_config(base, values)
    retune = None
    if pbt_keys:
        from sim2real.policies.sweep import exploit

        retune = exploit.prepare(run, tune.get_checkpoint(), name, values, config, tuple(pbt_keys))
    resume = run.is_run()  # a retry after a dead worker, a resumed sweep or a PBT exploit: continue the folder

    from sim2real.policies.trainer import Trainer

    def report(row: dict[str, Any]) -> None:
        if row["step"] > 0:
            # Checkpoint first: the scheduler may stop the trial inside tune.report, and a
            # stopped trial's folder should hold the policy it was judged on. (The Trainer
            # saves `last` right after each evaluation anyway; that save then has nothing to do.)
            trainer.save_last(row["step"])
        # resumed_from: where this attempt picked the run folder up (0: from scratch); a
        # trial retried after a dead worker shows it in Tune's result.json.
        metrics = {**metrics_of(row), "resumed_from": trainer.resumed_from or 0}
        if not pbt_keys or row["step"] == 0:
            tune.report(metrics)
            return
        from ray.tune import Checkpoint

        from sim2real.policies.sweep import exploit

        with exploit.staged(run, name, values) as folder:  # PBT copies the strong trials' checkpoints
            tune.report(metrics, checkpoint=Checkpoint.from_directory(str(folder)))

    trainer = Trainer(config, run.path, resume=resume, progress=False, command=["sim2real", "sweep"],
                      on_evaluation=report, retune=retune)
    record_attempt(run.path, trainer.resumed_from)
    try:
        trainer.run()
    finally:
        trainer.close()
