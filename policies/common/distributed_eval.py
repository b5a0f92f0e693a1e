"""One evaluation spread over Ray actors (``sim2real eval --workers N``).

The layout of ``n_envs`` environments is dealt into ``N`` :class:`~.evaluation.Shard`
s; each actor builds its own batched simulation of its shard and loads its own copy of
the policy from its file (an ONNX file or a run folder: nothing big is pickled), runs
its environments' episodes and sends back one record per episode. The driver sorts the
records by (environment, episode) and summarises them as one process would.

What is the same as one process with the same ``--n-envs`` and ``--seed``: which
episodes run (each environment's quota) and everything each episode draws (randomized
parameters, start state, latency, and inside the episode observation noise, pushes and
command resampling), all from the episode's own generator (``Engine.reset(rngs=...)``),
so every number (success rate, interval, returns, lengths, task metrics) is identical.
``env_steps`` counts what each
actor simulated, idle environments included, and ``seconds`` is the driver's wall-clock.

Worker death: an actor's answer depends only on what it was built from, so Ray rebuilds
a dead actor and asks again once (``max_restarts=1``); a second loss is an error.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable
from typing import Any

from sim2real.policies.common import cluster
from sim2real.policies.common.evaluation import Episode, EvalResult, Evaluator, PolicyFn, Shard, shards, summarise
from sim2real.sim.core.task import Task


class EvalShard:
    """One worker: the shard's batched simulation and the policy, loaded where it runs."""

    def __init__(self, load_policy: Callable[[], PolicyFn], task_cls: type[Task], shard: Shard, episodes: int,
                 nthread: int, options: dict[str, Any]) -> None:
        self.policy = load_policy()
        self.evaluator = Evaluator(task_cls, shard=shard, nthread=nthread, **options)
        self.episodes = episodes

    def run(self) -> tuple[list[Episode], int]:
        """This shard's episode records and the environment steps it simulated."""
        rows = self.evaluator.run_episodes(self.policy, self.episodes)
        return rows, self.evaluator.steps


def evaluate(load_policy: Callable[[], PolicyFn], task_cls: type[Task], episodes: int, n_envs: int, workers: int,
             ray_address: str | None = cluster.LOCAL, **options: Any) -> EvalResult:
    """``episodes`` episodes over ``n_envs`` environments split across ``workers`` Ray
    actors (one CPU each); ``options`` are :class:`Evaluator`'s (``seed``, ``dr``,
    ``action_mode``, ``task_options``, ...). ``load_policy`` must be picklable (a module
    function or a ``functools.partial`` of one) and load the policy from its path.
    ``ray_address=None`` runs the shards one after another in this process."""
    t0 = time.perf_counter()
    inits = [{"load_policy": load_policy, "task_cls": task_cls, "shard": shard, "episodes": episodes,
              "nthread": 1, "options": options} for shard in shards(n_envs, workers)]
    parts: list[tuple[list[Episode], int]] = cluster.run_actors(EvalShard, inits, "run", ray_address,
                                                                num_cpus=1.0, max_restarts=1)
    rows = sorted(itertools.chain.from_iterable(p[0] for p in parts), key=lambda row: (row.env, row.index))
    return summarise(rows, sum(p[1] for p in parts), time.perf_counter() - t0)
