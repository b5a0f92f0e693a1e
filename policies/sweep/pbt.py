"""Population Based Training over sweep trials: its options, which ``space`` keys it
may mutate, and Tune's scheduler.

::

    scheduler:
      pbt:
        perturbation_interval_steps: 100000   # a multiple of eval.every_steps (default: ~total_steps / 10)
        quantile_fraction: 0.25               # the bottom quarter copies the top quarter
        resample_probability: 0.25            # else a value is perturbed (ranges x0.8 / x1.2, lists a neighbour)
        synch: false                          # true: every trial waits at each perturbation (exact ranks, idle cores)

At each perturbation a trial in the bottom quantile takes over the ``last``
checkpoint of one in the top quantile and continues with that trial's values,
mutated (:mod:`.exploit` does the takeover). Mutating a value mid-run is only
honest for one the restored model reads again, so every ``space`` key must be in
:data:`sim2real.policies.common.hyperparameters.MUTABLE` for the config's algorithm;
anything else (network sizes, ``n_envs``, ``n_steps``, buffer sizes, ``seed``) is
refused here, before Ray starts.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sim2real.errors import ConfigError
from sim2real.policies.common.hyperparameters import MUTABLE, why_fixed

if TYPE_CHECKING:
    from sim2real.policies.sweep.space import Distribution, SweepSpec

OPTIONS = ("perturbation_interval_steps", "quantile_fraction", "resample_probability", "synch")


@dataclass
class PBTOptions:
    """PBT settings; time is counted in environment steps."""

    perturbation_interval_steps: int
    """Environment steps between a trial's perturbations (a multiple of ``eval.every_steps``:
    trials report at evaluations, and PBT acts on reports)."""
    quantile_fraction: float = 0.25
    """The bottom fraction of trials that copy the top fraction (at most 0.5)."""
    resample_probability: float = 0.25
    """Chance that a mutated value is drawn afresh from its distribution instead of perturbed."""
    synch: bool = False
    """Pause every trial at each perturbation and rank them together (Tune's synchronous PBT);
    otherwise a trial is ranked against the others' latest scores when it reaches its interval."""


def parse(raw: Any, base: Mapping[str, Any], space: Mapping[str, Any], trials: int) -> PBTOptions:
    """The ``scheduler: {pbt: {...}}`` options, checked against the resolved base config,
    the space and the number of ``trials``."""
    options = raw or {}
    if not isinstance(options, dict):
        raise ConfigError("scheduler.pbt", f"expected a mapping of options, got {options!r}")
    for key in options:
        if key not in OPTIONS:
            raise ConfigError(f"scheduler.pbt.{key}", f"unknown option; known: {', '.join(OPTIONS)}")
    every, total = int(base["eval"]["every_steps"]), int(base["total_steps"])
    if every <= 0:
        raise ConfigError("scheduler.pbt", "needs evaluations (eval.every_steps > 0): trials report to PBT there")
    default = every * max(1, round(total / 10 / every))
    interval = options.get("perturbation_interval_steps", default)
    where = "scheduler.pbt.perturbation_interval_steps"
    if isinstance(interval, bool) or not isinstance(interval, int) or interval <= 0:
        raise ConfigError(where, f"expected a positive integer, got {interval!r}")
    if interval % every:
        raise ConfigError(where, f"{interval} is not a multiple of eval.every_steps ({every}); trials report "
                                 "at evaluations")
    if interval >= total:
        raise ConfigError(where, f"{interval} leaves no perturbation (total_steps is {total})")
    quantile = _number(options, "quantile_fraction", 0.25)
    if not 0 < quantile <= 0.5:
        raise ConfigError("scheduler.pbt.quantile_fraction", f"must be in (0, 0.5], got {quantile}")
    resample = _number(options, "resample_probability", 0.25)
    if not 0 <= resample <= 1:
        raise ConfigError("scheduler.pbt.resample_probability", f"must be in [0, 1], got {resample}")
    synch = options.get("synch", False)
    if not isinstance(synch, bool):
        raise ConfigError("scheduler.pbt.synch", f"expected true or false, got {synch!r}")
    if trials < 2:
        raise ConfigError("samples", "PBT needs a population: at least 2 trials")
    check_space(base["algo"], space)
    return PBTOptions(interval, quantile, resample, synch)


def _number(options: dict[str, Any], key: str, default: float) -> float:
    value = options.get(key, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ConfigError(f"scheduler.pbt.{key}", f"expected a number, got {value!r}")
    return float(value)


def check_space(algo: str, space: Mapping[str, Any]) -> None:
    """Every key PBT would mutate must take effect on a restored model of ``algo``."""
    allowed = MUTABLE.get(algo, {})
    for key, dist in space.items():
        if key not in allowed:
            raise ConfigError(f"space.{key}", f"PBT cannot change it mid-run ({why_fixed(key, algo)}); "
                                              f"for {algo} it can change: {', '.join(allowed) or 'nothing'}")
        if key == "sac.ent_coef":
            for value in dist.extremes():
                try:
                    float(value)
                except (TypeError, ValueError):
                    raise ConfigError(f"space.{key}", f"PBT can change a fixed temperature only (a number); "
                                                      f"{value!r} is learned by the model") from None


def mutations(space: dict[str, Distribution]) -> dict[str, Any]:
    """Tune's ``hyperparam_mutations``: lists for choice/grid, Tune domains for ranges."""
    return {k: list(d.args) if d.kind in ("choice", "grid") else d.to_tune() for k, d in space.items()}


class ClampToSpace:
    """PBT's ``custom_explore_fn``: keep perturbed values inside their ranges.

    PBT perturbs a range value by multiplying it by 0.8 or 1.2, which can leave the
    range (``gae_lambda`` 0.99 x 1.2); the training config would then refuse the trial.
    A class, not a closure, so Tune's experiment state pickles it plainly.
    """

    def __init__(self, bounds: dict[str, tuple[float, float]]) -> None:
        self.bounds = bounds

    def __call__(self, config: dict[str, Any]) -> dict[str, Any]:
        for key, (low, high) in self.bounds.items():
            if key in config:
                value = min(max(config[key], low), high)
                config[key] = int(round(value)) if isinstance(config[key], int) else float(value)
        return config


def scheduler(spec: SweepSpec) -> Any:
    """Tune's PopulationBasedTraining for ``spec`` (Ray imported here only)."""
    from ray.tune.schedulers import PopulationBasedTraining

    from sim2real.policies.sweep.trainable import TIME_ATTR

    opts = spec.scheduler.pbt
    assert opts is not None
    bounds = {k: (float(lo), float(hi)) for k, d in spec.space.items() if d.kind not in ("choice", "grid")
              for lo, hi in [d.extremes()]}
    return PopulationBasedTraining(
        time_attr=TIME_ATTR, perturbation_interval=opts.perturbation_interval_steps,
        hyperparam_mutations=mutations(spec.space), quantile_fraction=opts.quantile_fraction,
        resample_probability=opts.resample_probability, synch=opts.synch, custom_explore_fn=ClampToSpace(bounds))
