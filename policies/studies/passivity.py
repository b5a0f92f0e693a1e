"""The passivity study: passivity-agnostic vs passivity-aware policies, filter off vs on.

Reproduces the comparison of Zhang, Solak, Hjorth and Ajoudani ("Towards Passive Safe
Reinforcement Learning", the seed paper) on the arm's contact-rich maze in
``ee_impedance`` mode (the policy commands setpoint motions *and* stiffness):

* **agnostic**: plain PPO on the task reward;
* **aware**: PPO-Lagrangian with the energy drawn beyond the tank as the cost,
  ``cost_limit`` joules per episode;

each evaluated with the passivity filter off and on (the four combinations), for
``seeds`` training seeds, plus a sweep of the cost limit (sensitivity). Runs that
already exist in the output folder are loaded (or resumed when unfinished), so the
study can be extended or re-plotted without retraining.

With a Ray address (``sim2real study passivity --ray``) the training runs, then the
evaluations, run as Ray tasks (:func:`~sim2real.policies.common.cluster.run_calls`),
one CPU each; the report is written here as without. A run whose worker dies is
re-run by Ray and resumes from its folder's last checkpoint (``train_or_load``), and an
evaluation is a pure function of its run, so both are retried.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from sim2real.policies.common import atomic, cluster

POLICIES = ("agnostic", "aware")
FILTERS = (False, True)
EPISODE_FIGURES = {
    "success": "success rate",
    "violated": "episodes with a violation",
    "violation_steps": "violations per episode",
    "energy_violation_total": "energy drawn beyond the tank (J/episode)",
    "energy_injected_total": "energy injected (J/episode)",
    "task_time": "time to the exit (s, successful episodes)",
    "contact_force_peak": "contact force peak (N)",
    "filter_steps": "filter interventions per episode",
    "tank_energy_min": "lowest tank energy (J)",
}


@dataclass
class PassivityStudyConfig:
    """Everything that determines the study (written to ``study.json``)."""

    task: str = "ArmMaze"
    """Contact-rich task, run in ``ee_impedance`` mode."""
    seeds: int = 5
    """Training seeds per policy type."""
    steps: int = 250_000
    """Environment steps per training run."""
    n_envs: int = 32
    """Training environments per run."""
    cost_limit: float = 1.0
    """Allowed energy violation per episode (J) of the aware policies."""
    lambda_lr: float = 0.02
    """Integral gain of the multiplier (PPO-Lagrangian ``lagrangian.lambda_lr``)."""
    lambda_kp: float = 0.1
    """Proportional gain: lets the multiplier fall as soon as the cost is under the
    limit (a pure integral keeps it high long after, and the policy freezes)."""
    sensitivity_limits: list[float] = field(default_factory=lambda: [0.25, 3.0])
    """Further cost limits trained for the sensitivity sweep (with ``cost_limit``)."""
    sensitivity_seeds: int = 1
    """Seeds per extra cost limit."""
    episodes: int = 24
    """Evaluation episodes per policy and filter setting."""
    eval_dr: str = "train"
    """Randomization preset of the evaluation episodes."""
    tank: dict[str, float] = field(default_factory=dict)
    """Energy-tank levels (``initial``/``minimum``/``maximum``; empty: the defaults)."""


def _run_name(kind: str, seed: int, limit: float | None) -> str:
    return f"{kind}-seed{seed}" if limit is None else f"{kind}-limit{limit:g}-seed{seed}"


def train_or_load(
    cfg: PassivityStudyConfig, out: Path, kind: str, seed: int, limit: float | None, log: Callable
) -> Path:
    """Train one run into ``out/runs`` unless it is already there (resume if unfinished)."""
    from sim2real.policies.common.rundir import RunDir
    from sim2real.policies.config_loading import resolve_config
    from sim2real.policies.loading import load_run
    from sim2real.policies.trainer import Trainer

    path = out / "runs" / _run_name(kind, seed, limit)
    overrides: dict[str, Any] = {
        "algo": "ppo" if kind == "agnostic" else "ppo_lag",
        "seed": seed,
        "total_steps": cfg.steps,
        "n_envs": cfg.n_envs,
        "action_mode": "ee_impedance",
        "eval.every_steps": max(cfg.steps // 3, 1),
        "eval.episodes": 8,
        "checkpoint.every_steps": max(cfg.steps // 3, 1),
        "task_options": {"energy_tank": dict(cfg.tank)} if cfg.tank else {},
    }
    if kind == "aware":
        overrides["lagrangian.cost_limit"] = cfg.cost_limit if limit is None else limit
        overrides["lagrangian.lambda_lr"] = cfg.lambda_lr
        overrides["lagrangian.lambda_kp"] = cfg.lambda_kp
    resume = RunDir(path).is_run()
    if resume:
        try:
            if load_run(path, "last").step >= cfg.steps:
                log(f"loaded {path.name} (trained)")
                return path
        except Exception:
            pass
    if resume:
        # An existing run keeps its own config; only its step budget may grow.
        config = RunDir(path).read_config()
        config.total_steps = max(config.total_steps, cfg.steps)
    else:
        config = resolve_config(cfg.task, None, overrides)
    log(f"{'resuming' if resume else 'training'} {path.name} ({config.algo}, {cfg.steps:,} steps)")
    Trainer(config, path, resume=resume, progress=False).run()
    return path


def evaluate(cfg: PassivityStudyConfig, run: Path, filter_on: bool) -> dict[str, float]:
    """Episode figures of a run's last checkpoint with the passivity filter off or on."""
    from sim2real.policies.common.evaluation import Evaluator
    from sim2real.policies.loading import load_run

    loaded = load_run(run, "last")
    options = {**loaded.config.task_options, "passivity_filter": filter_on}
    evaluator = Evaluator(loaded.task_cls, n_envs=8, action_mode="ee_impedance", dr=cfg.eval_dr, task_options=options)
    rows = evaluator.run_episodes(loaded.policy(), cfg.episodes)
    dt = loaded.task_cls.control_dt
    figures: dict[str, float] = {"success": float(np.mean([r.success for r in rows]))}
    for key in EPISODE_FIGURES:
        if key in ("success", "task_time"):
            continue
        figures[key] = float(np.mean([r.final[key] for r in rows]))
    times = [r.length * dt for r in rows if r.success]
    figures["task_time"] = float(np.mean(times)) if times else float("nan")
    figures["episodes"] = float(len(rows))
    return figures


