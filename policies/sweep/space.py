"""The sweep file: which training config the trials start from, which keys vary and
how, what to optimise and which scheduler stops or perturbs trials.

Everything is checked here, before Ray starts, so a typo costs a one-line
:class:`ConfigError` naming the key instead of a cluster start and a failed trial::

    task: ArmReach
    config: ../policies/baselines/ArmReach/config.yaml   # relative to this file; optional
    set: {total_steps: 300000, eval.every_steps: 50000}  # fixed overrides (dotted keys)
    space:
      ppo.learning_rate: {loguniform: [1.0e-4, 1.0e-3]}
      ppo.ent_coef: {choice: [0.0, 0.005, 0.01]}
      ppo.batch_size: {grid: [256, 512, 1024]}
      seed: {randint: [0, 1000]}
    metric: mean_return
    mode: max
    samples: 12
    scheduler: {asha: {grace_steps: 100000, reduction_factor: 2}}   # or none, or {pbt: {...}} (see pbt.py)
    resources_per_trial: {cpu: 1}
    max_failures: 2
"""

from __future__ import annotations

import dataclasses
import math
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from sim2real.errors import ConfigError
from sim2real.policies.config import TrainConfig
from sim2real.policies.config_loading import read_yaml, resolve_config
from sim2real.policies.sweep import pbt
from sim2real.sim.core.schema import strip, type_hints

Kind = Literal["choice", "grid", "uniform", "loguniform", "randint"]
KINDS: tuple[str, ...] = typing.get_args(Kind)
METRICS = ("success_rate", "ci_low", "ci_high", "mean_return", "std_return", "mean_length", "successes")
"""Numbers of every evaluation row a sweep can optimise; a task's own metrics are
reported too, as ``final_<name>`` and ``mean_<name>`` (``EvalResult.metrics_final/_mean``)."""
TOP_KEYS = ("task", "config", "set", "space", "points", "metric", "mode", "samples", "scheduler",
            "resources_per_trial", "max_failures", "max_concurrent")
TRIAL_DEFAULTS: dict[str, Any] = {"torch_threads": 1, "nthread": 1}
"""Trial overrides unless the sweep sets them: one core per trial, so trials run side by side."""


@dataclass(frozen=True)
class Distribution:
    """How one config key varies across trials."""

    kind: str
    """``choice`` (uniform over values), ``grid`` (every value, times ``samples``),
    ``uniform`` / ``loguniform`` (a float in ``[low, high]``) or ``randint`` (an integer in ``[low, high)``)."""
    args: tuple[Any, ...]
    """The values (choice, grid) or ``(low, high)``."""

    def extremes(self) -> list[Any]:
        """Values that bound every sample: each value, or both ends (checked against the config)."""
        if self.kind in ("choice", "grid"):
            return list(self.args)
        low, high = self.args
        return [low, high - 1] if self.kind == "randint" else [float(low), float(high)]

    def to_tune(self) -> Any:
        """The Ray Tune domain (Ray imported here only)."""
        from ray import tune

        if self.kind == "grid":
            return tune.grid_search(list(self.args))
        return {"choice": lambda: tune.choice(list(self.args)), "uniform": lambda: tune.uniform(*self.args),
                "loguniform": lambda: tune.loguniform(*self.args), "randint": lambda: tune.randint(*self.args)}[
            self.kind]()


@dataclass
class Scheduler:
    """Which trials stop early or take over others; time is counted in environment steps."""

    kind: Literal["asha", "none", "pbt"] = "asha"
    """``asha`` (default), ``none`` (every trial runs its full budget) or ``pbt``
    (Population Based Training: weak trials continue strong ones' checkpoints with mutated values)."""
    grace_steps: int = 0
    """ASHA: environment steps every trial gets before it can be stopped (0: a quarter of ``total_steps``)."""
    reduction_factor: float = 2.0
    """ASHA: 1 / the fraction of trials promoted at each rung."""
    pbt: pbt.PBTOptions | None = None
    """PBT's options (``kind: pbt`` only)."""


