"""Running a robustness study (:mod:`~sim2real.policies.studies.robustness` defines its
points): the policy, its task's reference controller and, where the robot has one, the
oracle (a model-based controller told each episode's true parameters) at every point,
with the same evaluation seeds; then the feasible held-out preset (the ranges at which
the oracle still succeeds in at least 95 % of episodes) and the policy's transfer ratio
there; the old held-out preset as the stress test; and the sim-to-sim check.

Every point is evaluated by :func:`evaluate_point_of` with controllers built for it
alone (a reference's or an oracle's internal state never carries from one point into
the next, so a point's figures do not depend on which points ran before it), so the
points can run as Ray tasks (``sim2real robustness --ray``) with the same results:
:func:`~sim2real.policies.common.cluster.run_calls`, one CPU each, retried when a worker
dies (a point is a pure function of its arguments).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from sim2real.policies.common import cluster
from sim2real.policies.common.evaluation import Evaluator
from sim2real.policies.studies.robustness import (
    COMBINED,
    Axis,
    Controller,
    axes_for,
    combined,
    feasible_preset,
)
from sim2real.sim.core.randomization import DomainRandomization
from sim2real.sim.core.solver import SIM2SIM, SolverVariant

FEASIBLE_SUCCESS = 0.95
"""The oracle's success that marks a case physically within reach."""
Controllers = dict[str, tuple[Controller, str, dict[str, Any]]]
"""Name -> (controller, the action mode it acts in, the task options it runs under: the
study's, but an oracle trained under other controller options keeps its own)."""


def controllers_for(policy: Any, task_cls: type, options: dict[str, Any], n_envs: int) -> Controllers:
    """The policy, its task's reference (in a residual mode a zero residual: the drone's
    PID, the quadruped's trot; else the robot's classical controller) and the robot's
    oracle where it has one."""
    from sim2real.policies.classical import controller_for, oracle_for

    mode = policy.action_mode
    task = task_cls(num_envs=n_envs, action_mode=mode, **options)
    act_size = sum(int(n) for _, n in task.action_layout())
    reference: Controller = ((lambda obs: np.zeros((len(obs), act_size))) if mode.endswith("_residual")
                             else controller_for(task, n_envs).act)
    out: Controllers = {"policy": (policy, mode, options), "reference": (reference, mode, options)}
    oracle = oracle_for(task, n_envs)
    if oracle is not None:
        controller, oracle_mode = oracle
        options_for = getattr(controller, "options_for", None)  # a trained policy's (ORACLES' contract)
        out["oracle"] = (controller, oracle_mode, options if options_for is None else options_for(options))
    return out


def evaluate_point(task_cls: type, dr: DomainRandomization, controllers: Controllers, episodes: int, n_envs: int,
                   seed: int, solver: SolverVariant | None = None) -> dict[str, Any]:
    """Each controller's success (with its 95 % interval) and task metrics, same seeds."""
    out = {}
    for name, (controller, mode, options) in controllers.items():
        ev = Evaluator(task_cls, n_envs=n_envs, action_mode=mode, dr=dr, seed=seed, task_options=options,
                       solver=solver)
        d = ev.run(controller, episodes).to_dict()
        out[name] = {k: d[k] for k in ("successes", "episodes", "success_rate", "ci_low", "ci_high", "metrics_final",
                                       "metrics_mean")}
    return out


@functools.lru_cache(maxsize=4)
def _onnx(path: str) -> Any:
    """The exported policy at ``path``, loaded once per process (it holds no state)."""
    from sim2real.policies.deploy import OnnxPolicy

    return OnnxPolicy(path)


def evaluate_point_of(policy_path: str, dr: DomainRandomization, episodes: int, n_envs: int, seed: int,
                      solver: SolverVariant | None = None, oracle: bool = True,
                      task_options: dict[str, Any] | None = None) -> dict[str, Any]:
    """:func:`evaluate_point` for the exported policy at ``policy_path`` with fresh
    controllers (its reference and, with ``oracle``, its oracle), ``task_options`` over the
    policy's own; what a Ray task runs."""
    from sim2real.sim.core.registry import REGISTRY

    policy = _onnx(policy_path)
    task_cls = REGISTRY.get(policy.task)
    options = {**(policy.metadata.get("task_options") or {}), **(task_options or {})}
    controllers = controllers_for(policy, task_cls, options, n_envs)
    if not oracle:
        controllers.pop("oracle", None)
    return evaluate_point(task_cls, dr, controllers, episodes, n_envs, seed, solver)


def _points(policy: Any, specs: list[tuple[str, dict[str, Any]]], on_point: Callable[[str], None],
            ray_address: str | None) -> list[dict[str, Any]]:
    """``(label, evaluate_point_of arguments)`` of ``policy``, here or as Ray tasks."""
    calls = [{"policy_path": str(policy.path), **kwargs} for _, kwargs in specs]
    return cluster.run_calls(evaluate_point_of, calls, ray_address, max_retries=2,
                             on_result=lambda i, _: on_point(specs[i][0]))


