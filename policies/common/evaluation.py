"""Policy evaluation: success rate with a Wilson interval, returns, task metrics.

Runs on the simulation engine directly (no SB3, no torch), so the same loop
evaluates a torch checkpoint during training and an exported ONNX file. A
policy is any callable mapping observations ``[B, O]`` (float32) to actions
``[B, A]``.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from sim2real.sim.core.engine import Engine
from sim2real.sim.core.env import resolve_dr
from sim2real.sim.core.physics import engine_backend
from sim2real.sim.core.solver import SolverVariant
from sim2real.sim.core.task import Task

PolicyFn = Callable[[np.ndarray], np.ndarray]


def wilson_interval(successes: int, n: int, z: float = 1.959964) -> tuple[float, float]:
    """Wilson score interval of a binomial proportion (95% by default).

    Unlike the normal approximation it stays inside [0, 1] and is informative at
    0 or n successes, which small evaluations hit often.
    """
    if n <= 0:
        return 0.0, 1.0
    p = successes / n
    denom = 1.0 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z / denom * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    # At 0 or n successes the exact bound is 0 or 1; rounding would leave it a hair inside.
    lo = 0.0 if successes == 0 else max(0.0, centre - half)
    hi = 1.0 if successes == n else min(1.0, centre + half)
    return lo, hi


@dataclass
class EvalResult:
    """Outcome of one evaluation."""

    episodes: int
    successes: int
    success_rate: float
    ci_low: float
    """Lower end of the 95% Wilson interval of the success rate."""
    ci_high: float
    mean_return: float
    std_return: float
    mean_length: float
    metrics_final: dict[str, float] = field(default_factory=dict)
    """Each task metric at the episode's last step (e.g. final distance), averaged over episodes."""
    metrics_mean: dict[str, float] = field(default_factory=dict)
    """Each task metric averaged over the episode's steps (e.g. tracking error), then over episodes."""
    env_steps: int = 0
    seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Episode:
    """One evaluation episode."""

    ret: float
    length: int
    success: bool
    final: dict[str, float]
    """Task metrics at the last step (episode totals for running counters)."""
    mean: dict[str, float]
    """Task metrics averaged over the episode's steps."""
    draw: dict[str, Any] = field(default_factory=dict)
    """The randomization this episode ran under (the engine's sampled values, plus its
    ``latency_steps``); empty without randomization."""
    env: int = 0
    """The environment of the evaluation's layout that ran it (its index in the whole
    batch, also when a :class:`Shard` ran it)."""
    index: int = 0
    """Which of that environment's episodes it was (0 first)."""


@dataclass(frozen=True)
class Shard:
    """Environments ``env_ids`` of an evaluation laid out over ``of`` environments.

    An :class:`Evaluator` given a shard steps only those environments, but each runs the
    episodes it has in the whole layout (the same quota, the same per-episode seeds), so
    the shards of a layout together run exactly the episodes one evaluator of ``of``
    environments runs (``sim2real eval --workers``).
    """

    env_ids: tuple[int, ...]
    of: int


def shards(n_envs: int, parts: int) -> list[Shard]:
    """``n_envs`` environments dealt round-robin into at most ``parts`` non-empty shards
    (round-robin: the later environments, which get the extra episodes, spread out)."""
    return [Shard(tuple(range(w, n_envs, parts)), n_envs) for w in range(min(parts, n_envs))]