def t_quantile(p: float, dof: int) -> float:
    """The ``p`` quantile (p > 0.5) of Student's t with ``dof`` degrees of freedom.

    Computed, not tabled: a table that stopped at 10 degrees of freedom and then used
    the normal 1.96 made an 11-seed interval 11 % too narrow. Newton's method on the CDF,
    which is 1/2 plus the density's integral from 0 (Simpson's rule, 4000 panels: the
    density is smooth and the quantile is at most 12.7 for p = 0.975).
    """
    if not 0.5 < p < 1.0 or dof < 1:
        raise ValueError(f"need 0.5 < p < 1 and dof >= 1, got {p}, {dof}")
    log_norm = math.lgamma((dof + 1) / 2) - math.lgamma(dof / 2) - 0.5 * math.log(dof * math.pi)

    def pdf(x: np.ndarray | float) -> np.ndarray | float:
        return np.exp(log_norm - (dof + 1) / 2 * np.log1p(np.square(x) / dof))

    def cdf(x: float) -> float:
        grid = np.linspace(0.0, x, 4001)
        weights = np.ones(4001)
        weights[1:-1:2], weights[2:-1:2] = 4.0, 2.0
        return 0.5 + float(weights @ pdf(grid)) * x / (3 * 4000)

    x = 1.96
    for _ in range(50):
        step = (cdf(x) - p) / float(pdf(x))
        x -= step
        if abs(step) < 1e-10:
            break
    return x


def mean_ci(values: list[float]) -> tuple[float, float]:
    """Mean and the half-width of its 95% Student-t interval over seeds."""
    v = np.asarray([x for x in values if np.isfinite(x)], dtype=float)
    if len(v) == 0:
        return float("nan"), float("nan")
    if len(v) == 1:
        return float(v[0]), float("nan")
    t = t_quantile(0.975, len(v) - 1)
    half = t * v.std(ddof=1) / np.sqrt(len(v))
    return float(v.mean()), float(half)


def tank_trace(cfg: PassivityStudyConfig, run: Path, filter_on: bool, seed: int = 123) -> list[float]:
    """Tank energy at every step of one episode (the same maze and start for every policy)."""
    from sim2real.errors import ConfigError
    from sim2real.policies.loading import load_run
    from sim2real.sim.arm.base import ArmTask
    from sim2real.sim.core.engine import Engine
    from sim2real.sim.core.env import resolve_dr

    loaded = load_run(run, "last")
    task = loaded.task_cls(
        num_envs=1, action_mode="ee_impedance", **{**loaded.config.task_options, "passivity_filter": filter_on}
    )
    # ee_impedance arm tasks carry the energy tank (the passivity filter's).
    energy = task.energy if isinstance(task, ArmTask) else None
    if energy is None:
        raise ConfigError("run", f"{run}: {loaded.task_cls.__name__} has no energy tank (an arm task in ee_impedance)")
    engine = Engine(task, resolve_dr(loaded.task_cls, cfg.eval_dr), seed=seed)
    engine.reset()
    policy, obs = loaded.policy(), engine.observe()
    trace = [float(energy.tank.level[0])]
    for _ in range(engine.episode_steps):
        out = engine.step(np.asarray(policy(obs.astype(np.float32)), dtype=np.float64))
        trace.append(float(out.result.metrics["tank_energy"][0]))
        obs = out.obs
        if out.result.terminated[0]:
            break
    engine.close()
    return trace


