"""Checks and sizing for the MuJoCo Warp backend, done once before any world steps.

* which model features MuJoCo Warp refuses (a :class:`ConfigError` naming the feature);
* contact and constraint capacities (``nconmax``, ``njmax``) from the model and a probe;
* which model fields randomization or a task's reset change per environment: MuJoCo
  Warp keeps those with a leading ``nworld`` dimension (``put_model(batch_sizes=...)``),
  fields it cannot batch make the backend refuse the configuration.
"""

from __future__ import annotations

import copy
import dataclasses
import math
from collections.abc import Callable, Set
from typing import Any

import mujoco
import numpy as np

from sim2real.sim.core.errors import ConfigError

PROBE_ENVS = 8
"""Environments the capacity probe resets (fewer when the batch is smaller)."""
PROBE_SECONDS = 1.0
"""Simulated time each probe environment runs with random controls."""
CAPACITY_MARGIN = 2.0
"""Factor on the most contacts and constraint rows the probe saw."""

OPT_BATCHABLE = frozenset({"opt.gravity", "opt.wind", "opt.magnetic", "opt.density", "opt.viscosity", "opt.timestep"})
"""Option fields MuJoCo Warp reads per world (its ``Option`` arrays with a ``*`` dimension
that ``put_model`` does not convert)."""

Probe = Callable[[mujoco.MjModel, mujoco.MjData, int, np.random.Generator], None]


def put_model_checked(mjw: Any, model: mujoco.MjModel, batch_sizes: dict[str, int]) -> Any:
    """``mjw.put_model`` with its refusals turned into one-line configuration errors."""
    try:
        return mjw.put_model(model, batch_sizes=batch_sizes)
    except (NotImplementedError, ValueError) as exc:
        raise ConfigError(
            "backend", f"MuJoCo Warp does not support this model ({exc}); use --backend mujoco"
        ) from exc


def unsupported_solver(model: mujoco.MjModel) -> str | None:
    """Model options MuJoCo Warp accepts but that this project does not run on it, and why."""
    if model.opt.solver == mujoco.mjtSolver.mjSOL_PGS:
        return "the PGS solver"  # put_model refuses it too; named here for a clearer message
    if model.opt.noslip_iterations > 0:
        return "the noslip solver (opt.noslip_iterations > 0)"
    return None


@dataclasses.dataclass(frozen=True)
class ProbeResult:
    """What random resets and random controls on CPU MuJoCo showed about a task."""

    max_ncon: int
    """Most contacts in one environment at one step."""
    max_nefc: int
    """Most constraint rows in one environment at one step."""
    varied_fields: frozenset[str]
    """Model fields that randomization or the task's reset changed from the nominal model."""


def probe(nominal: mujoco.MjModel, reset: Probe | None, num_envs: int, seed: int = 0) -> ProbeResult:
    """Reset up to :data:`PROBE_ENVS` environments as the engine would and run each for
    :data:`PROBE_SECONDS` with uniformly random controls (wilder than a policy: more
    falls and collisions), recording the contact and constraint counts and which
    model fields the resets changed."""
    rng = np.random.default_rng(seed)
    fields = model_array_fields(nominal)
    varied: set[str] = set()
    max_ncon = max_nefc = 0
    nstep = max(1, int(round(PROBE_SECONDS / nominal.opt.timestep)))
    lo, hi = nominal.actuator_ctrlrange.T
    limited = nominal.actuator_ctrllimited.astype(bool)
    for k in range(PROBE_ENVS):
        model = copy.copy(nominal)
        data = mujoco.MjData(model)
        if reset is not None:
            reset(model, data, k % num_envs, rng)
        else:
            mujoco.mj_forward(model, data)
        varied |= varied_fields(model, nominal, fields)
        for _ in range(nstep):
            data.ctrl[:] = np.where(limited, rng.uniform(lo, hi), rng.normal(size=model.nu))
            mujoco.mj_step(model, data)
            max_ncon, max_nefc = max(max_ncon, data.ncon), max(max_nefc, data.nefc)
    return ProbeResult(max_ncon, max_nefc, frozenset(varied))


def capacities(mjw_io: Any, nominal: mujoco.MjModel, result: ProbeResult) -> tuple[int, int]:
    """``(nconmax, njmax)`` per world: the larger of MuJoCo Warp's own defaults for the
    model and :data:`CAPACITY_MARGIN` times what the probe saw."""
    data = mujoco.MjData(nominal)
    mujoco.mj_forward(nominal, data)
    nconmax = max(int(mjw_io._default_nconmax(nominal, data)),
                  math.ceil(CAPACITY_MARGIN * result.max_ncon))
    njmax = max(int(mjw_io._default_njmax(nominal, data)),
                math.ceil(CAPACITY_MARGIN * result.max_nefc))
    return nconmax, njmax


def model_array_fields(model: mujoco.MjModel) -> list[str]:
    """Names of the model's array attributes and options (what randomization could write
    into); options as ``opt.<name>``."""
    arrays = [n for n in dir(model) if not n.startswith("_") and isinstance(getattr(model, n, None), np.ndarray)]
    opts = [f"opt.{n}" for n in dir(model.opt) if not n.startswith("_")
            and isinstance(getattr(model.opt, n), (int, float, np.ndarray))]
    return arrays + opts


def field_value(model: mujoco.MjModel, name: str) -> np.ndarray:
    """A field of :func:`model_array_fields` as an array."""
    if name.startswith("opt."):
        return np.asarray(getattr(model.opt, name[4:]))
    return getattr(model, name)


def varied_fields(model: mujoco.MjModel, nominal: mujoco.MjModel, fields: list[str]) -> set[str]:
    """The fields where ``model`` differs from ``nominal``."""
    return {f for f in fields if not np.array_equal(field_value(model, f), field_value(nominal, f))}


def batched_fields(varied: Set[str], batchable: Set[str], where: str) -> list[str]:
    """The varied fields, all of which MuJoCo Warp must batch; a :class:`ConfigError`
    names those it cannot."""
    fixed = sorted(varied - batchable)
    if fixed:
        raise ConfigError(
            "dr", f"the warp backend cannot vary {', '.join(fixed)} per world ({where} changes "
            "them); use --dr none or --backend mujoco"
        )
    return sorted(varied)