@dataclass
class SweepSpec:
    """A parsed, checked sweep file."""

    path: Path
    """The sweep file."""
    task: str | None
    """The task (else the training config's ``task``)."""
    config: Path | None
    """The training config the trials start from (absolute), layered as ``sim2real train --config``."""
    fixed: dict[str, Any]
    """Dotted overrides shared by every trial (the file's ``set``, plus :data:`TRIAL_DEFAULTS`)."""
    space: dict[str, Distribution]
    """Dotted config key -> its distribution."""
    base: dict[str, Any]
    """The resolved training config without the space's values (every trial's starting point)."""
    metric: str = "mean_return"
    """The evaluation-row number the scheduler and the results table rank by."""
    mode: Literal["max", "min"] = "max"
    """Maximise or minimise ``metric``."""
    samples: int = 1
    """Trials drawn (Tune's ``num_samples``; with ``grid`` keys, per grid combination)."""
    scheduler: Scheduler = field(default_factory=Scheduler)
    """Early stopping."""
    cpu: float = 1.0
    """CPUs Ray reserves per trial."""
    gpu: float = 0.0
    """GPUs Ray reserves per trial."""
    max_failures: int = 2
    """Retries of a trial whose worker died; each resumes the trial's run folder."""
    max_concurrent: int | None = None
    """Trials at once (default: as many as the CPUs allow)."""
    points: list[dict[str, Any]] = field(default_factory=list)
    """Trials run first with these values (e.g. the shipped config's), counted in ``samples``;
    keys they leave out are sampled."""

    @property
    def total_steps(self) -> int:
        return int(self.base["total_steps"])

    def trial_count(self) -> int:
        grid = math.prod(len(d.args) for d in self.space.values() if d.kind == "grid")
        return self.samples * grid


def load(path: str | Path) -> SweepSpec:
    """Read and check a sweep file; every problem is a ConfigError naming the key."""
    path = Path(path).resolve()
    try:
        return _parse(path, read_yaml(path))
    except ConfigError as exc:
        raise exc.with_source(str(path)) from None


def _parse(path: Path, data: dict[str, Any]) -> SweepSpec:
    unknown = sorted(set(data) - set(TOP_KEYS))
    if unknown:
        raise ConfigError(unknown[0], f"unknown sweep key; known: {', '.join(TOP_KEYS)}")
    config = data.get("config")
    config_path = (path.parent / str(config)).resolve() if config else None
    if config_path is not None and not config_path.is_file():
        raise ConfigError("config", f"training config {config_path} does not exist")
    fixed = _mapping(data, "set")
    for key in fixed:
        _check_key(key, "set")
    space_raw = _mapping(data, "space")
    if not space_raw:
        raise ConfigError("space", "is empty: name at least one config key and its distribution")
    space = {}
    for key, spec in space_raw.items():
        _check_key(key, "space")
        if key in fixed:
            raise ConfigError(f"space.{key}", "is also fixed under `set`; keep it in one place")
        space[key] = _distribution(key, spec)
    fixed = {**{k: v for k, v in TRIAL_DEFAULTS.items() if k not in space}, **fixed}
    task = data.get("task")
    base = resolve_config(task, config_path, fixed)
    for key, dist in space.items():  # each bound against the real config rules (types, ranges, batch sizes)
        for value in dist.extremes():
            try:
                resolve_config(task, config_path, {**fixed, key: value})
            except ConfigError as exc:
                raise ConfigError(f"space.{key}", f"{value!r} is not a valid value: {exc.message}") from None
    spec = SweepSpec(path=path, task=task, config=config_path, fixed=fixed, space=space, base=base.to_dict())
    spec.points = _points(data.get("points") or [], space, lambda v: resolve_config(task, config_path, {**fixed, **v}))
    spec.metric = _metric(data.get("metric", "mean_return"))
    spec.mode = _one_of(data, "mode", ("max", "min"), "max")
    spec.samples = _positive_int(data, "samples", 1)
    spec.max_failures = _positive_int(data, "max_failures", 2, allow_zero=True)
    spec.max_concurrent = _positive_int(data, "max_concurrent", 1) if data.get("max_concurrent") is not None else None
    spec.cpu, spec.gpu = _resources(_mapping(data, "resources_per_trial"))
    spec.scheduler = _scheduler(data.get("scheduler", "asha"), spec)
    return spec