def _silent(message: str) -> None:
    """The log of a run on a Ray worker (the driver reports each one as it finishes)."""


RETRIES = 2
"""Ray re-runs of a training run or evaluation whose worker died (both are idempotent)."""


def run_study(cfg: PassivityStudyConfig, out: str | Path, log: Callable[[str], None] = print,
              ray_address: str | None = None) -> dict[str, Any]:
    """Train/load, evaluate, and write ``results.json``, ``study.md`` and the plots into ``out``.

    ``ray_address``: run the training runs and the evaluations as Ray tasks there
    (:data:`~sim2real.policies.common.cluster.LOCAL`: a local instance); ``None``: one
    after another in this process. The results are the same either way.
    """
    from sim2real.policies.studies.passivity_report import write_plots, write_table

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    atomic.write_text(out / "study.json", json.dumps(dataclasses.asdict(cfg), indent=2))
    limits = sorted({cfg.cost_limit, *cfg.sensitivity_limits})
    wanted = [(kind, seed, None) for seed in range(cfg.seeds) for kind in POLICIES]
    wanted += [("aware", s, limit) for limit in limits if limit != cfg.cost_limit for s in range(cfg.sensitivity_seeds)]
    quiet = ray_address is not None
    trained = cluster.run_calls(
        train_or_load, [{"cfg": cfg, "out": out, "kind": k, "seed": s, "limit": lim, "log": _silent if quiet else log}
                        for k, s, lim in wanted],
        ray_address, max_retries=RETRIES, on_result=lambda _, path: log(f"trained {path.name}") if quiet else None)
    path_of = dict(zip(wanted, trained, strict=True))
    runs = {kind: [path_of[(kind, seed, None)] for seed in range(cfg.seeds)] for kind in POLICIES}
    # Every (run, filter) once: the sensitivity sweep's cost_limit point reuses the main runs.
    pairs = list(dict.fromkeys((path, f) for path in trained for f in FILTERS))

    def evaluated(i: int, figures: dict[str, float]) -> None:
        log(f"evaluated {pairs[i][0].name} filter {'on' if pairs[i][1] else 'off'}: {figures['success']:.0%} success")

    figures = dict(zip(pairs, cluster.run_calls(evaluate, [{"cfg": cfg, "run": p, "filter_on": f} for p, f in pairs],
                                                ray_address, max_retries=RETRIES, on_result=evaluated), strict=True))
    per_seed = {f"{kind}/filter_{'on' if f else 'off'}": [figures[(run, f)] for run in runs[kind]]
                for kind in POLICIES for f in FILTERS}
    summary = {
        key: {
            fig: dict(zip(("mean", "ci95"), mean_ci([row[fig] for row in rows]), strict=True))
            for fig in EPISODE_FIGURES
        }
        for key, rows in per_seed.items()
    }
    # Sensitivity to the cost limit: aware policies at each limit, filter off and on.
    sensitivity: dict[str, dict[str, Any]] = {}
    for limit in limits:
        if limit == cfg.cost_limit:
            paths = runs["aware"]
        else:
            paths = [path_of[("aware", s, limit)] for s in range(cfg.sensitivity_seeds)]
        rows = {f: [figures[(p, f)] for p in paths] for f in FILTERS}
        sensitivity[f"{limit:g}"] = {
            f"filter_{'on' if f else 'off'}": {
                fig: mean_ci([r[fig] for r in rows[f]])[0]
                for fig in ("success", "energy_violation_total", "filter_steps")
            }
            for f in FILTERS
        } | {"seeds": len(paths)}
    traces = {
        f"{kind}/filter_{'on' if f else 'off'}": tank_trace(cfg, runs[kind][0], f) for kind in POLICIES for f in FILTERS
    }
    results = {"config": dataclasses.asdict(cfg), "per_seed": per_seed, "summary": summary, "sensitivity": sensitivity}
    atomic.write_text(out / "results.json", json.dumps(results, indent=2))
    atomic.write_text(out / "tank_traces.json", json.dumps(traces))
    write_table(results, out / "study.md")
    write_plots(results, traces, out)
    return results
