"""Start or resume a sweep: Ray Tune's Tuner over :func:`~.trainable.run_trial`.

The sweep folder is Tune's experiment folder (``storage_path`` = its parent, ``name``
= its name), so Tune's state (``tuner.pkl``, ``experiment_state-*.json``, one
bookkeeping folder per trial) and the trials' run folders (``trials/<name>/``) live
together: copy or share that one folder and the sweep goes with it. ``--resume``
restores the experiment state (:meth:`ray.tune.Tuner.restore`), so finished trials
stay finished and unfinished or errored ones continue their run folders.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sim2real.errors import ConfigError
from sim2real.policies.sweep.space import SweepSpec
from sim2real.policies.sweep.trainable import TIME_ATTR, run_trial

SPEC_FILE = "sweep.json"
"""What the sweep was started with (the resolved base config and the space); a resume checks it."""


def spec_record(spec: SweepSpec) -> dict[str, Any]:
    """The parts of a sweep that a resume must not change, as JSON."""
    return {
        "sweep_file": str(spec.path),
        "base": spec.base,
        "space": {k: {d.kind: list(d.args)} for k, d in spec.space.items()},
        "metric": spec.metric,
        "mode": spec.mode,
        "samples": spec.samples,
        # PBT's options only when set: an ASHA sweep's record reads as before.
        "scheduler": {k: v for k, v in dataclasses.asdict(spec.scheduler).items() if v is not None},
        "points": spec.points,
    }


def _keep_working_directory() -> None:
    """Trials run in the command's working directory, not Tune's trial folder, so a relative
    path in the training config (a teacher, CLIP weights) means what it means to ``train``
    (Tune passes this variable on to the trial processes)."""
    os.environ.setdefault("RAY_CHDIR_TO_TRIAL_DIR", "0")


def _quiet_tune() -> None:
    """Tune's own output off (its new engine prints a header box even at verbose 0):
    :class:`~.progress.ProgressLines` prints one line per result instead."""
    os.environ["RAY_AIR_NEW_OUTPUT"] = "0"


def _scheduler(spec: SweepSpec) -> Any:
    from ray.tune.schedulers import ASHAScheduler, FIFOScheduler

    s = spec.scheduler
    if s.kind == "pbt":
        from sim2real.policies.sweep import pbt

        return pbt.scheduler(spec)
    if s.kind == "asha":
        return ASHAScheduler(time_attr=TIME_ATTR, max_t=spec.total_steps, grace_period=s.grace_steps,
                             reduction_factor=s.reduction_factor)
    return FIFOScheduler()


def _trainable(spec: SweepSpec, out: Path) -> Any:
    from ray import tune

    pbt_keys = tuple(spec.space) if spec.scheduler.kind == "pbt" else ()  # PBT mutates every space key
    fn = tune.with_parameters(run_trial, base=spec.base, trials_dir=str(out / "trials"), pbt_keys=pbt_keys)
    resources = {"cpu": spec.cpu, **({"gpu": spec.gpu} if spec.gpu else {})}
    return tune.with_resources(fn, resources)


def _trial_name(trial: Any) -> str:
    return f"trial_{trial.trial_id}"


def run(spec: SweepSpec, out: Path, resume: bool, log: Callable[[str], None]) -> Any:
    """Run (or resume) the sweep into ``out``; Ray must be connected. Returns Tune's ResultGrid."""
    _keep_working_directory()
    _quiet_tune()
    from ray import tune

    from sim2real.policies.sweep.progress import ProgressLines

    out = out.resolve()
    record = spec_record(spec)
    if resume:
        if not tune.Tuner.can_restore(str(out)):
            raise ConfigError("--resume", f"{out} holds no sweep to resume (no Tune experiment state)")
        stored = json.loads((out / SPEC_FILE).read_text()) if (out / SPEC_FILE).is_file() else None
        if stored is not None and {**stored, "sweep_file": None} != {**record, "sweep_file": None}:
            changed = sorted(k for k in record if k != "sweep_file" and stored.get(k) != record[k])
            raise ConfigError("--resume", f"the sweep file changed since {out} started ({', '.join(changed)}); "
                                          "resume with the same file or start a new sweep")
        log(f"resuming the sweep in {out}")
        tuner = tune.Tuner.restore(str(out), _trainable(spec, out), resume_unfinished=True, resume_errored=True)
        return tuner.fit()
    out.mkdir(parents=True, exist_ok=True)
    (out / SPEC_FILE).write_text(json.dumps(record, indent=1, sort_keys=True))
    from ray.tune.search import BasicVariantGenerator

    tuner = tune.Tuner(
        _trainable(spec, out),
        param_space={k: d.to_tune() for k, d in spec.space.items()},
        tune_config=tune.TuneConfig(
            metric=spec.metric, mode=spec.mode, num_samples=spec.samples, scheduler=_scheduler(spec),
            search_alg=BasicVariantGenerator(points_to_evaluate=spec.points or None),
            max_concurrent_trials=spec.max_concurrent, trial_name_creator=_trial_name,
            # A finished trial's worker process takes the next trial: no second start-up
            # (Python, torch, MuJoCo imports: seconds per trial).
            reuse_actors=True,
            trial_dirname_creator=_trial_name),
        run_config=tune.RunConfig(
            name=out.name, storage_path=str(out.parent), verbose=0,
            # PBT: a trial's last report (at total_steps) ends it before the scheduler sees it,
            # so no trial is pointlessly moved onto another's finished checkpoint.
            stop={TIME_ATTR: spec.total_steps} if spec.scheduler.kind == "pbt" else None,
            failure_config=tune.FailureConfig(max_failures=spec.max_failures),
            callbacks=[ProgressLines(spec.metric)]),
    )
    return tuner.fit()