def _mapping(data: dict[str, Any], key: str) -> dict[str, Any]:
    value = data.get(key) or {}
    if not isinstance(value, dict):
        raise ConfigError(key, f"expected a mapping, got {value!r}")
    return value


def _check_key(key: str, section: str) -> None:
    """``key`` names a config field (sub-keys of mapping fields such as ``task_options`` are free)."""
    cls: Any = TrainConfig
    parts = str(key).split(".")
    for i, part in enumerate(parts):
        names = [f.name for f in dataclasses.fields(cls)]
        if part not in names:
            raise ConfigError(f"{section}.{key}", f"unknown config key {part!r}; known here: {', '.join(names)}")
        tp = strip(type_hints(cls)[part])
        if dataclasses.is_dataclass(tp):
            cls = tp
            continue
        if i < len(parts) - 1 and typing.get_origin(tp) is not dict:
            raise ConfigError(f"{section}.{key}", f"{part!r} is a value, not a section")
        if i == len(parts) - 1 or typing.get_origin(tp) is dict:
            return
    raise ConfigError(f"{section}.{key}", "is a section; name one of its values (e.g. ppo.learning_rate)")


def _leaf_type(key: str) -> Any:
    cls: Any = TrainConfig
    for part in key.split("."):
        if not (isinstance(cls, type) and dataclasses.is_dataclass(cls)):
            return Any
        cls = strip(type_hints(cls)[part])
    return cls


def _distribution(key: str, spec: Any) -> Distribution:
    where = f"space.{key}"
    if not isinstance(spec, dict) or len(spec) != 1:
        raise ConfigError(where, f"expected one of {{{': ..., '.join(KINDS)}: ...}}, got {spec!r}")
    ((kind, args),) = spec.items()
    if kind not in KINDS:
        raise ConfigError(where, f"unknown distribution {kind!r}; known: {', '.join(KINDS)}")
    if kind in ("choice", "grid"):
        if not isinstance(args, list) or not args:
            raise ConfigError(where, f"{kind} needs a non-empty list of values, got {args!r}")
        return Distribution(kind, tuple(args))
    if not isinstance(args, list) or len(args) != 2:
        raise ConfigError(where, f"{kind} needs [low, high], got {args!r}")
    low, high = args
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (low, high)):
        raise ConfigError(where, f"{kind} bounds must be numbers, got {args!r}")
    if not low < high:
        raise ConfigError(where, f"{kind} needs low < high, got [{low}, {high}]")
    if kind == "loguniform" and low <= 0:
        raise ConfigError(where, f"loguniform needs low > 0 (a logarithm), got {low}")
    if kind == "randint" and not (float(low).is_integer() and float(high).is_integer()):
        raise ConfigError(where, f"randint bounds must be integers, got {args!r}")
    if kind in ("uniform", "loguniform") and _leaf_type(key) is int:
        raise ConfigError(where, f"is an integer; {kind} draws fractions (use randint, choice or grid)")
    if kind == "randint":
        return Distribution(kind, (int(low), int(high)))
    return Distribution(kind, (float(low), float(high)))


def _points(raw: Any, space: dict[str, Distribution], check: Any) -> list[dict[str, Any]]:
    if not isinstance(raw, list) or not all(isinstance(p, dict) for p in raw):
        raise ConfigError("points", f"expected a list of mappings (config key: value), got {raw!r}")
    for i, point in enumerate(raw):
        for key in point:
            if key not in space:
                raise ConfigError(f"points[{i}].{key}", "is not a key of `space`")
            if space[key].kind == "grid":
                raise ConfigError(f"points[{i}].{key}", "is a grid key (every grid value runs anyway)")
        try:
            check(point)
        except ConfigError as exc:
            raise ConfigError(f"points[{i}]", f"{point!r} is not a valid config: {exc}") from None
    return [dict(p) for p in raw]