class Evaluator:
    """Evaluation environments of one task, kept between evaluations.

    Args:
        task_cls: The task class.
        n_envs: Environments stepped as one batch.
        action_mode: The task's action mode (``None``: default).
        dr: Randomization preset name (``train``/``heldout``/``none``) or object.
        seed: Re-applied at every :meth:`run`, so each run sees the same episodes.
        task_options: Passed to the task constructor.
        nthread: Physics threads (``None``: all cores).
        solver: Another simulator configuration (sim-to-sim checks); default: the task's own.
        shard: Step only these environments of a larger layout (``n_envs`` is then the
            shard's size): one worker's part of a distributed evaluation.
        physics: ``mujoco`` (CPU MuJoCo) or ``warp`` (MuJoCo Warp), as ``--backend``.
    """

    def __init__(
        self,
        task_cls: type[Task],
        n_envs: int = 4,
        action_mode: str | None = None,
        dr: Any = "none",
        seed: int = 10_000,
        task_options: dict[str, Any] | None = None,
        nthread: int | None = None,
        solver: SolverVariant | None = None,
        shard: Shard | None = None,
        physics: str = "mujoco",
    ) -> None:
        if shard is not None:
            n_envs = len(shard.env_ids)
        self.env_ids = list(shard.env_ids) if shard is not None else list(range(n_envs))
        """Each environment's index in the evaluation's layout."""
        self.layout_envs = shard.of if shard is not None else n_envs
        self.task = task_cls(num_envs=n_envs, action_mode=action_mode, **(task_options or {}))
        self.engine = Engine(self.task, resolve_dr(task_cls, dr), seed=seed, nthread=nthread, solver=solver,
                             backend=engine_backend(physics, n_envs))
        self.seed = seed
        self.obs_size = self.engine.obs_size
        self.act_size = self.engine.act_size
        self.steps = 0
        """Environment steps simulated by the last run (idle environments' included)."""

    def run(self, policy: PolicyFn, episodes: int) -> EvalResult:
        """Run ``episodes`` episodes (spread evenly over the batch) and summarise them."""
        t0 = time.perf_counter()
        rows = self.run_episodes(policy, episodes)
        return summarise(rows, self.steps, time.perf_counter() - t0)

    def run_episodes(self, policy: PolicyFn, episodes: int) -> list[Episode]:
        """Run ``episodes`` episodes (spread evenly over the layout's environments), one
        record each, ordered by environment and episode (not by when they ended), so the
        records and any sum over them do not depend on which shard ran what."""
        eng, n = self.engine, self.engine.num_envs
        eng.seed(self.seed)
        env_ids = self.env_ids
        quota = np.array([(episodes + g) // self.layout_envs for g in env_ids])
        done_count = np.zeros(n, dtype=np.int64)

        def episode_rngs(ids: Any) -> list[np.random.Generator]:
            # Env g's k-th episode (g: its index in the layout) draws from its own seed:
            # every controller run with this seed meets the same episodes (parameters,
            # start, latency), paired, however long each of its episodes lasts, and so
            # does a shard. Observation noise, pushes and command resampling within an
            # episode come from the engine's one stream for the batch: neither paired nor
            # the same in a shard (see sim2real.policies.common.distributed_eval).
            return [np.random.default_rng((self.seed, env_ids[int(i)], int(done_count[i]))) for i in ids]

        eng.reset(rngs=episode_rngs(range(n)))
        # A privileged controller (an oracle) is told each episode's true parameters.
        told = getattr(policy, "on_reset", None)
        if told is not None:
            told(list(range(n)), list(eng.dr_sampled))
        # A privileged teacher reads the simulator's privileged state after the observation.
        teacher = bool(getattr(policy, "privileged_inputs", False))
        obs = eng.observe()
        # Fixed per-env quotas (above): counting whichever episodes finish first would favour short ones.
        ret, length = np.zeros(n), np.zeros(n, dtype=np.int64)
        sums: dict[str, np.ndarray] = {}
        rows: list[Episode] = []
        steps = 0
        while (done_count < quota).any():
            inputs = np.concatenate([obs, self.task.privileged(eng.phys)], axis=1) if teacher else obs
            action = np.asarray(policy(inputs.astype(np.float32)), dtype=np.float64).reshape(n, self.act_size)
            out = eng.step(action)
            r = out.result
            steps += n
            ret += r.reward
            length += 1
            for k, v in r.metrics.items():
                sums.setdefault(k, np.zeros(n))
                sums[k] += v
            obs = out.obs
            done = r.terminated | out.truncated
            ids = np.flatnonzero(done)
            for i in ids:
                if done_count[i] < quota[i]:
                    final = {k: float(v[i]) for k, v in r.metrics.items()}
                    mean = {k: float(s[i] / length[i]) for k, s in sums.items()}
                    draw = dict(eng.dr_sampled[i], latency_steps=int(eng.latency[i])) if eng.dr_sampled[i] else {}
                    rows.append(Episode(float(ret[i]), int(length[i]), bool(r.success[i]), final, mean, draw,
                                        env_ids[i], int(done_count[i])))
                    done_count[i] += 1
            if len(ids):
                eng.reset(ids, rngs=episode_rngs(ids))
                if told is not None:
                    told(list(ids), [eng.dr_sampled[i] for i in ids])
                obs[ids] = eng.observe()[ids]
                ret[ids] = 0.0
                length[ids] = 0
                for s in sums.values():
                    s[ids] = 0.0
        self.steps = steps
        rows.sort(key=lambda row: (row.env, row.index))
        return rows


def summarise(rows: list[Episode], steps: int, seconds: float) -> EvalResult:
    """Aggregate per-episode records."""
    n = len(rows)
    returns = np.array([r.ret for r in rows]) if n else np.zeros(0)
    k = sum(1 for r in rows if r.success)
    lo, hi = wilson_interval(k, n)
    keys = sorted({key for r in rows for key in r.final})
    return EvalResult(
        episodes=n,
        successes=k,
        success_rate=k / n if n else 0.0,
        ci_low=lo,
        ci_high=hi,
        mean_return=float(returns.mean()) if n else 0.0,
        std_return=float(returns.std()) if n else 0.0,
        mean_length=float(np.mean([r.length for r in rows])) if n else 0.0,
        metrics_final={key: float(np.mean([r.final[key] for r in rows if key in r.final])) for key in keys},
        metrics_mean={key: float(np.mean([r.mean[key] for r in rows if key in r.mean])) for key in keys},
        env_steps=steps,
        seconds=seconds,
    )