def study(policy: Any, axis_names: list[str] | None, episodes: int, n_envs: int, seed: int,
          on_point: Callable[[str], None] = lambda _: None, feasible_episodes: int | None = None,
          ray_address: str | None = None, task_options: dict[str, Any] | None = None) -> dict[str, Any]:
    """Curves of an exported ``policy`` (:class:`~sim2real.policies.deploy.OnnxPolicy`),
    its reference and its oracle: every axis's points, the combined points, the
    feasible held-out preset with the transfer ratio (``feasible_episodes`` there,
    default ``episodes``: the headline figure may deserve more), and the held-out
    stress test. ``ray_address``: evaluate the points as Ray tasks there (the feasible
    preset after the others: it comes from the oracle's curves). ``task_options`` override
    the policy's own (``{"base_velocity": "estimated"}``: on the robot's own estimate)."""
    from sim2real.sim.core.registry import REGISTRY

    task_cls = REGISTRY.get(policy.task)
    options = {**(policy.metadata.get("task_options") or {}), **(task_options or {})}
    train = task_cls.dr_class.train()
    axes, skipped = axes_for(train, axis_names)
    controllers = controllers_for(policy, task_cls, options, n_envs)
    base = dataclasses.replace(task_cls.dr_class(), obs_noise_scale=0.0)
    common = {"n_envs": n_envs, "seed": seed, "task_options": task_options}
    specs = [(f"{axis.name} {v:g}", {"dr": axis.at(base, train, v), "episodes": episodes, **common,
                                     "solver": SolverVariant(substeps=axis.substeps)})
             for axis in axes for v in axis.values]
    factors = COMBINED if any(a.trained for a in axes) else ()  # model-error axes alone: nothing to widen
    specs += [(f"combined x{f:g}", {"dr": combined(train, axes, f), "episodes": episodes, **common})
              for f in factors]
    specs.append(("held-out preset", {"dr": task_cls.dr_class.heldout(), "episodes": episodes, **common}))
    results = iter(_points(policy, specs, on_point, ray_address))
    curves = {axis.name: {"field": axis.field, "kind": "trained" if axis.trained else "model error",
                          "unit": axis.unit, "fixed": dict(axis.fixed), "substeps": axis.substeps,
                          "train_range": None if np.isnan(axis.train_low) else [axis.train_low, axis.train_high],
                          "points": [{"value": v, **next(results)} for v in axis.values]}
              for axis in axes}
    out: dict[str, Any] = {
        "policy": str(policy.path), "task": policy.task, "action_mode": policy.action_mode, "task_options": options,
        "episodes_per_point": episodes, "seed": seed, "controllers": {k: m for k, (_, m, _) in controllers.items()},
        "axes": curves, "skipped_axes": skipped,
        "combined": [{"factor": f, **next(results)} for f in factors],
        "heldout": next(results),
    }

    def feasible_point(dr: DomainRandomization, label: str) -> dict[str, Any]:
        spec = {"dr": dr, "episodes": feasible_episodes or episodes, **common}
        return _points(policy, [(label, spec)], on_point, ray_address)[0]

    if "oracle" in controllers and factors:
        out.update(_feasible(train, axes, curves, feasible_point))
    else:
        why = (f"no oracle for the {task_cls.robot}: the transfer ratio needs one" if "oracle" not in controllers
               else "only model-error axes: no trained range to widen into a feasible preset")
        out.update({"feasible_preset": None, "feasible": None, "transfer_ratio": None, "transfer_note": why})
    return out


def _feasible(train: DomainRandomization, axes: list[Axis], curves: dict[str, Any],
              point: Callable[[DomainRandomization, str], dict[str, Any]]) -> dict[str, Any]:
    """The feasible held-out preset from the oracle's curves, the policy's transfer ratio on it."""
    oracle_ok = {name: [p["oracle"]["success_rate"] >= FEASIBLE_SUCCESS for p in c["points"]]
                 for name, c in curves.items()}
    dr, ranges = feasible_preset(train, axes, oracle_ok)
    result = point(dr, "feasible held-out preset")
    oracle = result["oracle"]["success_rate"]
    ratio = result["policy"]["success_rate"] / oracle if oracle > 0 else None
    return {"feasible_preset": ranges, "feasible": result, "feasible_episodes": result["policy"]["episodes"],
            "transfer_ratio": ratio,
            "transfer_note": "policy success / oracle success on the feasible held-out preset (target >= 0.9)"}


def sim2sim(policy: Any, episodes: int, n_envs: int, seed: int,
            on_point: Callable[[str], None] = lambda _: None, ray_address: str | None = None,
            task_options: dict[str, Any] | None = None) -> dict[str, Any]:
    """The policy and its reference under the training randomization, same seeds, in
    each of :data:`~sim2real.sim.core.solver.SIM2SIM`'s simulator configurations;
    ``change`` is each one's success minus the task's own."""
    from sim2real.sim.core.registry import REGISTRY

    task_cls = REGISTRY.get(policy.task)
    options = {**(policy.metadata.get("task_options") or {}), **(task_options or {})}
    train = task_cls.dr_class.train()
    controllers = controllers_for(policy, task_cls, options, n_envs)
    controllers.pop("oracle", None)
    specs = [(name, {"dr": train, "episodes": episodes, "n_envs": n_envs, "seed": seed, "solver": variant,
                     "oracle": False, "task_options": task_options}) for name, variant in SIM2SIM.items()]
    rows = [{"variant": name, "simulator": variant.describe(), **result}
            for (name, variant), result in zip(SIM2SIM.items(), _points(policy, specs, on_point, ray_address),
                                               strict=True)]
    for row in rows:
        for who in controllers:
            row[who]["change"] = row[who]["success_rate"] - rows[0][who]["success_rate"]
    return {"policy": str(policy.path), "task": policy.task, "action_mode": policy.action_mode,
            "episodes_per_point": episodes, "seed": seed, "dr": "train", "sim2sim": rows}


def point_count(train: DomainRandomization, axis_names: list[str] | None, has_oracle: bool) -> int:
    """How many evaluation points :func:`study` runs (for a progress bar)."""
    axes, _ = axes_for(train, axis_names)
    trained = any(a.trained for a in axes)
    return sum(len(a.values) for a in axes) + len(COMBINED) * trained + 1 + int(has_oracle and trained)