def _metric(value: Any) -> str:
    if value in METRICS or (isinstance(value, str) and value.startswith(("final_", "mean_"))):
        return str(value)
    raise ConfigError("metric", f"{value!r} is not an evaluation number; one of {', '.join(METRICS)}, "
                                "final_<task metric> or mean_<task metric>")


def _one_of(data: dict[str, Any], key: str, options: tuple[str, ...], default: str) -> Any:
    value = data.get(key, default)
    if value not in options:
        raise ConfigError(key, f"{value!r} is not one of {', '.join(options)}")
    return value


def _positive_int(data: dict[str, Any], key: str, default: int, allow_zero: bool = False) -> int:
    value = data.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or value < (0 if allow_zero else 1):
        raise ConfigError(key, f"expected {'a non-negative' if allow_zero else 'a positive'} integer, got {value!r}")
    return value


def _resources(raw: dict[str, Any]) -> tuple[float, float]:
    unknown = sorted(set(raw) - {"cpu", "gpu"})
    if unknown:
        raise ConfigError(f"resources_per_trial.{unknown[0]}", "unknown resource; known: cpu, gpu")
    cpu, gpu = raw.get("cpu", 1), raw.get("gpu", 0)
    for name, value in (("cpu", cpu), ("gpu", gpu)):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
            raise ConfigError(f"resources_per_trial.{name}", f"expected a non-negative number, got {value!r}")
    if cpu <= 0:
        raise ConfigError("resources_per_trial.cpu", "a trial needs some CPU (> 0)")
    return float(cpu), float(gpu)


def _scheduler(raw: Any, spec: SweepSpec) -> Scheduler:
    """``asha`` / ``none`` / ``pbt``, alone or as ``{asha: {options}}``."""
    if raw == "pbt" or (isinstance(raw, dict) and len(raw) == 1 and "pbt" in raw):
        return Scheduler(kind="pbt", pbt=pbt.parse(raw["pbt"] if isinstance(raw, dict) else None, spec.base,
                                                       spec.space, spec.trial_count()))
    if raw is None or raw in ("none", "asha"):
        kind, options = (raw or "none"), {}
    elif isinstance(raw, dict) and len(raw) == 1 and next(iter(raw)) in ("asha", "none"):
        ((kind, options),) = raw.items()
        options = options or {}
    else:
        raise ConfigError("scheduler", f"expected asha, none or pbt (optionally {{asha: {{...}}}}), got {raw!r}")
    if not isinstance(options, dict):
        raise ConfigError(f"scheduler.{kind}", f"expected a mapping of options, got {options!r}")
    allowed = {"asha": ("grace_steps", "reduction_factor"), "none": ()}[kind]
    sched = Scheduler(kind=kind)
    for key, value in options.items():
        if key not in allowed:
            raise ConfigError(f"scheduler.{kind}.{key}", f"unknown option; known: {', '.join(allowed) or 'none'}")
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
            raise ConfigError(f"scheduler.{kind}.{key}", f"expected a non-negative number, got {value!r}")
        setattr(sched, key, type(getattr(sched, key))(value))
    total = spec.total_steps
    if kind == "asha":
        sched.grace_steps = sched.grace_steps or max(1, total // 4)
        if sched.grace_steps >= total:
            raise ConfigError("scheduler.asha.grace_steps", f"{sched.grace_steps} leaves nothing to stop "
                                                            f"(total_steps is {total})")
        if sched.reduction_factor <= 1:
            raise ConfigError("scheduler.asha.reduction_factor", f"must exceed 1, got {sched.reduction_factor}")
    return sched
